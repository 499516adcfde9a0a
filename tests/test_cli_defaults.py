"""Every default of the command line is a value of ``evolve.defaults``: one source of truth, so
the help, the API and the docs cannot drift apart.

Options whose default is "none given" (``None``, an empty ``multiple``, an off flag) have no
value to compare. Each other option is listed in ``EXPECTED`` with the constant it must equal;
an option added later and not yet listed must at least equal some constant of
``evolve.defaults`` (list it here to pin which one).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator

import click
import pytest

from evolve import defaults
from evolve.cli.main import cli
from evolve.cli.options import LlmSettings
from evolve.llm.factory import make_llm_operator
from evolve.search.options import DEFAULTS

EXPECTED: dict[tuple[str, str], str] = {
    **{("run", name): constant for name, constant in {
        "generations": "GENERATIONS", "population": "POPULATION", "keep": "KEEP", "seed": "SEED",
        "backend": "BACKEND", "operator": "OPERATOR", "htn_fallback": "HTN_FALLBACK",
        "llm_ratio": "LLM_SHARE", "llm_timeout": "LLM_TIMEOUT", "llm_concurrency": "LLM_CONCURRENCY",
        "llm_response_format": "LLM_RESPONSE_FORMAT", "llm_mode": "LLM_MODE",
        "llm_menu_size": "LLM_MENU_SIZE", "llm_max_tokens": "LLM_MAX_TOKENS",
        "llm_token_param": "LLM_TOKEN_PARAM"}.items()},
    **{("execute", name): constant for name, constant in {
        "max_steps": "EXECUTE_MAX_STEPS", "max_replans": "EXECUTE_MAX_REPLANS", "seed": "SEED",
        "timeout": "EXECUTE_TIMEOUT", "replanner": "EXECUTE_REPLANNER",
        "replan_generations": "REPLAN_GENERATIONS", "dispatcher_name": "EXECUTE_DISPATCHER",
        "journal_sync": "EXECUTE_JOURNAL_SYNC", "wait": "EXECUTE_WAIT"}.items()},
    ("generate", "tools"): "GENERATE_TOOLS",
    ("generate", "seed"): "SEED",
    ("bench psplib", "jobs"): "BENCH_JOBS",
    ("validate-domain", "max_states"): "HTN_VALIDATE_STATES",
    ("validate-domain", "seed"): "SEED",
}


def options(group: click.Group, prefix: str = "") -> Iterator[tuple[str, click.Option]]:
    """Every option of every command under ``group``, with the command's path (``bench psplib``)."""
    context = click.Context(group)  # the command line's commands load lazily: ask the group
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None, name
        path = f"{prefix}{name}"
        if isinstance(command, click.Group):
            yield from options(command, f"{path} ")
            continue
        for param in command.params:
            if isinstance(param, click.Option):
                yield path, param


def has_a_default(option: click.Option) -> bool:
    default = option.default
    unset = isinstance(default, enum.Enum) and default.name == "UNSET"  # click >= 8.2's "no default"
    if default is None or unset or (option.multiple and not default):
        return False
    return not (option.is_flag and not option.secondary_opts and default is False)


CONSTANTS = {name: value for name, value in vars(defaults).items() if name.isupper()}


@pytest.mark.parametrize(("command", "name", "option"), [
    (command, option.name, option) for command, option in options(cli) if has_a_default(option)],
    ids=lambda value: value if isinstance(value, str) else "")
def test_a_cli_default_is_a_value_of_evolve_defaults(command: str, name: str, option: click.Option) -> None:
    constant = EXPECTED.get((command, name))
    if constant is None:
        assert option.default in CONSTANTS.values(), (
            f"evolve {command} --{name.replace('_', '-')}: default {option.default!r} is not in "
            "evolve/defaults.py")
    else:
        assert option.default == CONSTANTS[constant], f"evolve {command} {name}: {constant}"


def test_every_listed_option_exists() -> None:
    """A renamed option must not leave its entry checking nothing."""
    present = {(command, option.name) for command, option in options(cli)}
    assert set(EXPECTED) <= present, set(EXPECTED) - present


def test_the_record_defaults_are_the_clis_and_the_apis() -> None:
    """A command that offers only some ``--llm-*`` options gets, for the rest, the defaults the
    full option set and ``make_llm_operator`` use."""
    run = cli.commands["run"]
    by_name = {p.name: p for p in run.params}
    record = LlmSettings()
    for field, value in vars(record).items():
        assert by_name[f"llm_{field}"].default == value, field
    api = make_llm_operator.__kwdefaults__
    for field in ("max_calls", "timeout", "concurrency", "response_format", "prompt_dir", "cache_dir",
                  "mode", "menu_size", "max_tokens", "token_param"):
        assert api[field] == getattr(record, field), field
    for field in ("generations", "population", "keep", "seed", "backend"):
        assert by_name[field].default == getattr(DEFAULTS, field), field
