"""Properties of any simulated run of any valid plan, whatever fails: it ends with a named reason,
no task starts before its deps are done, the limits hold at every moment, the counters add up,
and the same seed gives the same run."""

from __future__ import annotations

import json
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve.execute import REASONS, ExecuteOptions, start_run
from evolve.fitness.strategies import problems, valid_plans
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.scheduling.base import EPS

POLICY = st.sampled_from(["fail_plan", "skip_dependents", "retry", "replan"])


@st.composite
def runs(draw: st.DrawFn) -> tuple[Problem, Plan, dict[str, float], int, int]:
    problem = draw(problems())
    plan = draw(valid_plans(problem))
    policies = draw(st.lists(POLICY, min_size=len(plan.tasks), max_size=len(plan.tasks)))
    retries = draw(st.lists(st.integers(0, 2), min_size=len(plan.tasks), max_size=len(plan.tasks)))
    plan = Plan(
        tasks=tuple(replace(t, on_failure=p, retries=r) for t, p, r in zip(plan.tasks, policies, retries)),
        priority=plan.priority,
    )
    rates = draw(
        st.dictionaries(st.sampled_from(sorted(problem.tools)), st.sampled_from([0.0, 0.5, 1.0]), max_size=3)
    )
    return problem, plan, rates, draw(st.integers(0, 3)), draw(st.integers(1, 30))


def execute(
    problem: Problem, plan: Plan, rates: dict[str, float], seed: int, max_steps: int, folder: Path
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    from evolve.execute import SearchReplanner

    outcome = start_run(
        problem,
        plan,
        folder,
        plan_source="plan",
        tools_spec=None,
        simulate=True,
        fail_rates=rates,
        options=ExecuteOptions(max_steps=max_steps, seed=seed, backoff=1.0),
        replanner=SearchReplanner(generations=1, population=4, keep=2),
    ).run()
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    return outcome, events


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_any_simulated_run_keeps_the_invariants(
    case: tuple[Problem, Plan, dict[str, float], int, int],
) -> None:
    problem, plan, rates, seed, max_steps = case
    with tempfile.TemporaryDirectory() as tmp:
        outcome, events = execute(problem, plan, rates, seed, max_steps, Path(tmp) / "a")
        again, _ = execute(problem, plan, rates, seed, max_steps, Path(tmp) / "b")
    assert outcome["reason"] in REASONS
    assert (outcome["status"] == "completed") == (outcome["reason"] == "goal_met")
    if outcome["reason"] == "goal_met":
        assert all(outcome["criteria"].values())
    starts = [e for e in events if e["event"] == "step.start"]
    assert outcome["steps"] == len(starts) + outcome["replans"] <= max_steps
    assert outcome["calls"] == len(starts)
    tasks = outcome["tasks"]
    final = {tid: t for tid, t in tasks.items() if t["status"] != "invalidated"}
    deps = {t["id"]: t["deps"] for t in outcome["plan"]["tasks"]}
    for tid, task in final.items():
        if task["status"] == "done":
            for dep in deps.get(tid, []):
                if tasks[dep]["status"] == "done":
                    assert tasks[dep]["finish"] <= task["start"] + EPS
    spans = [
        (t["start"], t["finish"], t["tool"])
        for t in tasks.values()
        if t["start"] is not None and t["finish"] is not None and t["status"] in ("done", "failed")
    ]
    slots = problem.limits.max_parallel
    for moment, _, _ in spans:
        running = [s for s in spans if s[0] <= moment + EPS and moment + EPS < s[1]]
        if slots is not None:
            assert len(running) <= slots
        for resource, capacity in problem.resources.items():
            held = sum(problem.tools[tool].uses.get(resource, 0.0) for _, _, tool in running)
            assert held <= capacity + EPS
    # the same seed, the same run (times are on the virtual clock)
    assert {k: again[k] for k in ("reason", "steps", "replans", "calls_by_risk")} == {
        k: outcome[k] for k in ("reason", "steps", "replans", "calls_by_risk")
    }
    assert {tid: (t["status"], t["start"], t["finish"]) for tid, t in again["tasks"].items()} == {
        tid: (t["status"], t["start"], t["finish"]) for tid, t in tasks.items()
    }
