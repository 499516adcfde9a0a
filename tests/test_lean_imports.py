"""A command line starts lean: ``import evolve`` and the command line's module load none of the
heavy libraries (numba, numpy, scipy, the LLM client ...) that a command may not need, and the
lazily re-exported public API still resolves, name by name. Checked in fresh subprocesses, by the
modules loaded, not by timing."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import click

import evolve
from evolve.cli.main import SUBCOMMANDS, cli

HEAVY = ("numba", "numpy", "scipy", "joblib", "httpx", "llvmlite", "yaml", "click")


def loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``statement``."""
    code = f"{statement}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_import_evolve_loads_no_heavy_library() -> None:
    modules = loaded_after("import evolve")
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY) == []
    assert sorted(m for m in modules if m.startswith("evolve.")) == [
        "evolve.model", "evolve.model.kernel_cache", "evolve.model.lazy"]


def test_the_command_line_loads_only_what_its_own_commands_need() -> None:
    modules = loaded_after("import evolve.cli.main")
    assert sorted(m for m in modules if m.split(".")[0] in {"httpx", "charset_normalizer"}) == []
    lazy = set(SUBCOMMANDS) - {"evolve.cli.htn"}  # its run options are evolve run's
    assert sorted(lazy & modules) == []
    assert not any(m.startswith(("evolve.execute", "evolve.serve", "evolve.mcp", "evolve.report"))
                   for m in modules)


def test_evolve_run_reaches_its_first_hddl_plan_without_the_engine() -> None:
    """``evolve run DOMAIN.hddl PROBLEM.hddl`` writes the lifted search's plan before it imports
    the engine (:mod:`evolve.cli.run`): nothing that module or that search needs loads numba,
    numpy or joblib, the second of imports a grounded search's first plan waits for."""
    modules = loaded_after("import evolve.cli.main, evolve.cli.run, evolve.problems.htn.hddl_first")
    assert sorted(m for m in modules if m.split(".")[0] in HEAVY and m.split(".")[0] != "click") == []
    assert "evolve.cli.searching" not in modules


def test_every_public_name_resolves_and_is_listed() -> None:
    for name in evolve.__all__:
        assert getattr(evolve, name) is not None, name
    assert set(evolve.__all__) <= set(dir(evolve))
    assert evolve.HTNPlanner.__name__ == "Planner"
    try:
        evolve.not_a_name  # type: ignore[attr-defined]  # noqa: B018
    except AttributeError as exc:
        assert "not_a_name" in str(exc)
    else:
        raise AssertionError("an unknown name resolved")


def test_the_llm_package_loads_its_names_on_first_use() -> None:
    import evolve.llm as llm

    modules = loaded_after("import evolve.llm.modes")
    assert "httpx" not in modules and "evolve.llm.operator" not in modules
    for name in llm.__all__:
        assert getattr(llm, name) is not None, name


def test_the_lazy_table_names_each_modules_commands() -> None:
    for module, names in SUBCOMMANDS.items():
        assert tuple(c.name for c in importlib.import_module(module).COMMANDS) == names, module
    context = click.Context(cli)
    listed = cli.list_commands(context)
    assert {"run", "validate", "schedule", "generate", "fitness"} <= set(listed)
    assert all(cli.get_command(context, name) is not None for name in listed)
