"""The conformance kit itself: every built-in passes it, and each kind of broken plugin is caught.

The broken plugins live at module level here, as a plugin author's would, so
the worker step can import them by reference.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.fitness.testing import (
    ConformanceError,
    check_fitness,
    invalid_plans,
    mutations,
    problems,
    referenced_ids,
    rename_ids,
    renamings,
    valid_plans,
)
from evolve.model.plan import Plan, Task, parse_ref
from evolve.model.problem import Problem
from evolve.model.validate import validate
from fitness import BUILTINS, Context, Fitness, as_fitness, fitness

EXAMPLES = 40  # per check: enough to catch each broken plugin below, in about a second


@pytest.mark.parametrize("fn", BUILTINS, ids=lambda fn: fn.__name__)
def test_every_builtin_keeps_the_contract(fn: Callable[..., float]) -> None:
    checked = check_fitness(fn, max_examples=EXAMPLES)
    assert checked.name == fn.__name__


# --- broken plugins -------------------------------------------------------------------------

COUNTER = itertools.count()
SETTINGS: dict[str, float] = {"scale": 1.0}


@fitness(direction="min", low=0)
def noisy(problem: Problem, plan: Plan, context: Context) -> float:
    """Nondeterministic: a little jitter so ties break differently every time."""
    return len(plan.tasks) + random.random()


@fitness(direction="min", low=0)
def counting(problem: Problem, plan: Plan, context: Context) -> float:
    """Nondeterministic through hidden state: a call counter."""
    return float(next(COUNTER) % 2)


@fitness(direction="min", low=0)
def grabby(problem: Problem, plan: Plan, context: Context) -> float:
    """Mutates the plan: records a note in the first task's inputs."""
    if plan.tasks:
        plan.tasks[0].inputs["seen"] = True  # type: ignore[index]
    return float(len(plan.tasks))


@fitness(direction="min", low=0)
def memoising(problem: Problem, plan: Plan, context: Context) -> float:
    """Mutates the problem: caches on the resource table it was handed."""
    problem.resources["calls"] = problem.resources.get("calls", 0.0) + 1  # type: ignore[index]
    return 0.0


@fitness(direction="min", low=0)
def draining(problem: Problem, plan: Plan, context: Context) -> float:
    """Mutates the shared context: empties the validator's errors once it has counted them."""
    count = len(context.errors)
    context.errors.clear()
    return float(count)


@fitness(direction="max", low=0)
def first_named(problem: Problem, plan: Plan, context: Context) -> float:
    """Depends on ids: counts tasks whose id looks like the generator's ``t1``, ``t2``..."""
    return float(sum(1 for t in plan.tasks if t.id.startswith("t")))


@fitness(direction="max", low=0, high=1)
def overflowing(problem: Problem, plan: Plan, context: Context) -> float:
    """Leaves its declared range [0, 1] once a plan has two tasks."""
    return float(len(plan.tasks))


@fitness(direction="min")
def exploding(problem: Problem, plan: Plan, context: Context) -> float:
    """Not finite for plans with an error."""
    return float("inf") if context.errors else 0.0


@fitness(direction="min", low=0)
def configured(problem: Problem, plan: Plan, context: Context) -> float:
    """Reads a module global that its caller changes at run time, which workers never see."""
    return SETTINGS["scale"] * len(plan.tasks)


def make_closure() -> Callable[..., float]:
    @fitness(direction="min", low=0)
    def inner(problem: Problem, plan: Plan, context: Context) -> float:
        """A closure: fine in this process, unusable by any worker."""
        return 0.0
    return inner


def unmarked(problem: Problem, plan: Plan, context: Context) -> float:
    return 0.0


@pytest.mark.parametrize(("fn", "complaint"), [
    (noisy, "not deterministic"),
    (counting, "not deterministic"),
    (grabby, "modified the plan"),
    (memoising, "modified the problem"),
    (draining, "modified the shared context"),
    (first_named, "depends on task ids"),
    (overflowing, "outside its declared range"),
    (exploding, "not a finite number"),
    (make_closure(), "does not pickle"),
    (unmarked, "not marked with @fitness"),
], ids=lambda value: value.__name__ if callable(value) else None)
def test_broken_plugins_are_caught_with_the_reason(fn: Callable[..., float], complaint: str) -> None:
    with pytest.raises(ConformanceError, match=complaint) as caught:
        check_fitness(fn, max_examples=EXAMPLES, worker=False, shrink=False)
    if callable(fn) and hasattr(fn, "__fitness__"):
        assert fn.__name__ in str(caught.value)


def test_state_that_workers_do_not_share_is_caught_in_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    check_fitness(configured, max_examples=10)  # as defined, it is fine
    monkeypatch.setitem(SETTINGS, "scale", 2.0)
    with pytest.raises(ConformanceError, match="in a worker process"):
        check_fitness(configured, max_examples=10, shrink=False)


def test_the_worker_may_be_a_plain_process_pool() -> None:
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing import get_context

    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        checked = check_fitness(BUILTINS[0], max_examples=5, executor=pool)
    assert isinstance(checked, Fitness)


# --- the strategies do what they say --------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_valid_plans_validate_and_invalid_plans_do_not(data: st.DataObject) -> None:
    problem = data.draw(problems())
    assert validate(problem, data.draw(valid_plans(problem))) == []
    assert validate(problem, data.draw(invalid_plans(problem))) != []


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_renaming_is_one_to_one_and_reaches_every_reference(data: st.DataObject) -> None:
    problem = data.draw(problems())
    plan = data.draw(valid_plans(problem).flatmap(lambda p: mutations(problem, p)))
    mapping = data.draw(renamings(problem, plan))
    renamed = rename_ids(plan, mapping)
    assert len(set(mapping.values())) == len(mapping)
    assert set(referenced_ids(renamed)).isdisjoint(set(mapping) - set(mapping.values()))
    back = rename_ids(renamed, {new: old for old, new in mapping.items()})
    assert back == plan
    assert len(validate(problem, renamed)) == len(validate(problem, plan))


def test_renaming_rewrites_inputs_conditions_deps_and_priority() -> None:
    plan = Plan(tasks=(
        Task(id="a", tool="x", outputs=("f",)),
        Task(id="b", tool="y", deps=("a",), inputs={"f": "$a.f", "g": "$g", "h": "literal $a.f"},
             when="$a.f.amount > 3 and $g"),
    ), priority=("b", "a"))
    renamed = rename_ids(plan, {"a": "first", "b": "second"})
    second = renamed.tasks[1]
    assert renamed.ids() == ["first", "second"]
    assert second.deps == ("first",)
    assert dict(second.inputs) == {"f": "$first.f", "g": "$g", "h": "literal $a.f"}
    assert second.when == "$first.f.amount > 3 and $g"
    assert renamed.priority == ("second", "first")
    ref = parse_ref(second.inputs["f"])
    assert ref is not None and ref.task == "first"


def test_check_accepts_a_wrapped_fitness_and_returns_it() -> None:
    wrapped: Any = as_fitness(BUILTINS[1])
    assert check_fitness(wrapped, max_examples=5, worker=False) is wrapped
