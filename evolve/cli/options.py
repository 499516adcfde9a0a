"""Option groups shared by commands: each option is declared once, with its default from
``evolve.defaults``, and a command receives the group as one frozen record.

``@search_options`` adds the options of a search (``--generations`` ... ``--patience``) and
passes ``options: SearchOptions``; ``@llm_options(...)`` adds ``--llm-*`` options and passes
``llm: LlmSettings``. A group builds its record when the command runs, so put ``@friendly``
above it: a value the record refuses (``--keep`` not below ``--population``) is then one line
on stderr like any other bad input.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from evolve import defaults
from evolve.cli.common import FiniteFloatRange
from evolve.llm.modes import MODES, RESPONSE_FORMATS, TOKEN_PARAMS, Mode, ResponseFormat, TokenParam
from evolve.model.errors import UsageError
from evolve.run.backends import BACKENDS
from evolve.search.options import DEFAULTS, SearchOptions

if TYPE_CHECKING:
    from evolve.llm.operator import LLMOperator

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def option_group(param: str, options: Mapping[str, Decorator],
                 build: Callable[[dict[str, Any]], Any]) -> Decorator:
    """A decorator that adds ``options`` (click's parameter name -> its ``click.option``) to a
    command and hands the command one argument ``param``, built by ``build`` from their values."""
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            kwargs[param] = build({name: kwargs.pop(name) for name in options})
            return fn(*args, **kwargs)
        command: Callable[..., Any] = wrapper
        for option in reversed(list(options.values())):
            command = option(command)
        return command
    return decorate


# -- the search ---------------------------------------------------------------------------------

def parse_targets(items: tuple[str, ...]) -> dict[str, float]:
    """``--target NAME=VALUE`` items as a mapping; a bad item is a click error naming it."""
    targets: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            targets[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if sep and not math.isfinite(targets[name.strip()]):
            raise click.BadParameter(f"the target must be a finite number, got {item!r}",
                                     param_hint="--target")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--target")
    return targets


SEARCH_OPTIONS: dict[str, Decorator] = {
    "generations": click.option(
        "--generations", type=click.IntRange(min=0), default=DEFAULTS.generations, show_default=True,
        help="Generations after the first population."),
    "population": click.option(
        "--population", type=click.IntRange(min=2), default=DEFAULTS.population, show_default=True,
        help="Candidates per generation."),
    "keep": click.option(
        "--keep", type=click.IntRange(min=1), default=DEFAULTS.keep, show_default=True,
        help="How many of the best survive each generation."),
    "seed": click.option("--seed", type=click.IntRange(min=0), default=DEFAULTS.seed, show_default=True),
    "jobs": click.option("--jobs", type=click.IntRange(min=1), default=None,
                         help="Worker processes (default: every core)."),
    "backend": click.option(
        "--backend", type=click.Choice(BACKENDS), default=DEFAULTS.backend, show_default=True,
        help="joblib backend for parallel evaluation."),
    "scheduler_address": click.option(
        "--scheduler-address", default=None,
        help="Address of a running Dask scheduler or Ray cluster (default: a local one)."),
    "eval_timeout": click.option(
        "--eval-timeout", type=FiniteFloatRange(min=0, min_open=True), default=None,
        help="Seconds one evaluation may take; past it the candidate is scored as failed."),
    "isolate": click.option(
        "--isolate/--no-isolate", default=None,
        help="Run every evaluation in a worker process, so a crashing objective costs only its "
             "candidate (default: on when a plugin objective or --eval-timeout is used)."),
    "max_evaluations": click.option(
        "--max-evaluations", type=click.IntRange(min=1), default=None,
        help="Stop after this many evaluations (checked after each generation)."),
    "max_seconds": click.option(
        "--max-seconds", type=FiniteFloatRange(min=0, min_open=True), default=None,
        help="Stop after this much wall time (checked after each generation)."),
    "targets": click.option(
        "--target", "targets", multiple=True, metavar="NAME=VALUE",
        help="Stop once the best plan is feasible and reaches VALUE on objective NAME."),
    "patience": click.option(
        "--patience", type=click.IntRange(min=1), default=None,
        help="Stop after this many generations without improvement."),
}


def _search_options(values: dict[str, Any]) -> SearchOptions:
    targets = parse_targets(values.pop("targets"))
    if values["keep"] >= values["population"]:  # SearchOptions would refuse it without the names
        raise click.BadParameter(
            f"{values['keep']} survivors of a population of {values['population']}: --keep must be "
            "below --population", param_hint="--keep")
    return SearchOptions(**values, target=targets)


search_options = option_group("options", SEARCH_OPTIONS, _search_options)
"""Adds the search's options to a command, which receives ``options: SearchOptions``."""


# -- the LLM --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LlmSettings:
    """The ``--llm-*`` options: where the chat model is and how it is asked. A command that
    offers only some of them gets the defaults for the rest."""

    base_url: str | None = None
    model: str | None = None
    ratio: float = defaults.LLM_SHARE
    max_calls: int | None = None
    timeout: float = defaults.LLM_TIMEOUT
    concurrency: int = defaults.LLM_CONCURRENCY
    response_format: ResponseFormat = defaults.LLM_RESPONSE_FORMAT
    prompt_dir: str | None = None
    cache_dir: str | None = None
    mode: Mode = defaults.LLM_MODE
    menu_size: int = defaults.LLM_MENU_SIZE
    max_tokens: int = defaults.LLM_MAX_TOKENS
    token_param: TokenParam = defaults.LLM_TOKEN_PARAM
    extra_body: Mapping[str, Any] | None = None
    """Request fields sent with every call (``--llm-extra-body``), e.g. ``enable_thinking``."""

    def operator(self, wanted_by: str) -> LLMOperator:
        """The LLM operator of these settings (close it when done); ``wanted_by`` names the
        option that asked for it in the error when the endpoint is missing."""
        if not self.base_url or not self.model:
            raise click.UsageError(f"{wanted_by} needs --llm-base-url and --llm-model")
        from evolve.llm.factory import make_llm_operator  # the HTTP client: only when asked

        return make_llm_operator(
            self.base_url, self.model, max_calls=self.max_calls, timeout=self.timeout,
            concurrency=self.concurrency, response_format=self.response_format,
            prompt_dir=self.prompt_dir, cache_dir=self.cache_dir, mode=self.mode,
            menu_size=self.menu_size, max_tokens=self.max_tokens, token_param=self.token_param,
            extra_body=self.extra_body)


def parse_extra_body(ctx: click.Context, param: click.Parameter, value: str | None) -> dict[str, Any] | None:
    """``--llm-extra-body``'s JSON object (``None`` when not given); anything else is a usage
    error naming the option."""
    if value is None or not value.strip():
        return None
    try:
        doc = json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(doc, dict):
        raise click.BadParameter(f"expected a JSON object, got {type(doc).__name__}")
    from evolve.llm.client import check_extra_body

    try:
        return check_extra_body(doc)
    except UsageError as exc:
        raise click.BadParameter(str(exc)) from None


LLM_OPTIONS: dict[str, Decorator] = {
    "llm_base_url": click.option(
        "--llm-base-url", default=None,
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1."),
    "llm_model": click.option("--llm-model", default=None, help="Model name the endpoint serves."),
    "llm_ratio": click.option(
        "--llm-ratio", type=FiniteFloatRange(0, 1), default=defaults.LLM_SHARE, show_default=True,
        help="Share of each generation's children made by the LLM (the rest: random operators)."),
    "llm_max_calls": click.option(
        "--llm-max-calls", type=click.IntRange(min=0), default=None,
        help="At most this many LLM proposals in the run."),
    "llm_timeout": click.option(
        "--llm-timeout", type=FiniteFloatRange(min=0, min_open=True), default=defaults.LLM_TIMEOUT,
        show_default=True, help="Seconds one whole LLM call may take, retries included."),
    "llm_concurrency": click.option(
        "--llm-concurrency", type=click.IntRange(min=1), default=defaults.LLM_CONCURRENCY,
        show_default=True, help="LLM calls in flight at once."),
    "llm_response_format": click.option(
        "--llm-response-format", type=click.Choice(RESPONSE_FORMATS),
        default=defaults.LLM_RESPONSE_FORMAT, show_default=True, help="How JSON is asked for."),
    "llm_prompt_dir": click.option(
        "--llm-prompt-dir", type=click.Path(file_okay=False, exists=True), default=None,
        help="Folder with system.txt and/or user.txt replacing the shipped prompt templates."),
    "llm_cache_dir": click.option(
        "--llm-cache-dir", type=click.Path(file_okay=False), default=None,
        help="Where LLM replies are cached (default ~/.cache/evolve/llm)."),
    "llm_mode": click.option(
        "--llm-mode", type=click.Choice(MODES), default=defaults.LLM_MODE, show_default=True,
        help="patch: the model writes plan patches; menu: it picks one of the engine's pre-scored "
             "edits; auto: menu for models known (by name) or measured to be small."),
    "llm_menu_size": click.option(
        "--llm-menu-size", type=click.IntRange(min=2), default=defaults.LLM_MENU_SIZE,
        show_default=True, help="Edits on each menu (menu mode)."),
    "llm_max_tokens": click.option(
        "--llm-max-tokens", type=click.IntRange(min=1), default=defaults.LLM_MAX_TOKENS,
        show_default=True,
        help=f"Completion limit of a call (menu replies get at most {defaults.LLM_MENU_MAX_TOKENS})."),
    "llm_token_param": click.option(
        "--llm-token-param", type=click.Choice(TOKEN_PARAMS), default=defaults.LLM_TOKEN_PARAM,
        show_default=True,
        help="Request field of the completion limit (some models require max_completion_tokens)."),
    "llm_extra_body": click.option(
        "--llm-extra-body", envvar=defaults.LLM_EXTRA_BODY_ENV, callback=parse_extra_body, default=None,
        metavar="JSON",
        help="Request fields sent with every call, as a JSON object, for switches the server accepts: "
             "'{\"chat_template_kwargs\": {\"enable_thinking\": false}}', '{\"reasoning_effort\": \"low\"}' "
             f"(default: ${defaults.LLM_EXTRA_BODY_ENV}, else none)."),
}


def llm_options(*names: str) -> Decorator:
    """Adds the ``--llm-*`` options (all, or those named: ``llm_options("base_url", "model")``) to
    a command, which receives ``llm: LlmSettings``."""
    chosen = {f"llm_{name}": LLM_OPTIONS[f"llm_{name}"] for name in names} if names else LLM_OPTIONS
    return option_group("llm", chosen, lambda values: LlmSettings(
        **{name.removeprefix("llm_"): value for name, value in values.items()}))


__all__ = ["LlmSettings", "SearchOptions", "llm_options", "option_group", "parse_targets",
           "search_options"]
