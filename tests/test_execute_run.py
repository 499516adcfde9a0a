"""The executor end to end: every terminal reason, retries with capped backoff in a bounded
window, deadlines that do not stop the run, limits, ready-task order, and replanning."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from evolve.execute import REASONS, ExecuteOptions, SearchReplanner, ToolFailure, start_run
from evolve.execute.replan import Proposal, Situation
from evolve.execute.tools import Call, ToolFn
from evolve.model.plan import Plan, Task
from evolve.model.plan_file import load_plan, plan_from_dict
from evolve.model.problem_file import problem_from_dict
from evolve.problems import load_problem

ROOT = Path(__file__).resolve().parent.parent

CHAIN: dict[str, Any] = {
    "name": "chain",
    "initial": ["x"],
    "criteria": ["c"],
    "tools": {
        "make_a": {"duration": 10, "inputs": ["x"], "outputs": ["a"]},
        "make_a_slowly": {"duration": 50, "inputs": ["x"], "outputs": ["a"]},
        "make_b": {"duration": 10, "inputs": ["a"], "outputs": ["b"]},
        "make_c": {"duration": 10, "inputs": ["b"], "outputs": ["c"]},
    },
}


def chain_plan(policy: str = "fail_plan", retries: int = 0) -> dict[str, Any]:
    return {
        "tasks": [
            {"id": "t1", "tool": "make_a", "inputs": {"x": "$x"}, "on_failure": policy, "retries": retries},
            {"id": "t2", "tool": "make_b", "deps": ["t1"], "inputs": {"a": "$t1.a"}},
            {"id": "t3", "tool": "make_c", "deps": ["t2"], "inputs": {"b": "$t2.b"}},
        ]
    }


def events_of(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


def simulate(
    tmp_path: Path,
    problem_doc: dict[str, Any],
    plan_doc: dict[str, Any],
    *,
    fail: Mapping[str, float] | None = None,
    replanner: Any = None,
    **options: Any,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    out = tmp_path / "run"
    executor = start_run(
        problem_from_dict(problem_doc),
        plan_from_dict(plan_doc),
        out,
        plan_source="plan",
        tools_spec=None,
        simulate=True,
        fail_rates=dict(fail or {}),
        options=ExecuteOptions(**options),
        replanner=replanner,
    )
    outcome = executor.run()
    assert json.loads((out / "outcome.json").read_text()) == json.loads(json.dumps(outcome, default=str))
    events = events_of(out)
    no_retry_before_its_time(events)
    return outcome, events


def no_retry_before_its_time(events: list[dict[str, Any]]) -> None:
    """Every retry starts at or after the retry_at its step.error announced."""
    due: dict[str, float] = {}
    for event in events:
        if event["event"] == "step.error" and event["next"] == "retry" and event["retry_at"] is not None:
            due[event["task"]] = event["retry_at"]
        elif event["event"] == "step.start" and event["task"] in due:
            assert event["time"] >= due.pop(event["task"]), event


class FixedReplanner:
    """Proposes the same plan every time (a replanner stuck in a loop)."""

    name = "fixed"

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.calls = 0

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        self.calls += 1
        return Proposal(plan=self.plan, source=self.name)


class NoPlan:
    name = "none"

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        return None


# -- terminal reasons -------------------------------------------------------------------------


def test_goal_met(tmp_path: Path) -> None:
    outcome, events = simulate(tmp_path, CHAIN, chain_plan())
    assert (outcome["status"], outcome["reason"], outcome["steps"]) == ("completed", "goal_met", 3)
    assert events[0]["event"] == "plan.commit"
    assert events[-1]["event"] == "session.complete"
    assert outcome["criteria"] == {"c": "t3"}


def test_task_failed(tmp_path: Path) -> None:
    outcome, _ = simulate(tmp_path, CHAIN, chain_plan("fail_plan"), fail={"make_a": 1.0})
    assert (outcome["status"], outcome["reason"]) == ("failed", "task_failed")
    assert "t1 (make_a) failed" in outcome["message"]


def test_goal_unreachable(tmp_path: Path) -> None:
    outcome, _ = simulate(tmp_path, CHAIN, chain_plan("skip_dependents"), fail={"make_a": 1.0})
    assert outcome["reason"] == "goal_unreachable"
    assert [outcome["tasks"][t]["status"] for t in ("t1", "t2", "t3")] == ["failed", "skipped", "skipped"]


def test_step_budget(tmp_path: Path) -> None:
    outcome, _ = simulate(tmp_path, CHAIN, chain_plan(), max_steps=2)
    assert (outcome["reason"], outcome["steps"]) == ("step_budget", 2)
    assert outcome["tasks"]["t3"]["status"] == "pending"


def test_replan_budget(tmp_path: Path) -> None:
    outcome, _ = simulate(
        tmp_path, CHAIN, chain_plan("replan"), fail={"make_a": 1.0}, max_replans=0, replanner=NoPlan()
    )
    assert (outcome["reason"], outcome["replans"]) == ("replan_budget", 0)


def test_no_plan(tmp_path: Path) -> None:
    # make_a and make_a_slowly both fail: after the first is excluded, the search uses the second;
    # when that fails too (its task replans by policy only if we say so), nothing can make 'a'
    doc = {**CHAIN, "tools": {k: v for k, v in CHAIN["tools"].items() if k != "make_a_slowly"}}
    outcome, events = simulate(
        tmp_path, doc, chain_plan("replan"), fail={"make_a": 1.0}, replanner=SearchReplanner(generations=1)
    )
    assert outcome["reason"] == "no_plan"
    assert "make_a" in outcome["message"]
    assert any(e["event"] == "plan.draft" and e["plan"] is None for e in events)


def test_loop_detected(tmp_path: Path) -> None:
    again = Plan(
        tasks=(
            Task(id="r1", tool="make_a_slowly", inputs={"x": "$x"}, on_failure="replan"),
            Task(id="r2", tool="make_b", deps=("r1",), inputs={"a": "$r1.a"}),
            Task(id="r3", tool="make_c", deps=("r2",), inputs={"b": "$r2.b"}),
        )
    )
    replanner = FixedReplanner(again)
    outcome, _ = simulate(
        tmp_path, CHAIN, chain_plan("replan"), fail={"make_a": 1.0, "make_a_slowly": 1.0}, replanner=replanner
    )
    assert outcome["reason"] == "loop_detected"
    assert replanner.calls == 2 and outcome["replans"] == 2
    assert len(outcome["revisions"]) == 1


def test_every_terminal_reason_is_named() -> None:
    assert set(REASONS) == {
        "goal_met",
        "task_failed",
        "goal_unreachable",
        "step_budget",
        "replan_budget",
        "no_plan",
        "loop_detected",
        "waiting",  # reached in tests/test_execute_people.py, as the two below
        "deadline",
        "llm_budget",
    }


# -- replanning ------------------------------------------------------------------------------


def test_a_replan_routes_around_a_tool_that_failed_for_good(tmp_path: Path) -> None:
    outcome, events = simulate(
        tmp_path, CHAIN, chain_plan("replan"), fail={"make_a": 1.0}, replanner=SearchReplanner(generations=2)
    )
    assert (outcome["status"], outcome["reason"]) == ("completed", "goal_met")
    assert outcome["excluded_tools"] == ["make_a"]
    (diff,) = outcome["revisions"]
    assert diff["removed"] == ["t2", "t3"]  # they read the failed task: rewired as new tasks
    tools = {tid: t["tool"] for tid, t in outcome["tasks"].items()}
    assert "make_a_slowly" in [tools[t] for t in diff["added"]]
    assert all(outcome["tasks"][t]["status"] == "invalidated" for t in diff["removed"])
    assert all(e["task"] not in diff["removed"] for e in events if e["event"] == "step.start")
    assert (tmp_path / "run" / "replans" / "r1" / "best.json").is_file()
    assert [e["event"] for e in events].count("plan.commit") == 2


def refund_plan_where_the_lookup_replans() -> Plan:
    plan = load_plan(ROOT / "examples" / "refund_plan.yaml")
    tasks = [
        Task(**{**t.__dict__, "on_failure": "replan", "retries": 0}) if t.tool == "payments.lookup" else t
        for t in plan.tasks
    ]
    return Plan(tasks=tuple(tasks), priority=plan.priority)


def test_refund_replans_around_a_dead_payment_lookup(tmp_path: Path) -> None:
    problem = load_problem(ROOT / "examples" / "refund.yaml")
    out = tmp_path / "run"
    executor = start_run(
        problem,
        refund_plan_where_the_lookup_replans(),
        out,
        plan_source="plan",
        tools_spec=None,
        simulate=True,
        fail_rates={"payments.lookup": 1.0},
        replanner=SearchReplanner(generations=2),
    )
    outcome = executor.run()
    assert outcome["reason"] == "goal_met", outcome["message"]
    ran = {t["tool"] for t in outcome["tasks"].values() if t["status"] == "done"}
    assert "payments.lookup" not in ran and "payments.ledger_export" in ran


# -- retries, backoff, deadlines --------------------------------------------------------------


def retrying_chain(
    tmp_path: Path, retries: int, rate: float, **options: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The chain with ``retries`` on t1, whose make_a fails at ``rate``."""
    return simulate(
        tmp_path, CHAIN, chain_plan("fail_plan", retries=retries), fail={"make_a": rate}, **options
    )


