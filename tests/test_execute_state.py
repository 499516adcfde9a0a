"""RunState, its fold over the journal, the transitions and the journal's schema version.

The claim the executor rests on: the state in memory is the journal's fold. It is checked at
every point a crash test kills the process (the four hook points of every call), for runs that
retry, skip, cascade, fail and replan."""

from __future__ import annotations

import dataclasses
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from test_execute_properties import runs

from evolve.cli.main import cli
from evolve.execute import ExecuteOptions, SearchReplanner, start_run
from evolve.execute.dispatch import VirtualClock
from evolve.execute.events import Events
from evolve.execute.executor import Executor
from evolve.execute.journal import SCHEMA_VERSION, Journal, JournalError
from evolve.execute.outcome import Stop
from evolve.execute.records import Dispatched, ReplanAsked, ReplanTried, Revised, Settled
from evolve.execute.retry import RetryPolicy
from evolve.execute.session import read_run
from evolve.execute.state import RunState
from evolve.execute.transitions import call_failed, failed_for_good, lost, replan_asked, skipped, succeeded
from evolve.model.plan import Plan, Task
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict

PROBLEM = problem_from_dict(
    {
        "name": "state",
        "initial": ["x"],
        "criteria": ["c"],
        "tools": {
            "make_a": {"duration": 1, "inputs": ["x"], "outputs": ["a"]},
            "make_a_too": {"duration": 2, "inputs": ["x"], "outputs": ["a"]},
            "make_b": {"duration": 1, "inputs": ["a"], "outputs": ["b"]},
            "make_c": {"duration": 1, "inputs": ["b"], "outputs": ["c"]},
            "side": {"duration": 1, "inputs": ["x"], "outputs": ["s"], "risk": "write"},
            "note": {"duration": 1, "inputs": ["s"], "outputs": ["n"]},
        },
    }
)


def plan_of(policy: str, retries: int) -> Plan:
    return plan_from_dict(
        {
            "tasks": [
                {
                    "id": "t1",
                    "tool": "make_a",
                    "inputs": {"x": "$x"},
                    "on_failure": policy,
                    "retries": retries,
                },
                {"id": "t2", "tool": "make_b", "deps": ["t1"], "inputs": {"a": "$t1.a"}},
                {"id": "t3", "tool": "make_c", "deps": ["t2"], "inputs": {"b": "$t2.b"}},
                {"id": "s1", "tool": "side", "inputs": {"x": "$x"}, "idempotency_key": "s1", "retries": 1},
                {"id": "s2", "tool": "note", "deps": ["s1"], "inputs": {"s": "$s1.s"}, "when": "$s1.s != 0"},
            ]
        }
    )


def differences(replayed: RunState, live: RunState) -> list[str]:
    """The fields in which the history's replay differs from the live state: none, field for
    field (the plan compared as a value, every map and set in full)."""
    fields = dataclasses.fields(RunState)
    return [f.name for f in fields if getattr(replayed, f.name) != getattr(live, f.name)]


RUNS = [
    ("retry", 3, 0.5, 1),
    ("skip_dependents", 0, 0.9, 2),
    ("replan", 0, 1.0, 3),
    ("fail_plan", 1, 0.7, 4),
    ("retry", 2, 0.6, 5),
]
"""(t1's on_failure, its retries, the fail rate of make_a and side, the seed)."""


@dataclass
class Watched:
    """A simulated run whose hook folds the journal at every point and compares with memory."""

    executor: Executor
    points: list[str]
    disagree: list[tuple[str, str]]


def watched(
    problem: Problem, plan: Plan, folder: Path, rates: dict[str, float], seed: int, max_steps: int
) -> Watched:
    points: list[str] = []
    disagree: list[tuple[str, str]] = []
    holder: list[Executor] = []

    def hook(point: str, task_id: str) -> None:
        if holder:
            points.append(point)
            for name in differences(RunState.restore(holder[0].journal), holder[0].state):
                disagree.append((point, f"{task_id}: {name}"))

    executor = start_run(
        problem,
        plan,
        folder,
        plan_source="plan",
        tools_spec=None,
        simulate=True,
        fail_rates=rates,
        options=ExecuteOptions(seed=seed, backoff=1.0, max_steps=max_steps),
        replanner=SearchReplanner(generations=1, population=4, keep=2),
        hook=hook,
    )
    holder.append(executor)
    return Watched(executor, points, disagree)


def watched_run(folder: Path, run: tuple[str, int, float, int]) -> Watched:
    policy, retries, rate, seed = run
    return watched(PROBLEM, plan_of(policy, retries), folder, {"make_a": rate, "side": rate}, seed, 30)


