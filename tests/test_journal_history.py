"""The journal as an append-only history, replayed by the code that applied it.

Every record a run applies is one history row, appended in the transaction that commits it, and
``--resume`` folds those rows through :meth:`RunState.apply`. The test that matters: after every
commit of a live run (each point a SIGKILL can leave the journal at), the history's replay equals
the live state field for field, on runs that retry, replan on a false assumption, wait for a
person and take their decision, and roll a horizon. A journal of the previous schema (version 3,
no history) is migrated once when opened and resumes to the same state.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from test_execute_state import differences

from evolve import load_problem
from evolve.execute import ExecuteOptions, SearchReplanner, resume_run, start_run
from evolve.execute.context import RunContext
from evolve.execute.journal import SCHEMA_VERSION, Journal, JournalError
from evolve.execute.people import commit_decision, decision
from evolve.execute.record_codec import decode, encode
from evolve.execute.records import Asked, CallStatus, Decided, Dispatched, Revised, Settled
from evolve.execute.state import RunState
from evolve.model.plan_file import load_plan
from evolve.model.status import TaskStatus

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """After every commit of any run: the journal's replay against the live state. Returns
    the faults found (``commit N: field``) and counts the commits checked."""
    faults: list[str] = []
    commits = [0]
    original = RunContext.commit

    def commit(self: RunContext, change: Any, meta: Any = None) -> None:
        original(self, change, meta)
        commits[0] += 1
        fresh = Journal(self.journal.path)
        try:
            replayed = RunState.restore(fresh)
        finally:
            fresh.close()
        faults.extend(f"commit {commits[0]}: {name}" for name in differences(replayed, self.state))

    monkeypatch.setattr(RunContext, "commit", commit)
    checked_commits.append(commits)
    return faults


checked_commits: list[list[int]] = []


def refund_tools(prior_refund: bool, ledger: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("refund_tools_history", EXAMPLES / "refund_tools.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_tools(prior_refund=prior_refund, ledger_path=ledger)


def test_a_replanned_run_replays_to_its_live_state_after_every_commit(
    tmp_path: Path, checked: list[str]
) -> None:
    problem = load_problem(EXAMPLES / "refund.yaml")
    plan = load_plan(EXAMPLES / "refund_plan.yaml")
    run = start_run(problem, plan, tmp_path / "run", plan_source="refund_plan.yaml", tools_spec=None,
                    tools=refund_tools(True, tmp_path / "ledger.json"),
                    replanner=SearchReplanner(generations=1, population=4, keep=2))
    outcome = run.run()
    assert outcome["revisions"][-1]["revision"] >= 1  # the false assumption replanned the run
    assert checked_commits[-1][0] > 10 and checked == []


def test_a_run_with_failures_and_retries_replays_after_every_commit(
    tmp_path: Path, checked: list[str]
) -> None:
    problem = load_problem(EXAMPLES / "refund.yaml")
    plan = load_plan(EXAMPLES / "refund_plan.yaml")
    run = start_run(problem, plan, tmp_path / "run", plan_source="refund_plan.yaml", tools_spec=None,
                    simulate=True, fail_rates={"orders.get": 0.6, "payments.lookup": 0.6},
                    options=ExecuteOptions(seed=4, max_steps=40, backoff=1.0),
                    replanner=SearchReplanner(generations=1, population=4, keep=2))
    run.run()
    assert RunState.restore(run.journal).failures  # some call failed and was tried again
    assert checked == []


def test_a_person_replays_after_every_commit(tmp_path: Path, checked: list[str]) -> None:
    problem = load_problem(EXAMPLES / "refund.yaml")
    plan = load_plan(EXAMPLES / "refund_human_plan.yaml")
    folder = tmp_path / "run"
    tools = refund_tools(False, tmp_path / "ledger.json")
    first = start_run(problem, plan, folder, plan_source="refund_human_plan.yaml", tools_spec=None,
                      tools=tools)
    assert first.run()["status"] == "waiting"
    first.journal.close()
    journal = Journal(folder / "journal.sqlite")
    approve(journal, problem)
    journal.close()
    assert resume_run(folder, tools=tools).run()["reason"] == "goal_met"
    kinds = {type(r).__name__ for r in Journal(folder / "journal.sqlite").history()}
    assert {"Revised", "Asked", "Decided", "Dispatched", "Settled"} <= kinds
    assert checked == []


def test_a_rolling_horizon_replays_after_every_commit(tmp_path: Path, checked: list[str]) -> None:
    problem = load_problem(EXAMPLES / "refund.yaml")
    plan = load_plan(EXAMPLES / "refund_plan.yaml")
    run = start_run(problem, plan, tmp_path / "run", plan_source="refund_plan.yaml", tools_spec=None,
                    simulate=True, options=ExecuteOptions(horizon=3, max_steps=60),
                    replanner=SearchReplanner(generations=1, population=4, keep=2))
    run.run()
    kinds = {type(r).__name__ for r in run.journal.history()}
    assert {"Revised", "Window"} <= kinds
    assert checked == []


def test_every_record_kind_round_trips_through_the_history() -> None:
    plan = load_plan(EXAMPLES / "refund_plan.yaml")
    records = [
        Revised(0, plan, ("t3",), "sig", {"invalidate": ["t3"]}, None, "why", 1.5),
        Dispatched(1, "t1", 1, "orders.get", "read", None, '{"a": 1}', 2.0),
        Settled("t1", "done", 1, "done", {"order": {"items": [1, 2]}}, finished=3.0, attempt=1),
        Asked(1, "t6", "approval", "approvals.manager", {"writes": [{"hash": "h"}]}, "h", 4.0, 5.0),
        Decided(1, "t6", "approved", "asha", 6.0, "ok", "h"),
    ]
    for record in records:
        assert decode(*encode(record)) == record


def approve(journal: Journal, problem: Any) -> None:
    """What ``evolve approve`` commits, for the one ask the run waits on."""
    [ask] = [r for r in journal.history(("Asked",)) if isinstance(r, Asked)]
    made = decision(RunState.restore(journal), problem, "run", ask.task_id, "approved", by="asha", at=1.0,
                    note="once")
    commit_decision(journal, made, 0.0)


def downgrade_to_version_3(path: Path) -> None:
    """The journal as the previous evolve wrote it: no history table, user_version 3."""
    db = sqlite3.connect(path)
    db.executescript("DROP TABLE history; PRAGMA user_version = 3;")
    db.close()


def test_a_version_3_journal_is_migrated_once_and_resumes(tmp_path: Path) -> None:
    problem = load_problem(EXAMPLES / "refund.yaml")
    plan = load_plan(EXAMPLES / "refund_human_plan.yaml")
    folder = tmp_path / "run"
    tools = refund_tools(False, tmp_path / "ledger.json")
    first = start_run(problem, plan, folder, plan_source="refund_human_plan.yaml", tools_spec=None,
                      tools=tools)
    assert first.run()["status"] == "waiting"
    live = first.state
    first.journal.close()
    downgrade_to_version_3(folder / "journal.sqlite")
    journal = Journal(folder / "journal.sqlite")
    assert journal.scalar("PRAGMA user_version") == SCHEMA_VERSION
    migrated = RunState.restore(journal)
    kept = ("plan", "revision", "status", "outputs", "asked", "latest", "decided", "calls", "replans")
    assert {k: getattr(migrated, k) for k in kept} == {k: getattr(live, k) for k in kept}
    rows = journal.scalar("SELECT COUNT(*) FROM history")
    journal.close()
    Journal(folder / "journal.sqlite").close()  # opened again: not migrated twice
    assert Journal(folder / "journal.sqlite").scalar("SELECT COUNT(*) FROM history") == rows
    journal = Journal(folder / "journal.sqlite")
    approve(journal, problem)
    journal.close()
    assert resume_run(folder, tools=tools).run()["reason"] == "goal_met"


def test_a_damaged_history_row_is_named(tmp_path: Path) -> None:
    problem = load_problem(EXAMPLES / "refund.yaml")
    plan = load_plan(EXAMPLES / "refund_plan.yaml")
    run = start_run(problem, plan, tmp_path / "run", plan_source="p", tools_spec=None, simulate=True)
    run.run()
    run.journal.db.execute("UPDATE history SET kind = 'Exploded' WHERE seq = 2")
    with pytest.raises(JournalError) as caught:
        RunState.restore(run.journal)
    assert "history row 2" in str(caught.value) and "Exploded" in str(caught.value)


def test_a_status_no_name_spells_is_damage_named(tmp_path: Path) -> None:
    """Statuses come back from the journal as their names (``TaskStatus``, ``CallStatus``): a row
    whose status text is none of them is a damaged journal, named, not a status passed on."""
    problem = load_problem(EXAMPLES / "refund.yaml")
    plan = load_plan(EXAMPLES / "refund_plan.yaml")
    run = start_run(problem, plan, tmp_path / "run", plan_source="p", tools_spec=None, simulate=True)
    run.run()
    journal = run.journal
    assert all(type(row.status) is TaskStatus for row in journal.tasks().values())
    assert all(type(call.status) is CallStatus for call in journal.calls())
    assert RunState.restore(journal).status == run.state.status
    assert all(type(status) is TaskStatus for status in RunState.restore(journal).status.values())
    seq = journal.scalar("SELECT MIN(seq) FROM history WHERE kind = 'Settled'")
    journal.db.execute("UPDATE history SET body = replace(body, '\"status\":\"done\"', "
                       "'\"status\":\"fine\"') WHERE seq = ?", (seq,))
    with pytest.raises(JournalError) as caught:
        RunState.restore(journal)
    assert f"history row {seq}" in str(caught.value) and "'fine'" in str(caught.value)
    journal.db.execute("UPDATE tasks SET status = 'fine' WHERE rowid = 1")
    with pytest.raises(JournalError, match=r"tasks: .* has status 'fine', not one of pending, "):
        journal.tasks()
    journal.db.execute("UPDATE calls SET status = 'gone' WHERE rowid = 1")
    with pytest.raises(JournalError, match=r"calls: .* has status 'gone', not one of dispatched, "):
        journal.calls()