def test_retries_back_off_exponentially_and_are_capped(tmp_path: Path) -> None:
    outcome, events = retrying_chain(
        tmp_path, 4, 1.0, backoff=1.0, backoff_cap=3.0, retry_window=100.0, max_steps=20
    )
    errors = [e for e in events if e["event"] == "step.error"]
    waits = [e["retry_at"] - e["finished"] for e in errors if e["next"] == "retry"]
    assert waits == [1.0, 2.0, 3.0, 3.0]
    assert errors[-1]["next"] == "fail_plan" and "after 5 attempts" in errors[-1]["error"]
    assert outcome["tasks"]["t1"]["attempts"] == 5 and outcome["reason"] == "task_failed"


def test_retries_stop_at_the_end_of_their_window(tmp_path: Path) -> None:
    outcome, events = retrying_chain(
        tmp_path, 10, 1.0, backoff=1.0, backoff_cap=100.0, retry_window=35.0, max_steps=20
    )
    starts = [e["time"] for e in events if e["event"] == "step.start"]
    # each attempt takes 10; the first failure is at 10; waits 1, 2, 4 start attempts at 11, 23,
    # 37; the next wait (8) would start one at 55, 45 after the first failure: past the window
    assert starts == [0.0, 11.0, 23.0, 37.0]
    assert outcome["reason"] == "task_failed"


