"""The kernel-backed scheduler against its oracle: ``schedule`` must equal ``reference_schedule``
exactly (every field, the order starts are listed in, the error) on random problems and plans,
and every path that schedules a fixed-structure problem must agree with both."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.fitness.strategies import cases
from evolve.model.plan import Plan, Task
from evolve.model.problem import Limits, Problem, Tool
from evolve.model.problem_file import problem_from_dict
from evolve.problems import default_operators
from evolve.problems.rcpsp.instance import from_arrays
from evolve.problems.rcpsp.operators import (
    ACTIVITY_LIST,
    activities,
    activity_list,
    justified,
    sample_list,
    with_list,
)
from evolve.problems.rcpsp.problem import is_integer_rcpsp, problem_from_instance
from evolve.scheduling import Schedule, reference_schedule, schedule
from evolve.scheduling.kernel import serial_sgs, warm_up

DURATIONS = (st.sampled_from((0.0, 0.1, 0.2, 0.3, 0.4, 1 / 3, 0.5, 1.0, 1.6, 2.0, 7.25))
             | st.floats(0, 50, allow_nan=False, allow_infinity=False))
AMOUNTS = st.sampled_from((0.0, 0.5, 1.0, 1.5, 2.0, 3.0))


@st.composite
def instances(draw: st.DrawFn) -> tuple[Problem, Plan]:
    """Anything a plan can be: float durations (sums that round, zeros), up to three resources
    with fractional amounts (some above capacity), ``max_parallel``, partial and repeating
    priorities naming unknown ids, unknown tools, missing and self deps, repeated ids, cycles."""
    capacities = {f"r{k}": draw(st.sampled_from((0.0, 1.0, 2.0, 2.5, 3.0)))
                  for k in range(draw(st.integers(0, 3)))}
    tools = {}
    for i in range(draw(st.integers(1, 6))):
        uses = {r: draw(AMOUNTS) for r in capacities if draw(st.booleans())}
        tools[f"k{i}"] = Tool(f"k{i}", draw(DURATIONS), uses=uses)
    n = draw(st.integers(0, 14))
    ids = [f"t{i}" for i in range(n)]
    if n and draw(st.booleans()):
        ids[draw(st.integers(0, n - 1))] = draw(st.sampled_from(ids))  # a repeated id
    names = [*tools, "ghost_tool"]
    tasks = []
    for i, tid in enumerate(ids):
        earlier = ids[:i] or ["nobody"]
        deps = draw(st.lists(st.sampled_from(earlier), max_size=3))
        if draw(st.integers(0, 9)) == 0:  # now and then a dep forward, onto itself or nowhere
            deps.append(draw(st.sampled_from([*ids, "missing"])))
        tasks.append(Task(tid, draw(st.sampled_from(names)), deps=tuple(deps)))
    everything = [*ids, "ghost"]
    priority = draw(st.none() | st.permutations(ids).map(tuple)
                    | st.lists(st.sampled_from(everything), max_size=n + 2).map(tuple))
    problem = Problem(tools=tools, resources=capacities,
                      limits=Limits(max_parallel=draw(st.none() | st.integers(1, 4))))
    return problem, Plan(tasks=tuple(draw(st.permutations(tasks))), priority=priority)


EDGY_DURATIONS = st.sampled_from((0.0, 1e-10, 5e-10, 1e-9, 1.5e-9, 2e-9, 3e-9, 0.1, 0.2, 0.3, 1 / 3,
                                  1.0, 2.5, 1e6, 1e9 + 0.1, 1e12))
"""Durations around the kernel's edge cases: below, at and just above EPS (where a window covers
no step, or covers one only after rounding), and huge ones that make later times coarse."""


@st.composite
def wide_instances(draw: st.DrawFn) -> tuple[Problem, Plan]:
    """Up to 120 tasks with few dependencies and few slots: long busy profiles, so the kernel's
    jumps over full steps matter, with durations at the edges of its tolerances."""
    capacities = {f"r{k}": draw(st.sampled_from((1.0, 2.0, 2.5))) for k in range(draw(st.integers(0, 2)))}
    tools = {f"k{i}": Tool(f"k{i}", draw(EDGY_DURATIONS),
                           uses={r: draw(st.sampled_from((0.0, 0.5, 1.0, 2.0))) for r in capacities})
             for i in range(draw(st.integers(1, 5)))}
    tasks = []
    for i in range(draw(st.integers(1, 120))):
        earlier = [f"t{j}" for j in range(i)]
        deps = draw(st.lists(st.sampled_from(earlier), max_size=2)) if earlier else []
        tasks.append(Task(f"t{i}", draw(st.sampled_from(sorted(tools))), deps=tuple(deps)))
    problem = Problem(tools=tools, resources=capacities,
                      limits=Limits(max_parallel=draw(st.none() | st.integers(1, 3))))
    return problem, Plan(tasks=tuple(tasks))


def outcome(scheduler: Any, problem: Problem, plan: Plan) -> Schedule | str:
    """The schedule, or the message of the ``ValueError`` a scheduler raised."""
    try:
        result: Schedule = scheduler(problem, plan)
    except ValueError as exc:
        return str(exc)
    return result


def assert_same(problem: Problem, plan: Plan) -> None:
    kernel, oracle = outcome(schedule, problem, plan), outcome(reference_schedule, problem, plan)
    assert kernel == oracle
    if isinstance(kernel, Schedule) and isinstance(oracle, Schedule):
        assert list(kernel.start) == list(oracle.start)  # listed in the order they were placed
        assert list(kernel.to_dict().items()) == list(oracle.to_dict().items())


@settings(max_examples=150, deadline=None)
@given(instances())
def test_kernel_equals_reference_on_random_plans(instance: tuple[Problem, Plan]) -> None:
    assert_same(*instance)


@settings(max_examples=80, deadline=None)
@given(wide_instances())
def test_kernel_equals_reference_on_wide_plans(instance: tuple[Problem, Plan]) -> None:
    assert_same(*instance)


@settings(max_examples=100, deadline=None)
@given(cases())
def test_kernel_equals_reference_on_generated_problems(case: tuple[Problem, Plan]) -> None:
    assert_same(*case)


def test_a_task_above_capacity_raises_the_same_error() -> None:
    problem = Problem(tools={"big": Tool("big", 1.0, uses={"gpu": 2.0})}, resources={"gpu": 1.0})
    plan = Plan(tasks=(Task("a", "big"),))
    for scheduler in (schedule, reference_schedule):
        with pytest.raises(ValueError, match="more than the full capacity of a resource"):
            scheduler(problem, plan)


def test_warm_up_compiles_the_serial_sgs() -> None:
    """What warm_up promises: the serial SGS is compiled (or loaded from numba's cache)."""
    if not hasattr(serial_sgs, "signatures"):
        pytest.skip("numba's JIT is disabled: there is nothing to compile")
    warm_up()
    assert serial_sgs.signatures


# -- a template-only problem with fractional durations and one slot --------------------------

FRACTIONAL: dict[str, Any] = {
    "name": "fractional",
    "limits": {"max_parallel": 1},
    "tools": {
        "short": {"duration": 0.4},
        "long": {"duration": 1.6},
    },
    "template": {"tasks": [
        {"id": "a", "tool": "short", "deps": []},
        {"id": "b", "tool": "short", "deps": []},
        {"id": "c", "tool": "long", "deps": ["a"]},
    ]},
}


def fractional() -> Problem:
    return problem_from_dict(FRACTIONAL, "<fractional>")


def test_fractional_one_slot_schedule() -> None:
    """Longest remaining path first: a (2.0 to go), then c (1.6), then b (0.4), one at a time."""
    problem = fractional()
    plan = problem.template
    assert isinstance(plan, Plan)
    s = schedule(problem, plan)
    assert s == reference_schedule(problem, plan)
    assert dict(s.start) == {"a": 0.0, "c": 0.4, "b": 0.4 + 1.6}
    assert s.makespan == pytest.approx(2.4)
    assert s.critical_path == ("a", "c") and s.critical_path_length == pytest.approx(2.0)
    assert s.waves == (("a", "b"), ("c",))


def test_every_path_schedules_the_fractional_problem_alike() -> None:
    """The activity-list operators must optimise what the fitness scores: the integer decoder
    would round 0.4 to 0 and ignore the slot, so this problem is decoded by the float kernel."""
    problem = fractional()
    assert not is_integer_rcpsp(problem)
    assert default_operators(problem) is ACTIVITY_LIST
    acts = activities(problem)
    assert acts.inst is None
    template = problem.template
    assert isinstance(template, Plan)
    for priority in (None, ("a", "b", "c"), ("b", "a", "c"), ("a", "c", "b"), ("c", "b")):
        plan = Plan(tasks=template.tasks, priority=priority)
        order = activity_list(problem, plan)
        listed = with_list(problem, order)
        expected = schedule(problem, listed)
        assert expected == reference_schedule(problem, listed)
        if priority is not None and len(priority) == 3:
            assert expected == schedule(problem, plan)
        starts = acts.decode(order)
        assert {acts.ids[j]: float(starts[j]) for j in range(acts.n)} == dict(expected.start)
        better = justified(problem, order)
        improved = schedule(problem, better)
        assert improved == reference_schedule(problem, better)
        assert improved.makespan <= expected.makespan + 1e-9
        again = activity_list(problem, better)
        assert {acts.ids[j]: float(s) for j, s in enumerate(acts.decode(again))} == dict(improved.start)
    for seed in range(5):
        plan = sample_list(problem, np.random.default_rng(seed))
        assert schedule(problem, plan) == reference_schedule(problem, plan)
        assert schedule(problem, plan).makespan == pytest.approx(2.4)


def test_integer_instances_keep_the_integer_decoder() -> None:
    inst = from_arrays("tiny", [0, 3, 2, 0], [[0], [2], [2], [0]], [3], [[1, 2], [3], [3], []])
    problem = problem_from_instance(inst)
    assert is_integer_rcpsp(problem)
    acts = activities(problem)
    assert acts.inst is not None
    order = activity_list(problem, Plan(tasks=(), priority=None))
    listed = with_list(problem, order)
    assert {acts.ids[j]: float(s) for j, s in enumerate(acts.decode(order))} == dict(
        schedule(problem, listed).start)
    # The same problem with one slot is no longer the integer instance the decoder knows.
    assert not is_integer_rcpsp(replace(problem, limits=Limits(max_parallel=1)))
    assert is_integer_rcpsp(replace(problem, limits=Limits(max_parallel=4)))  # cannot bind
    assert not is_integer_rcpsp(replace(problem, resources={"R1": 3.5}))


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_float_operators_match_the_engine(data: st.DataObject) -> None:
    """On random fractional template problems, decode is the engine's schedule and justification
    never lengthens it."""
    problem, plan = data.draw(instances())
    if not plan.tasks:
        return
    tasks = tuple({t.id: t for t in plan.tasks}.values())
    tasks = tuple(t for t in tasks if t.tool in problem.tools)
    fixed = Problem(tools=problem.tools, resources=problem.resources, limits=problem.limits,
                    template=Plan(tasks=tasks))
    if isinstance(outcome(schedule, fixed, Plan(tasks=tasks)), str):
        return  # a task above capacity: no schedule to compare
    acts = activities(fixed)
    if is_integer_rcpsp(fixed):
        assert acts.inst is not None
    order = activity_list(fixed, plan)
    listed = with_list(fixed, order)
    expected = schedule(fixed, listed)
    assert {acts.ids[j]: float(s) for j, s in enumerate(acts.decode(order))} == dict(expected.start)
    better = schedule(fixed, justified(fixed, order))
    assert better.makespan <= expected.makespan + 1e-9
