"""The makespan lower bounds (evolve.model.bounds) are only worth printing if they are never above
a real plan: these tests hold them against every complete plan hypothesis builds, against
CP-SAT's proven optimum on tiny generated problems, and against the plans evolve's search finds."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import pytest
from benchmark_scripts import load_benchmark
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from evolve import Limits, Plan, Problem, Task, Tool, load_problem, schedule, validate
from evolve.fitness.strategies import problems, valid_plans
from evolve.model.bounds import candidate_tools, critical_path, earliest_starts, lower_bound, shortest_tails
from evolve.model.energy_bound import energy_model
from evolve.model.path_bound import solve_path
from evolve.problems.synthetic import generate_document, generate_problem
from evolve.run.folder import run_search
from evolve.search.options import SearchOptions

TOL = 1e-6


def complete(problem: Problem, plan: Plan) -> bool:
    """The plan passes the validator and makes every criterion (what the bound is about)."""
    if validate(problem, plan):
        return False
    made = set(problem.initial)
    for task in plan.tasks:
        made.update(task.outputs or problem.tools[task.tool].outputs)
    return set(problem.criteria) <= made


def makespan(problem: Problem, plan: Plan) -> float | None:
    """The scheduler's makespan, or ``None`` when a task can never fit its resources."""
    try:
        return schedule(problem, plan).makespan
    except ValueError:
        return None


@st.composite
def problems_with_complete_plans(draw: st.DrawFn) -> tuple[Problem, Plan]:
    problem = draw(problems(max_facts=6, max_tools=7))
    plan = draw(valid_plans(problem, max_tasks=9))
    assume(complete(problem, plan))
    return problem, plan


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.filter_too_much,
                                                                   HealthCheck.too_slow])
@given(problems_with_complete_plans())
def test_bound_never_exceeds_a_complete_plan(case: tuple[Problem, Plan]) -> None:
    problem, plan = case
    made = makespan(problem, plan)
    assume(made is not None)
    assert made is not None
    bound = lower_bound(problem, mip_seconds=2.0, path_seconds=2.0)
    assert bound.value <= made + TOL, (bound, made)
    for name, value in bound.parts.items():
        assert value <= made + TOL, (name, value, made)


@pytest.mark.parametrize("seed", range(4))
def test_bound_never_exceeds_what_evolve_finds(seed: int, tmp_path: Path) -> None:
    problem = generate_problem(60, seed)
    problem = replace(problem, limits=replace(problem.limits, max_parallel=3))
    outcome = run_search(problem, options=SearchOptions(seed=seed, generations=4), out_dir=tmp_path / "run")
    best = outcome.result.best.plan
    assert complete(problem, best)
    bound = lower_bound(problem, mip_seconds=5.0, path_seconds=5.0)
    assert 0 < bound.value <= schedule(problem, best).makespan + TOL


def test_bound_is_exact_on_a_chain_and_on_a_capacity_one_resource() -> None:
    chain = Problem(tools={"a": Tool("a", 3.0, ("x",), ("y",)), "b": Tool("b", 4.0, ("y",), ("z",)),
                           "slow": Tool("slow", 9.0, ("x",), ("y",))},
                    initial=("x",), criteria=("z",))
    got = lower_bound(chain)
    assert (got.value, got.source) == (7.0, "critical-path")
    gpu = Problem(tools={f"t{i}": Tool(f"t{i}", 5.0, ("x",), (f"y{i}",), uses={"gpu": 1}) for i in range(4)},
                  initial=("x",), criteria=tuple(f"y{i}" for i in range(4)), resources={"gpu": 1})
    got = lower_bound(gpu)
    assert got.value == pytest.approx(20.0)
    assert got.source == "energy (gpu)"
    plan = Plan(tasks=tuple(Task(id=f"k{i}", tool=f"t{i}", inputs={"x": "$x"}) for i in range(4)))
    assert schedule(gpu, plan).makespan == pytest.approx(got.value)


