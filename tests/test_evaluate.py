"""Evaluating plans: verdicts on valid and invalid plans, failures confined to their candidate,
and a real joblib pool that gives exactly what the in-process loop gives."""

from __future__ import annotations

import os
from dataclasses import replace

import numpy as np
import pytest

from evolve.fitness.base import Context, Fitness, as_fitness, fitness
from evolve.fitness.evaluation import Evaluation, evaluate_plan
from evolve.fitness.registry import resolve_all
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem
from evolve.run.evaluator import Evaluator, evaluate_batch, resolve_jobs, split
from evolve.search.chaining import construct

BUILTIN = ("validity", "completeness", "makespan", "minimality")


@fitness(direction="min")
def explodes_on_two_tasks(problem: Problem, plan: Plan, context: Context) -> float:
    """Raises for plans of exactly two tasks: a plugin bug that must fail only those candidates."""
    if len(plan.tasks) == 2:
        raise RuntimeError("boom on two tasks")
    return float(len(plan.tasks))


@fitness(direction="max", low=0, high=1)
def out_of_range(problem: Problem, plan: Plan, context: Context) -> float:
    """Declares [0, 1] and returns 2."""
    return 2.0


@fitness(direction="min")
def worker_pid(problem: Problem, plan: Plan, context: Context) -> float:
    """Which process evaluated the plan: proves where the work ran."""
    return float(os.getpid())


def builtins() -> list[Fitness]:
    return resolve_all(BUILTIN)


def refund_plans(problem: Problem, count: int) -> list[Plan]:
    """Complete plans of different shapes, built by the constructive heuristic."""
    return [construct(problem, np.random.default_rng(i)) for i in range(count)]


def test_valid_complete_plan_is_feasible(refund: Problem) -> None:
    plan = construct(refund, np.random.default_rng(0))
    ev = evaluate_plan(refund, plan, builtins())
    assert ev.failed is None and ev.errors == ()
    assert ev.feasible
    assert ev.values["validity"] == 0 and ev.values["completeness"] == 1
    assert ev.values["makespan"] > 0
    assert set(ev.values) == set(BUILTIN)


def test_invalid_plan_is_infeasible_with_readable_errors(refund: Problem) -> None:
    plan = construct(refund, np.random.default_rng(0))
    broken = Plan(tasks=(*plan.tasks, Task("x1", "no.such.tool")))
    ev = evaluate_plan(refund, broken, builtins())
    assert not ev.feasible and ev.failed is None
    assert ev.values["validity"] == len(ev.errors) >= 1
    assert any("x1" in e and "no.such.tool" in e for e in ev.errors)


def test_valid_but_incomplete_plan_is_not_feasible(refund: Problem) -> None:
    plan = Plan(tasks=(Task("t1", "orders.get", inputs={"order_id": "$order_id"}),))
    ev = evaluate_plan(refund, plan, builtins())
    assert ev.errors == () and ev.values["validity"] == 0
    assert not ev.feasible
    assert ev.values["completeness"] == 0


def test_empty_plan(refund: Problem) -> None:
    ev = evaluate_plan(refund, Plan(), builtins())
    assert not ev.feasible and ev.values["makespan"] == 0 and ev.values["completeness"] == 0


def test_raising_fitness_fails_only_that_candidate(refund: Problem) -> None:
    one = Plan(tasks=(Task("t1", "orders.get", inputs={"order_id": "$order_id"}),))
    two = Plan(tasks=(*one.tasks, Task("t2", "policy.search", inputs={"complaint": "$complaint"})))
    three = construct(refund, np.random.default_rng(1))
    assert len(three.tasks) != 2
    fits = [*builtins(), as_fitness(explodes_on_two_tasks)]
    evs = evaluate_batch(refund, [one, two, three], fits)
    assert evs[0].failed is None and evs[2].failed is None
    assert evs[2].feasible
    failed = evs[1].failed
    assert failed is not None and "RuntimeError: boom on two tasks" in failed
    assert "test_evaluate.py" in failed  # says where it happened
    assert evs[1].values == {} and not evs[1].feasible
    assert evs[1].to_dict()["failed"] == failed