@pytest.mark.parametrize("run", RUNS)
def test_the_state_is_the_journals_fold_at_every_point_a_crash_can_hit(
    tmp_path: Path, run: tuple[str, int, float, int]
) -> None:
    watch = watched_run(tmp_path / "run", run)
    outcome = watch.executor.run()
    assert watch.disagree == []
    assert differences(RunState.restore(watch.executor.journal), watch.executor.state) == []
    assert {"before_dispatch", "dispatched", "before_commit", "after_commit"} <= set(watch.points)
    assert outcome["steps"] == watch.executor.state.steps


def test_the_runs_above_reach_the_transitions_they_are_meant_to(tmp_path: Path) -> None:
    """The fold test is only as good as its runs: between them they retry, cascade and replan."""
    kinds: set[str] = set()
    for i, run in enumerate(RUNS):
        executor = watched_run(tmp_path / str(i), run).executor
        executor.run()
        state = executor.state
        kinds |= {"retry"} if any(state.failures.values()) else set()
        kinds |= {"cascade"} if state.cascaded else set()
        kinds |= {"replan"} if state.revision > 0 else set()
    assert kinds == {"retry", "cascade", "replan"}


# -- apply, one record kind at a time ---------------------------------------------------------


def fresh() -> RunState:
    state = RunState()
    state.apply(Revised(0, plan_of("retry", 2), (), "sig0"))
    return state


def test_a_revision_makes_every_new_task_pending_and_clears_the_replan_request() -> None:
    state = fresh()
    state.apply(ReplanAsked(("make_a",), "t1 failed"))
    assert state.replan == "t1 failed" and state.excluded == {"make_a"}
    state.apply(ReplanTried(1))
    new = plan_of("retry", 2).with_tasks([Task(id="t9", tool="make_a_too")])
    state.apply(Revised(1, new, ("t1",), "sig1"))
    assert state.status["t1"] == "invalidated" and state.status["t9"] == "pending"
    assert state.replan is None and state.excluded == {"make_a"}  # the exclusion stays
    assert (state.revision, state.replans, state.signatures) == (1, 1, {"sig0", "sig1"})


def test_dispatch_then_retry_then_done() -> None:
    state = fresh()
    state.apply(Dispatched(1, "t1", 1, "make_a", "read", None, "{}", 0.0))
    assert (state.status["t1"], state.attempts["t1"], state.calls, state.steps) == ("dispatched", 1, 1, 1)
    state.apply(
        Settled("t1", "pending", 1, "failed", error="boom", failures=1, first_failure=1.0, retry_at=2.0)
    )
    assert (state.status["t1"], state.retry_at, state.failures["t1"]) == ("pending", {"t1": 2.0}, 1)
    state.apply(Dispatched(2, "t1", 2, "make_a", "read", None, "{}", 2.0))
    assert state.retry_at == {}
    state.apply(Settled("t1", "pending", 2, "failed", failures=2, first_failure=3.0, retry_at=4.0))
    assert state.first_failure["t1"] == 1.0  # the first failure's time is kept
    state.apply(Settled("t1", "done", 3, "done", outputs={"a": 1}, finished=5.0))
    assert state.status["t1"] == "done" and state.outputs["t1"] == {"a": 1} and state.retry_at == {}


def test_a_cascaded_skip_is_remembered() -> None:
    state = fresh()
    state.apply(Settled("t2", "skipped", error="an upstream task failed", cascaded=True))
    state.apply(Settled("t3", "skipped"))
    assert state.cascaded == {"t2"}


# -- transitions: pure, from (task, result, state, policy) to records -------------------------


def events() -> Events:
    return Events(VirtualClock(7.0), PROBLEM)


def test_a_retryable_failure_within_the_policy_waits_for_its_time() -> None:
    state = fresh()
    task = plan_of("retry", 2).by_id()["t1"]
    policy = RetryPolicy(retries=2, initial=1.0, cap=10.0, window=100.0)
    kwargs: dict[str, Any] = dict(call_id=1, kind="failure", error="boom", retryable=True, started=6.0)
    change = call_failed(task, finished=7.0, risk="read", state=state, policy=policy, ev=events(), **kwargs)
    (record,) = change.records
    assert isinstance(record, Settled) and change.stop is None
    assert (record.status, record.retry_at, record.failures, record.first_failure) == ("pending", 8.0, 1, 7.0)
    assert change.events[0]["next"] == "retry" and change.events[0]["retry_at"] == 8.0
    state.apply(record)
    state.apply(Settled("t1", "pending", failures=2, first_failure=7.0))
    final = call_failed(task, finished=9.0, risk="read", state=state, policy=policy, ev=events(), **kwargs)
    (record,) = final.records
    assert isinstance(record, Settled)
    assert (record.status, record.error) == ("failed", "boom (after 3 attempts)")
    assert final.stop == Stop("task_failed", "t1 (make_a) failed: boom (after 3 attempts)")


