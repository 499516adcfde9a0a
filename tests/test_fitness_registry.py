"""The fitness contract and discovery: the decorator, the checks on a plugin's answer, the registry.

Entry points are tested through the real ``importlib.metadata`` machinery: each
test writes a plugin module and a ``*.dist-info`` folder (what ``pip install``
leaves behind) into a temporary directory and puts it on ``sys.path``. Nothing
is installed into the environment and nothing is monkeypatched in the registry.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from evolve.fitness.evaluation import evaluate_plan
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem, Tool
from fitness import (
    BUILTINS,
    Context,
    Fitness,
    FitnessError,
    as_fitness,
    available,
    cost,
    fitness,
    resolve,
    resolve_all,
    survey,
)

PROBLEM = Problem(tools={"fetch": Tool("fetch", 2.0, outputs=("x",), cost=0.5)}, criteria=("x",))
PLAN = Plan(tasks=(Task(id="t1", tool="fetch"),))

PLUGIN_SOURCE = '''
from fitness import fitness

@fitness(direction="max", low=0)
def tasks_done(problem, plan, context):
    """Tasks in the plan."""
    return float(len(plan.tasks))

@fitness("makespan", direction="min")
def fake_makespan(problem, plan, context):
    """Takes a built-in's name."""
    return 0.0

@fitness("renamed_objective", direction="min")
def keyed_differently(problem, plan, context):
    """Its entry-point key is not its name."""
    return 1.0

def unmarked(problem, plan, context):
    return 0.0