def test_fitness_out_of_its_declared_range_fails_the_candidate(refund: Problem) -> None:
    ev = evaluate_plan(refund, Plan(), [as_fitness(out_of_range)])
    assert ev.failed is not None and "outside its declared range" in ev.failed


def test_evaluation_to_dict() -> None:
    ev = Evaluation(values={"validity": 1.0}, feasible=False, errors=("t1: bad",))
    assert ev.to_dict() == {"values": {"validity": 1.0}, "feasible": False, "errors": ["t1: bad"]}


def without_pid(ev: Evaluation) -> Evaluation:
    return replace(ev, values={k: v for k, v in ev.values.items() if k != "worker_pid"})


def test_pool_gives_the_same_evaluations_as_serial(refund: Problem) -> None:
    plans = [*refund_plans(refund, 12), Plan(), Plan(tasks=(Task("x", "nope"),))]
    fits = [*builtins(), as_fitness(explodes_on_two_tasks), as_fitness(worker_pid)]
    with Evaluator(refund, fits, jobs=1) as serial:
        expected = serial.evaluate(plans)
    with Evaluator(refund, fits, jobs=2, min_parallel_seconds=0.0) as pool:
        pool.evaluate(plans[:2])  # the first call may measure in-process
        got = pool.evaluate(plans)
        assert pool.evaluations == 2 + len(plans)
    pids = {ev.values["worker_pid"] for ev in got if ev.failed is None}
    assert float(os.getpid()) not in pids  # the pool really did the work
    assert [without_pid(ev) for ev in got] == [without_pid(ev) for ev in expected]
    assert sum(ev.failed is not None for ev in got) == sum(len(p.tasks) == 2 for p in plans)


def test_pool_really_runs_in_workers_and_keeps_order(refund: Problem) -> None:
    plans = refund_plans(refund, 8)
    fits = [as_fitness(worker_pid, source="tests"), as_fitness(explodes_on_two_tasks)]
    with Evaluator(refund, fits, jobs=2) as pool:  # a plugin always goes to the workers
        pool.evaluate(plans[:1])
        first = pool.evaluate(plans)
        second = pool.evaluate(plans)
    pids = {ev.values["worker_pid"] for ev in first + second}
    assert float(os.getpid()) not in pids
    # One pool for the whole run: every call is served by the same (at most 2) workers.
    assert len(pids) <= 2
    assert [ev.values["explodes_on_two_tasks"] for ev in first] == [float(len(p.tasks)) for p in plans]


def test_cheap_batches_stay_in_process(refund: Problem) -> None:
    """A cheap, trusted (built-in) fitness must not pay for shipping plans to workers."""
    plans = refund_plans(refund, 6)
    with Evaluator(refund, [as_fitness(worker_pid)], jobs=2) as evaluator:
        for _ in range(3):
            evs = evaluator.evaluate(plans)
            assert {ev.values["worker_pid"] for ev in evs} == {float(os.getpid())}


def test_empty_batch() -> None:
    evaluator = Evaluator(Problem(tools={}), builtins(), jobs=1)
    assert evaluator.evaluate([]) == [] and evaluator.evaluations == 0


def test_resolve_jobs() -> None:
    from joblib import cpu_count
    cores = cpu_count()
    assert resolve_jobs(None) == resolve_jobs(0) == cores
    assert resolve_jobs(-1) == cores
    assert resolve_jobs(3) == 3
    assert resolve_jobs(-1000) == 1


@pytest.mark.parametrize(("count", "parts"), [(0, 2), (1, 2), (5, 2), (7, 3), (2, 8)])
def test_split_is_contiguous_and_balanced(count: int, parts: int) -> None:
    items = [Plan(tasks=(Task(f"t{i}", "x"),)) for i in range(count)]
    chunks = split(items, parts)
    assert [p for chunk in chunks for p in chunk] == items
    sizes = [len(c) for c in chunks if c]
    assert not sizes or max(sizes) - min(sizes) <= 1
    assert len(chunks) <= max(1, parts)