def test_a_replan_does_not_hurry_a_task_waiting_for_its_retry(tmp_path: Path) -> None:
    doc = {**CHAIN, "tools": {**CHAIN["tools"], "other": {"duration": 20, "inputs": ["x"], "outputs": ["o"]}}}
    plan = chain_plan("fail_plan", retries=1)
    plan["tasks"].append({"id": "t0", "tool": "other", "inputs": {"x": "$x"}, "on_failure": "replan"})
    again = Plan(tasks=tuple(plan_from_dict(chain_plan("fail_plan", retries=1)).tasks))
    outcome, events = simulate(
        tmp_path,
        doc,
        plan,
        fail={"make_a": 1.0, "other": 1.0},
        backoff=50.0,
        backoff_cap=100.0,
        replanner=FixedReplanner(again),
    )
    starts = [(e["task"], e["time"]) for e in events if e["event"] == "step.start"]
    assert ("t1", 60.0) in starts  # failed at 10, retry due at 60; the replan at 20 kept t1 waiting
    assert outcome["revisions"][0]["removed"] == []  # t1, t2, t3 kept: the same tasks
    assert outcome["reason"] == "task_failed"


def test_a_retryable_failure_that_succeeds_on_retry(tmp_path: Path) -> None:
    outcome, _ = retrying_chain(tmp_path, 30, 0.5, backoff=0.0, max_steps=40, seed=3)
    assert outcome["reason"] == "goal_met"
    assert outcome["tasks"]["t1"]["attempts"] >= 1


def test_the_same_seed_fails_the_same_calls(tmp_path: Path) -> None:
    a, b = (retrying_chain(tmp_path / d, 30, 0.7, backoff=0.0, max_steps=40, seed=11)[0] for d in "ab")
    assert a["tasks"]["t1"]["attempts"] == b["tasks"]["t1"]["attempts"]


