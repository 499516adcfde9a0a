"""The CP-SAT yardstick (benchmarks/plan_vs_cpsat.py) is only worth its figures if its model is
exact and its plans pass evolve's own checks: these tests pin both, on problems small enough
that CP-SAT proves optimality in well under a second."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from benchmark_scripts import load_benchmark

from evolve import Problem, load_problem, schedule, validate

pytest.importorskip("ortools")



@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """The benchmark script as a module, loaded from its path (benchmarks/ is not a package)."""
    return load_benchmark("plan_vs_cpsat")


def write_and_load(doc: dict[str, Any], tmp_path: Path, name: str = "problem.json") -> Problem:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return load_problem(path)


def test_generated_problem_plan_passes_evolve_checks(bench: ModuleType, tmp_path: Path) -> None:
    doc = bench._generator()(16, 3)
    doc["limits"]["max_parallel"] = bench.MAX_PARALLEL
    problem = write_and_load(doc, tmp_path)
    run = bench.solve_cpsat(problem, 5.0)
    assert run.status == "OPTIMAL"
    assert run.plan is not None
    assert validate(problem, run.plan) == []
    check = bench.check_plan(problem, run.plan)
    assert check.ok, check.errors
    made = {f for t in run.plan.tasks for f in problem.tools[t.tool].outputs} | set(problem.initial)
    assert set(problem.criteria) <= made
    assert schedule(problem, run.plan).makespan <= run.makespan
    assert run.bound == run.makespan  # optimal: the bound is the makespan


def hand_problem(tools: dict[str, Any], criteria: list[str], **extra: Any) -> dict[str, Any]:
    return {"name": "hand", "initial": ["a"], "criteria": criteria, "tools": tools, **extra}


HAND_CASES = {
    # The slow direct producer (100) loses to the tool making both inputs at once then the fast one.
    "two-facts-at-once": (hand_problem({
        "make_both": {"duration": 10, "inputs": ["a"], "outputs": ["b", "c"]},
        "fast_goal": {"duration": 5, "inputs": ["b", "c"], "outputs": ["goal"]},
        "slow_goal": {"duration": 100, "inputs": ["a"], "outputs": ["goal"]},
    }, ["goal"]), 15, ["make_both", "fast_goal"]),
    # Same makespan both ways (15): fewer tasks wins.
    "tie-fewer-tasks": (hand_problem({
        "make_both": {"duration": 10, "inputs": ["a"], "outputs": ["b", "c"]},
        "fast_goal": {"duration": 5, "inputs": ["b", "c"], "outputs": ["goal"]},
        "direct_goal": {"duration": 15, "inputs": ["a"], "outputs": ["goal"]},
    }, ["goal"]), 15, ["direct_goal"]),
    # Two independent criteria that share a GPU of capacity 1 run one after the other.
    "resource": (hand_problem({
        "p_gpu": {"duration": 10, "inputs": ["a"], "outputs": ["p"], "uses": {"gpu": 1}},
        "q_gpu": {"duration": 20, "inputs": ["a"], "outputs": ["q"], "uses": {"gpu": 1}},
        "q_denied": {"duration": 1, "inputs": ["a"], "outputs": ["q"], "scope": "prod:admin"},
    }, ["p", "q"], resources={"gpu": 1}, scopes=["ml"]), 30, ["p_gpu", "q_gpu"]),
    # A write needs an approval finishing before it starts.
    "approval": (hand_problem({
        "approve": {"duration": 5, "inputs": ["a"], "outputs": ["ok"], "risk": "approval"},
        "write_r": {"duration": 10, "inputs": ["a"], "outputs": ["r"], "risk": "write"},
        "read_r": {"duration": 40, "inputs": ["a"], "outputs": ["r"]},
    }, ["r"], policy={"write_requires_approval": True}), 15, ["approve", "write_r"]),
}


@pytest.mark.parametrize("case", sorted(HAND_CASES))
def test_hand_built_optimum(bench: ModuleType, tmp_path: Path, case: str) -> None:
    doc, makespan, tools = HAND_CASES[case]
    problem = write_and_load(doc, tmp_path)
    run = bench.solve_cpsat(problem, 5.0)
    assert run.status == "OPTIMAL"
    assert run.makespan == makespan
    assert run.bound == makespan
    assert sorted(t.tool for t in run.plan.tasks) == sorted(tools)
    check = bench.check_plan(problem, run.plan)
    assert check.ok, check.errors
    assert check.makespan == makespan
