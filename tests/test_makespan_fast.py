"""The compiled makespan is the schedule's makespan, exactly, and fails the same way.

``CompiledContext.makespan`` builds the kernel's input from the decoded plan
instead of a PlanGraph and SgsArrays; equal input gives equal starts, so it must
equal ``schedule(problem, plan).makespan`` bit for bit, raise the scheduler's
``ValueError`` for a task that never fits, and leave plans with repeated ids to
Python. Plans come from the scheduler's own strategies (float durations,
resources, ``max_parallel``, priorities naming unknown or repeated ids, cycles,
unknown tools, missing and self deps) and from the evaluation oracle's broken plans.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from test_eval_throughput_oracle import cases as broken_cases
from test_schedule_kernel import instances, wide_instances

from evolve.fitness.base import Context
from evolve.fitness.builtin import makespan
from evolve.fitness.compiled import CompiledContext
from evolve.fitness.evaluation import evaluate_plan
from evolve.fitness.registry import resolve_all
from evolve.model.plan import Plan, Task
from evolve.model.plan_arrays import PlanTables
from evolve.model.problem import Problem, Tool
from evolve.scheduling import schedule
from evolve.scheduling.arrays import sgs_arrays
from evolve.scheduling.base import PlanGraph
from evolve.scheduling.compiled import sgs_inputs

OBJECTIVES = resolve_all(["validity", "completeness", "makespan", "minimality"])


def outcome(fn: object, problem: Problem, plan: Plan) -> float | str | None:
    """The makespan, or the message of the ``ValueError`` raised."""
    try:
        return fn(problem, plan)  # type: ignore[operator,no-any-return]
    except ValueError as exc:
        return f"ValueError: {exc}"


def fast(problem: Problem, plan: Plan) -> float | None:
    return CompiledContext(problem, plan).makespan


def slow(problem: Problem, plan: Plan) -> float:
    return schedule(problem, plan).makespan


def assert_same(problem: Problem, plan: Plan) -> None:
    got = outcome(fast, problem, plan)
    if len(set(plan.ids())) != len(plan.tasks):
        assert got is None  # repeated ids: left to Python
    else:
        expected = outcome(slow, problem, plan)
        assert got == expected and type(got) is type(expected)
        arrays = CompiledContext(problem, plan).decoded
        assert arrays is not None
        compiled = problem.derived(PlanTables).compiled
        graph = PlanGraph.of(problem, plan)
        want = sgs_arrays(problem, graph)
        dur, need, pred_ptr, pred_idx, succ_ptr, succ_idx, key = sgs_inputs(
            arrays.tool, arrays.dep_ptr, arrays.dep_idx, arrays.order, arrays.rank, arrays.ranked,
            compiled.dur, compiled.need)
        for mine, theirs in ((dur, want.dur), (need, want.need), (pred_ptr, want.pred_ptr),
                             (pred_idx, want.pred_idx), (succ_ptr, want.succ_ptr),
                             (succ_idx, want.succ_idx), (key, want.key)):
            np.testing.assert_array_equal(mine, theirs)
    # the objective through evaluate_plan: the same value, or the same failure
    plain = Context(problem, plan)
    try:
        value: float | str = makespan(problem, plan, plain)
    except ValueError as exc:
        value = str(exc)
    evaluation = evaluate_plan(problem, plan, OBJECTIVES)
    if isinstance(value, str):
        assert evaluation.failed is not None and value in evaluation.failed
    else:
        assert evaluation.failed is None and evaluation.values["makespan"] == value


@settings(max_examples=250, deadline=None)
@given(instances())
def test_fast_makespan_equals_the_schedule_on_random_plans(instance: tuple[Problem, Plan]) -> None:
    assert_same(*instance)


@settings(max_examples=60, deadline=None)
@given(wide_instances())
def test_fast_makespan_equals_the_schedule_on_wide_plans(instance: tuple[Problem, Plan]) -> None:
    assert_same(*instance)


@settings(max_examples=100, deadline=None)
@given(broken_cases())
def test_fast_makespan_equals_the_schedule_on_broken_plans(case: tuple[Problem, Plan]) -> None:
    assert_same(*case)


def test_a_task_above_capacity_fails_the_evaluation_alike() -> None:
    problem = Problem(tools={"big": Tool("big", 1.0, uses={"gpu": 2.0})}, resources={"gpu": 1.0})
    plan = Plan(tasks=(Task("a", "big"),))
    fast_failure = evaluate_plan(problem, plan, OBJECTIVES).failed
    context = Context(problem, plan)
    try:
        OBJECTIVES[2](problem, plan, context)
    except Exception as exc:  # the FitnessError the evaluation reports
        slow_failure = str(exc)
    assert fast_failure is not None and slow_failure in fast_failure


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_a_schedule_already_built_is_read(data: st.DataObject) -> None:
    problem, plan = data.draw(instances())
    context = CompiledContext(problem, plan)
    try:
        expected = context.schedule.makespan
    except ValueError:
        return
    assert context.makespan == expected