def test_a_stuck_call_times_out_and_the_run_goes_on(tmp_path: Path) -> None:
    release = threading.Event()

    def stuck(inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        release.wait(30)
        return {"a": 1}

    def quick(name: str) -> Any:
        return lambda inputs, call: {name: 1}

    tools = {"make_a": stuck, "make_a_slowly": quick("a"), "make_b": quick("b"), "make_c": quick("c")}
    problem = problem_from_dict(CHAIN)
    plan = plan_from_dict(
        {
            "tasks": [
                {"id": "t0", "tool": "make_a_slowly", "inputs": {"x": "$x"}},
                {
                    "id": "t1",
                    "tool": "make_a",
                    "inputs": {"x": "$x"},
                    "timeout": 0.2,
                    "on_failure": "skip_dependents",
                },
                {"id": "t2", "tool": "make_b", "deps": ["t0"], "inputs": {"a": "$t0.a"}},
                {"id": "t3", "tool": "make_c", "deps": ["t2"], "inputs": {"b": "$t2.b"}},
            ]
        }
    )
    try:
        outcome = start_run(
            problem, plan, tmp_path / "run", plan_source="plan", tools_spec=None, tools=tools
        ).run()
    finally:
        release.set()
    assert outcome["reason"] == "goal_met"
    assert outcome["tasks"]["t1"]["status"] == "failed"
    assert "no answer within 0.2 s" in outcome["tasks"]["t1"]["error"]


# -- limits and order ------------------------------------------------------------------------

WIDE: dict[str, Any] = {
    "name": "wide",
    "initial": ["x"],
    "criteria": ["long_end", "short"],
    "limits": {"max_parallel": 1},
    "resources": {"gpu": 1},
    "tools": {
        "long_start": {"duration": 10, "inputs": ["x"], "outputs": ["m"]},
        "long_end": {"duration": 100, "inputs": ["m"], "outputs": ["long_end"]},
        "short": {"duration": 20, "inputs": ["x"], "outputs": ["short"]},
    },
}


def test_ready_tasks_go_longest_remaining_path_first(tmp_path: Path) -> None:
    plan = {
        "tasks": [
            {"id": "s", "tool": "short", "inputs": {"x": "$x"}},
            {"id": "l1", "tool": "long_start", "inputs": {"x": "$x"}},
            {"id": "l2", "tool": "long_end", "deps": ["l1"], "inputs": {"m": "$l1.m"}},
        ]
    }
    outcome, events = simulate(tmp_path, WIDE, plan)
    assert outcome["reason"] == "goal_met"
    assert [e["task"] for e in events if e["event"] == "step.start"] == ["l1", "l2", "s"]


def test_max_parallel_and_resources_are_respected(tmp_path: Path) -> None:
    doc = {
        **WIDE,
        "limits": {"max_parallel": 2},
        "tools": {
            **WIDE["tools"],
            "short": {**WIDE["tools"]["short"], "uses": {"gpu": 1}},
            "long_start": {**WIDE["tools"]["long_start"], "uses": {"gpu": 1}},
        },
    }
    plan = {
        "tasks": [
            {"id": "s1", "tool": "short", "inputs": {"x": "$x"}},
            {"id": "s2", "tool": "short", "inputs": {"x": "$x"}},
            {"id": "l1", "tool": "long_start", "inputs": {"x": "$x"}},
            {"id": "l2", "tool": "long_end", "deps": ["l1"], "inputs": {"m": "$l1.m"}},
        ]
    }
    outcome, _ = simulate(tmp_path, doc, plan)
    spans = {tid: (t["start"], t["finish"]) for tid, t in outcome["tasks"].items()}
    gpu = ["s1", "s2", "l1"]
    for a in gpu:
        for b in gpu:
            if a < b:
                assert spans[a][1] <= spans[b][0] or spans[b][1] <= spans[a][0]  # never together
    moments = sorted({s for s, _ in spans.values()})
    assert all(sum(1 for s, f in spans.values() if s <= m < f) <= 2 for m in moments)


def test_when_false_skips_and_counts_as_satisfied(tmp_path: Path) -> None:
    doc = {
        "name": "w",
        "initial": ["x"],
        "criteria": ["c"],
        "tools": {
            "make_a": {"duration": 1, "inputs": ["x"], "outputs": ["a"]},
            "maybe": {"duration": 1, "inputs": ["a"], "outputs": ["b"]},
            "make_c": {"duration": 1, "inputs": ["a"], "outputs": ["c"]},
        },
    }
    plan = plan_from_dict(
        {
            "tasks": [
                {"id": "t1", "tool": "make_a", "inputs": {"x": "$x"}},
                {
                    "id": "t2",
                    "tool": "maybe",
                    "deps": ["t1"],
                    "inputs": {"a": "$t1.a"},
                    "when": "$t1.a.n > 5",
                },
                {"id": "t3", "tool": "make_c", "deps": ["t1", "t2"], "inputs": {"a": "$t1.a"}},
            ]
        }
    )
    tools: dict[str, ToolFn] = {
        "make_a": lambda i, c: {"a": {"n": 3}},
        "maybe": lambda i, c: {"b": 1},
        "make_c": lambda i, c: {"c": 1},
    }
    outcome = start_run(
        problem_from_dict(doc), plan, tmp_path / "run", plan_source="plan", tools_spec=None, tools=tools
    ).run()
    assert outcome["reason"] == "goal_met"
    assert [outcome["tasks"][t]["status"] for t in ("t1", "t2", "t3")] == ["done", "skipped", "done"]


def test_tool_failure_is_public() -> None:
    import evolve

    assert evolve.ToolFailure is ToolFailure
    assert ToolFailure("x", retryable=True).retryable


@pytest.mark.parametrize("bad", ["make_a=2", "nope=0.5", "make_a"])
def test_bad_fail_rates_are_refused(bad: str) -> None:
    from evolve.execute.simulate import parse_fail_rates
    from evolve.model.errors import EvolveError

    with pytest.raises(EvolveError, match="--fail"):
        parse_fail_rates([bad], problem_from_dict(CHAIN))


# -- the LLM operator as the replanner ---------------------------------------------------------


def replan_through_llm(
    tmp_path: Path, script: Callable[[dict[str, Any], int], Any]
) -> tuple[dict[str, Any], list[dict[str, Any]], str]:
    """Simulate the chain with make_a failing and the LLM operator, served by ``script`` on a
    real local endpoint, as the replanner; the outcome, the events and the operator's name."""
    from evolve.execute import ProposerReplanner
    from evolve.llm import make_llm_operator
    from evolve.llm.testing import ScriptedServer

    with ScriptedServer(script) as server:
        operator = make_llm_operator(
            server.url,
            "scripted-model",
            cache_dir=tmp_path / "cache",
            mode="patch",
            timeout=5.0,
            backoff=0.01,
        )
        with operator:
            outcome, events = simulate(
                tmp_path,
                CHAIN,
                chain_plan("replan"),
                fail={"make_a": 1.0},
                replanner=ProposerReplanner(operator),
            )
    return outcome, events, operator.name


def test_the_llm_operator_replans_through_a_real_endpoint(tmp_path: Path) -> None:
    from evolve.llm.testing import Scripted

    seen: list[dict[str, Any]] = []

    def script(body: dict[str, Any], count: int) -> Scripted:
        seen.append(body)
        patch = {
            "add": [{"id": "n1", "tool": "make_a_slowly", "inputs": {"x": "$x"}}],
            "update": [{"id": "t2", "deps": ["n1"], "inputs": {"a": "$n1.a"}}],
            "reason": "make_a is gone: make 'a' the slow way",
        }
        return Scripted(json.dumps(patch))

    outcome, events, name = replan_through_llm(tmp_path, script)
    assert outcome["reason"] == "goal_met", outcome["message"]
    assert len(seen) == 1
    draft = next(e for e in events if e["event"] == "plan.draft")
    assert draft["replanner"] == name
    ran = [t["tool"] for t in outcome["tasks"].values() if t["status"] == "done"]
    assert ran.count("make_a_slowly") == 1 and "make_c" in ran


def test_an_llm_reply_that_makes_no_valid_plan_ends_the_run_with_no_plan(tmp_path: Path) -> None:
    from evolve.llm.testing import Scripted

    def script(body: dict[str, Any], count: int) -> Scripted:
        return Scripted(
            json.dumps({"add": [{"id": "z", "tool": "teleport", "inputs": {}}], "reason": "magic"})
        )

    outcome, _, _ = replan_through_llm(tmp_path, script)
    assert outcome["reason"] == "no_plan"


class Crash(Exception):
    pass


def test_a_retry_waiting_when_the_run_stopped_keeps_its_time(tmp_path: Path) -> None:
    from evolve.execute import resume_run

    seen: list[str] = []

    def hook(point: str, task_id: str) -> None:
        if point == "before_dispatch" and task_id == "t1":
            seen.append(task_id)
            if len(seen) == 2:
                raise Crash  # the process stops before the retry is dispatched

    out = tmp_path / "run"
    executor = start_run(
        problem_from_dict(CHAIN),
        plan_from_dict(chain_plan("fail_plan", retries=3)),
        out,
        plan_source="plan",
        tools_spec=None,
        simulate=True,
        fail_rates={"make_a": 0.5},
        options=ExecuteOptions(backoff=5.0, seed=1),
        hook=hook,
    )
    with pytest.raises(Crash):
        executor.run()
    executor.journal.close()
    outcome = resume_run(out).run()
    events = events_of(out)
    no_retry_before_its_time(events)
    error = next(e for e in events if e["event"] == "step.error")
    retried = [e for e in events if e["event"] == "step.start" and e["task"] == "t1"][1]
    assert retried["time"] == error["retry_at"] == error["finished"] + 5.0
    assert outcome["tasks"]["t1"]["attempts"] >= 2