'''


def fake_install(root: Path, dist: str, entry_points: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                 modules: dict[str, str] | None = None) -> None:
    """Leave what ``pip install`` would: modules and a dist-info with ``entry_points.txt``."""
    for name, source in (modules or {}).items():
        (root / f"{name}.py").write_text(textwrap.dedent(source))
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[evolve.fitness]\n{lines}")
    monkeypatch.syspath_prepend(str(root))


# --- the decorator and the checks on a value ------------------------------------------------


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"direction": "up"}, "direction must be"),
    ({"direction": "min", "low": 2, "high": 1}, "empty range"),
    ({"direction": "min", "high": float("inf")}, "finite"),
    ({"direction": "min", "name": "a:b"}, "must be a word"),
])
def test_the_decorator_rejects_a_contract_that_cannot_hold(kwargs: dict[str, object], message: str) -> None:
    name = kwargs.pop("name", None)
    with pytest.raises(ValueError, match=message):
        fitness(name, **kwargs)  # type: ignore[arg-type]


def test_the_decorator_returns_the_function_itself_with_its_spec() -> None:
    def dollars(problem: Problem, plan: Plan, context: Context) -> float:
        """Money.

        More text that is not the description."""
        return 1.0

    marked = fitness(direction="min", low=0)(dollars)
    assert marked is dollars
    spec = as_fitness(marked).spec
    assert (spec.name, spec.direction, spec.low, spec.high, spec.description) == (
        "dollars", "min", 0, None, "Money.")


@pytest.mark.parametrize(("returned", "message"), [
    ("3", "returned str, not a number"),
    (True, "returned bool, not a number"),
    (None, "returned NoneType, not a number"),
    (float("nan"), "not a finite number"),
    (-1.0, "outside its declared range"),
])
def test_a_bad_answer_is_an_error_that_names_the_plugin_and_where_it_came_from(
        returned: object, message: str) -> None:
    def answer(problem: Problem, plan: Plan, context: Context) -> float:
        return returned  # type: ignore[return-value]

    wrapped = Fitness(fn=answer, spec=fitness("answer", direction="min", low=0)(answer).__fitness__,  # type: ignore[attr-defined]
                      source="team.objectives:answer")
    with pytest.raises(FitnessError, match=message) as caught:
        wrapped(PROBLEM, PLAN, Context(PROBLEM, PLAN))
    assert "'answer' (team.objectives:answer)" in str(caught.value)


def test_numpy_numbers_are_numbers() -> None:
    @fitness(direction="min", low=0)
    def counted(problem: Problem, plan: Plan, context: Context) -> float:
        return np.int64(len(plan.tasks))  # type: ignore[return-value]

    assert as_fitness(counted)(PROBLEM, PLAN, Context(PROBLEM, PLAN)) == 1.0


def test_a_plugin_that_raises_fails_only_its_candidate_with_its_name_and_line() -> None:
    @fitness(direction="min")
    def divides(problem: Problem, plan: Plan, context: Context) -> float:
        return 1 / 0

    evaluation = evaluate_plan(PROBLEM, PLAN, [as_fitness(cost), as_fitness(divides, source="mine:divides")])
    assert evaluation.failed is not None
    assert "'divides' (mine:divides) raised ZeroDivisionError" in evaluation.failed
    assert f"{__file__}:" in evaluation.failed


# --- discovery ------------------------------------------------------------------------------


def test_builtins_are_found_through_the_same_loader_as_plugins() -> None:
    found = survey().found
    assert [found[fn.__name__].fn for fn in BUILTINS] == list(BUILTINS)
    assert all(found[fn.__name__].source == "builtin" for fn in BUILTINS)


def test_module_function_specs_resolve_and_fail_clearly(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "team_objectives.py").write_text(PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    done = resolve("team_objectives:tasks_done")
    assert (done.name, done.direction, done.source) == ("tasks_done", "max", "team_objectives:tasks_done")
    assert done(PROBLEM, PLAN, Context(PROBLEM, PLAN)) == 1.0
    with pytest.raises(FitnessError, match=r"'team_objectives:unmarked'.*not marked with @fitness"):
        resolve("team_objectives:unmarked")
    with pytest.raises(FitnessError, match=r"'team_objectives:missing'.*no function 'missing'"):
        resolve("team_objectives:missing")
    with pytest.raises(FitnessError, match=r"'no_such_team\.objectives:f'.*cannot import 'no_such_team"):
        resolve("no_such_team.objectives:f")


def test_a_module_in_the_current_directory_resolves_like_python_m_would(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cwd_objectives.py").write_text(PLUGIN_SOURCE)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    monkeypatch.chdir(tmp_path)
    assert resolve("cwd_objectives:tasks_done").name == "tasks_done"


def test_installed_plugins_are_discovered_by_entry_point(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    fake_install(tmp_path, "team-objectives", {
        "tasks_done": "ep_objectives:tasks_done",
        "keyed": "ep_objectives:keyed_differently",
    }, monkeypatch, {"ep_objectives": PLUGIN_SOURCE})
    found = available()
    assert list(found)[: len(BUILTINS)] == [fn.__name__ for fn in BUILTINS]
    assert found["tasks_done"].source == "entry point ep_objectives:tasks_done (team-objectives)"
    assert resolve("tasks_done") == found["tasks_done"]
    assert resolve("keyed").name == "renamed_objective"
    assert resolve("renamed_objective").name == "renamed_objective"
    names = [f.name for f in resolve_all(["validity", "tasks_done"])]
    assert names == ["validity", "tasks_done"]


def test_a_broken_or_clashing_plugin_is_named_and_does_not_hide_the_others(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_install(tmp_path, "broken-objectives", {
        "gone": "no_such_module_anywhere:fn",
        "plain": "bad_objectives:unmarked",
        "makespan": "bad_objectives:fake_makespan",
        "tasks_done": "bad_objectives:tasks_done",
    }, monkeypatch, {"bad_objectives": PLUGIN_SOURCE})
    result = survey()
    assert result.found["makespan"].source == "builtin"
    assert result.found["tasks_done"].name == "tasks_done"
    problems = "\n".join(result.problems)
    assert "'gone' (no_such_module_anywhere:fn, from broken-objectives) failed to load" in problems
    assert "ModuleNotFoundError" in problems
    assert "'plain' (bad_objectives:unmarked, from broken-objectives)" in problems
    assert "not marked with @fitness" in problems
    assert "named 'makespan', which builtin already uses; it is ignored" in problems
    with pytest.raises(FitnessError, match="'gone'"):
        available()
    assert resolve("makespan").source == "builtin"
    assert resolve("tasks_done").name == "tasks_done"
    with pytest.raises(FitnessError, match="'gone'"):
        resolve("gone")
    with pytest.raises(FitnessError, match=r"unknown fitness 'nothing'.*could not be loaded.*'gone'"):
        resolve("nothing")


def test_an_objective_selected_twice_is_an_error() -> None:
    with pytest.raises(FitnessError, match="'cost' is selected more than once"):
        resolve_all(["cost", "validity", "cost"])


@pytest.mark.parametrize("first", ["evolve.fitness.base", "evolve.fitness.testing"])
def test_the_fitness_package_can_be_imported_first(first: str) -> None:
    """A worker unpickling a plugin, or a plugin's own module, imports ``fitness`` before ``evolve``."""
    done = subprocess.run([sys.executable, "-c", f"import {first}"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