def test_slots_head_and_tail_windows_count() -> None:
    """Three tasks that must all wait for a 10-second head, on one slot: 10 + 3 * 2."""
    tools = {"head": Tool("head", 10.0, ("x",), ("h",))}
    tools |= {f"t{i}": Tool(f"t{i}", 2.0, ("h",), (f"y{i}",)) for i in range(3)}
    problem = Problem(tools=tools, initial=("x",), criteria=("y0", "y1", "y2"), limits=Limits(max_parallel=1))
    assert lower_bound(problem).value == pytest.approx(16.0)
    assert lower_bound(problem, mip_seconds=2.0).value == pytest.approx(16.0)


def test_no_complete_plan_gives_an_infinite_bound() -> None:
    problem = Problem(tools={"a": Tool("a", 1.0, ("missing",), ("y",))}, initial=("x",), criteria=("y",))
    assert math.isinf(lower_bound(problem).value)


def test_an_infeasible_cover_is_infinite_without_a_path_model() -> None:
    """Two criteria, two tools, at most one task: the energy LP proves no plan exists, and the
    path model is not built on an infinite horizon."""
    problem = Problem(tools={"a": Tool("a", 2.0, ("x",), ("y",)), "b": Tool("b", 3.0, ("x",), ("z",))},
                      initial=("x",), criteria=("y", "z"), limits=Limits(max_tasks=1))
    got = lower_bound(problem, mip_seconds=1.0, path_seconds=1.0)
    assert math.isinf(got.value) and "path-mip" not in got.parts


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    pytest.importorskip("ortools")
    return load_benchmark("plan_vs_cpsat")


@pytest.mark.parametrize(("tools", "seed"), [(t, s) for t in (8, 12, 16, 20) for s in range(3)])
def test_bound_never_exceeds_the_cpsat_optimum(bench: ModuleType, tools: int, seed: int,
                                                tmp_path: Path) -> None:
    doc = generate_document(tools, seed)
    doc["limits"]["max_parallel"] = 2
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    problem = load_problem(path)
    run = bench.solve_cpsat(problem, 10.0, seed=seed)
    assert run.status == "OPTIMAL"
    assert run.plan is not None
    check = bench.check_plan(problem, run.plan)
    assert check.ok, check.errors
    bound = lower_bound(problem, mip_seconds=5.0, path_seconds=5.0)
    assert "path-mip" in bound.parts
    assert bound.value <= check.makespan + TOL
    assert bound.value <= run.makespan + TOL


def test_path_bound_is_min_of_its_optimum_and_its_horizon() -> None:
    """A horizon below every plan's makespan proves the horizon, never more."""
    chain = Problem(tools={"a": Tool("a", 3.0, ("x",), ("y",)), "b": Tool("b", 4.0, ("y",), ("z",)),
                           "slow": Tool("slow", 9.0, ("x",), ("y",))},
                    initial=("x",), criteria=("z",), limits=Limits(max_parallel=1))
    tools = candidate_tools(chain)
    head, ready = earliest_starts(chain, tools)
    tail = shortest_tails(chain, tools)
    model = energy_model(chain, tools, head, tail, critical_path(chain, ready))
    assert solve_path(chain, tools, model, head, tail, ready, 100.0, 5.0) == (pytest.approx(7.0), "optimal")
    assert solve_path(chain, tools, model, head, tail, ready, 5.0, 5.0) == (5.0, "horizon")


def test_path_bound_closes_the_gap_the_energy_arguments_leave(tmp_path: Path) -> None:
    """300 facts, seed 2 of plan_vs_cpsat: the least-work tool set (slot work 4162) cannot
    pack under its own 4730 chain, so the energy arguments stop at 4162 and the chosen-path
    model proves 4287.7; a plan the search finds (checked by the validator and the
    scheduler) is never below it."""
    doc = load_benchmark("plan_vs_cpsat").document_for(300, 2)
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    problem = load_problem(path)
    bound = lower_bound(problem, mip_seconds=5.0, path_seconds=60.0)
    assert bound.source == "path-mip (optimal)"
    assert bound.parts["path-mip"] > max(v for k, v in bound.parts.items() if k != "path-mip") + 100
    outcome = run_search(problem, options=SearchOptions(seed=2, generations=2), out_dir=tmp_path / "run")
    best = outcome.result.best.plan
    assert complete(problem, best)
    assert bound.value <= schedule(problem, best).makespan + TOL
