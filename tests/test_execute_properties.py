"""Properties of any simulated run of any valid plan, whatever fails: it ends with a named reason,
no task starts before its deps are done, the limits hold at every moment, the counters add up,
and the same seed gives the same run."""

from __future__ import annotations

import json
import signal
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from evolve.execute import REASONS, ExecuteOptions, start_run
from evolve.fitness.strategies import problems, valid_plans
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.scheduling.base import EPS

HANG_SECONDS = 60
"""A simulated run of these sizes ends in well under a second; one that runs this long hangs."""
POLICY = st.sampled_from(["fail_plan", "skip_dependents", "retry", "replan"])


@st.composite
def runs(draw: st.DrawFn) -> tuple[Problem, Plan, dict[str, float], int, int]:
    problem = draw(problems())
    plan = draw(valid_plans(problem))
    policies = draw(st.lists(POLICY, min_size=len(plan.tasks), max_size=len(plan.tasks)))
    retries = draw(st.lists(st.integers(0, 2), min_size=len(plan.tasks), max_size=len(plan.tasks)))
    # failure branches: some tasks with deps run only if their first dep failed for good
    # (the dep they test fails under skip_dependents, the policy that lets a fallback run)
    branches = draw(st.lists(st.booleans(), min_size=len(plan.tasks), max_size=len(plan.tasks)))
    tested = {t.deps[0] for t, b in zip(plan.tasks, branches) if b and t.deps}
    plan = Plan(
        tasks=tuple(
            replace(
                t,
                on_failure="skip_dependents" if t.id in tested else p,
                retries=r,
                when=f"failed(${t.deps[0]})" if b and t.deps else t.when,
            )
            for t, p, r, b in zip(plan.tasks, policies, retries, branches)
        ),
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

    def hang(signum: int, frame: object) -> None:
        raise TimeoutError(f"the run did not end within {HANG_SECONDS} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(HANG_SECONDS)  # a run that never ends fails its example instead of the suite
    try:
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
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
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
    whens = {t["id"]: t.get("when") or "" for t in outcome["plan"]["tasks"]}
    for tid, task in final.items():
        if task["status"] == "done":
            for dep in deps.get(tid, []):
                if tasks[dep]["status"] == "done":
                    assert tasks[dep]["finish"] <= task["start"] + EPS
                if whens[tid] == f"failed(${dep})":  # a fallback runs only after its dep failed
                    event("a fallback ran")
                    assert tasks[dep]["status"] in ("failed", "unknown")
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


# the case hypothesis found (drawn by problems() and valid_plans(), policies and retries set)
PROBLEM_WAITING_ON_A_TIMER: dict[str, Any] = {
    "name": "generated", "initial": ["f0"], "criteria": ["f1"], "scopes": ["beta", "alpha", "gamma"],
    "limits": {"max_parallel": 2, "max_tasks": 10},
    "tools": {
        "tool_0": {"duration": 1.5, "inputs": ["f0", "f1"], "outputs": ["f1", "f0"], "risk": "approval",
                   "cost": 0.5, "llm_calls": 2},
        "tool_1": {"duration": 6.0, "outputs": ["f0", "f1"], "risk": "approval", "cost": 0.5, "llm_calls": 3},
        "tool_2": {"duration": 1.5, "scope": "alpha", "outputs": ["f1"], "risk": "write", "llm_calls": 2},
        "tool_3": {"duration": 2.0, "scope": "beta", "inputs": ["f0", "f1"], "outputs": ["f1"],
                   "risk": "write", "llm_calls": 1},
    },
}
PLAN_WAITING_ON_A_TIMER: dict[str, Any] = {"tasks": [
    {"id": "t1", "tool": "tool_1", "deps": [], "inputs": {}, "outputs": [], "on_failure": "skip_dependents",
     "retries": 2},
    {"id": "t2", "tool": "tool_2", "deps": [], "inputs": {}, "outputs": [], "idempotency_key": "t2-once",
     "on_failure": "replan", "retries": 2},
    {"id": "t3", "tool": "tool_1", "deps": ["t2"], "inputs": {}, "outputs": [], "when": "$t2.f1 > 0",
     "on_failure": "replan", "retries": 2},
    {"id": "t4", "tool": "tool_2", "deps": ["t2"], "inputs": {}, "outputs": ["f1"],
     "idempotency_key": "t4-once", "on_failure": "skip_dependents", "retries": 1},
    {"id": "t5", "tool": "tool_2", "deps": ["t2", "t4"], "inputs": {}, "outputs": [],
     "idempotency_key": "t5-once", "on_failure": "replan"},
    {"id": "t6", "tool": "tool_2", "deps": ["t3", "t1", "t5"], "inputs": {}, "outputs": [],
     "when": "$t3.f0 > 0", "idempotency_key": "t6-once", "on_failure": "skip_dependents", "retries": 2},
]}


def test_a_run_stopped_with_a_retry_timer_due_ends_when_its_calls_end(tmp_path: Path) -> None:
    """Found by the property above: t1 fails at 6 and waits for its retry at 7, t4 is ready but
    the step budget (3) is spent, so the run stops while t3 still runs until 7.5. The loop
    used to wake at the retry timer again and again without the clock moving (a hang); it
    must wait for t3's call and end when it ends."""
    from evolve.model.plan_file import plan_from_dict
    from evolve.model.problem_file import problem_from_dict

    problem = problem_from_dict(PROBLEM_WAITING_ON_A_TIMER)
    plan = plan_from_dict(PLAN_WAITING_ON_A_TIMER)
    outcome, events = execute(problem, plan, {"tool_1": 1.0, "tool_3": 1.0}, 1, 3, tmp_path / "run")
    assert outcome["reason"] == "goal_met"  # t2 made f1; the message names the spent budget
    assert "--max-steps 3 spent" in outcome["message"]
    assert [e["task"] for e in events if e["event"] == "step.start"] == ["t2", "t1", "t3"]
    assert [(e["event"], e["task"], e["time"]) for e in events if e["event"] == "step.error"] == [
        ("step.error", "t1", 6.0), ("step.error", "t3", 7.5)]
    assert events[-1]["event"] == "session.complete" and events[-1]["time"] == 7.5