@pytest.mark.parametrize(
    ("policy", "kinds", "stops"),
    [
        ("fail_plan", [Settled], True),
        ("retry", [Settled], True),
        ("skip_dependents", [Settled], False),
        ("replan", [Settled, ReplanAsked], False),
    ],
)
def test_a_final_failure_is_decided_by_on_failure(policy: str, kinds: list[type], stops: bool) -> None:
    task = plan_of(policy, 0).by_id()["t1"]
    change = failed_for_good(
        task, "failure", "boom", state=fresh(), ev=events(), call_id=3, call_status="failed"
    )
    assert [type(r) for r in change.records] == kinds
    assert (change.stop is not None) == stops
    assert change.events[0]["next"] == ("fail_plan" if policy == "retry" else policy)
    if policy == "replan":
        assert change.records[1] == ReplanAsked(("make_a",), "t1 (make_a) failed: boom")


def test_an_unknown_write_is_left_unknown() -> None:
    task = plan_of("skip_dependents", 0).by_id()["s1"]
    change = failed_for_good(
        task, "unknown", "cut off", state=fresh(), ev=events(), call_id=1, call_status="unknown"
    )
    (record,) = change.records
    assert isinstance(record, Settled) and (record.status, record.call_status) == ("unknown", "unknown")


def test_skip_lost_replan_and_success_records() -> None:
    state = fresh()
    tasks = plan_of("retry", 0).by_id()
    cascade = skipped(tasks["t2"], "an upstream task failed", cascade=True, ev=events())
    assert cascade.records == (Settled("t2", "skipped", error="an upstream task failed", cascaded=True),)
    plain = skipped(tasks["s2"], "when is false", cascade=False, ev=events())
    assert plain.records == (Settled("s2", "skipped"),) and plain.events[0]["reason"] == "when is false"
    again = lost(tasks["t1"], call_id=4, attempt=2, risk="read", started=1.0, ev=events())
    assert again.records[0] == Settled(
        "t1", "pending", 4, "lost", error="the process stopped during the call", attempt=2
    )
    asked = replan_asked(tasks["t1"], "t1 assumes x, which is false", "assumption", state=state, ev=events())
    assert asked.records == (ReplanAsked(("make_a",), "t1 assumes x, which is false"),)
    ok = succeeded(
        tasks["t1"],
        call_id=5,
        call_status="reconciled",
        outputs={"a": 2},
        started=1.0,
        finished=2.0,
        attempt=1,
        risk="read",
        ev=events(),
    )
    assert ok.records == (Settled("t1", "done", 5, "reconciled", {"a": 2}, finished=2.0),)
    assert ok.events[0]["status"] == "reconciled" and ok.events[0]["time"] == 7.0


# -- the journal's schema version -------------------------------------------------------------


def test_a_new_journal_has_the_current_schema_version(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.sqlite")
    assert journal.scalar("PRAGMA user_version") == SCHEMA_VERSION
    journal.close()
    Journal(tmp_path / "j.sqlite").close()  # and opens again


def test_a_journal_of_the_old_schema_is_refused_in_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    db = sqlite3.connect(run / "journal.sqlite")
    db.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE tasks (task_id TEXT PRIMARY KEY, revision INTEGER NOT NULL, tool TEXT NOT NULL,"
        " risk TEXT NOT NULL, status TEXT NOT NULL);"
    )
    db.close()
    with pytest.raises(JournalError) as caught:
        read_run(run)
    message = str(caught.value)
    assert "\n" not in message and "journal.sqlite" in message
    assert "schema version 1" in message and f"version {SCHEMA_VERSION}" in message
    result = CliRunner().invoke(cli, ["execute", "--resume", str(run)])
    assert result.exit_code == 2 and result.output.strip() == f"error: {message}"
    assert "Traceback" not in result.output


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(runs())
def test_any_simulated_run_keeps_memory_and_journal_in_agreement(
    case: tuple[Problem, Plan, dict[str, float], int, int],
) -> None:
    """The fold test on the property test's runs: any problem, plan, policies and failures."""
    problem, plan, rates, seed, max_steps = case
    with tempfile.TemporaryDirectory() as tmp:
        watch = watched(problem, plan, Path(tmp) / "run", rates, seed, max_steps)
        watch.executor.run()
        assert watch.disagree == []
        assert differences(RunState.restore(watch.executor.journal), watch.executor.state) == []
