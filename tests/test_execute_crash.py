"""Fault injection: the executor killed with SIGKILL at each point of a call, then resumed with
``evolve execute --resume``. The tools log every side effect to a file (fsynced), so the test
sees what really happened: every write exactly once, reads run again when their result was lost,
a write whose tool cannot reconcile left ``unknown`` and never repeated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from crashing import LOG_TOOL, resume, runner, spawn

PROBLEM = """
name: crash
initial: [x]
criteria: [note]
tools:
  fetch: {duration: 1, inputs: [x], outputs: [a]}
  pay: {duration: 1, inputs: [a], outputs: [receipt], risk: write}
  pay_blind: {duration: 1, inputs: [a], outputs: [receipt], risk: write}
  note: {duration: 1, inputs: [receipt], outputs: [note]}
"""

TOOLS = LOG_TOOL + '''

def lines():
    try:
        with open(os.environ["CRASH_LOG"], encoding="utf-8") as stream:
            return stream.read().splitlines()
    except FileNotFoundError:
        return []


def fetch(inputs, call):
    log(f"read {call.task_id}")
    return {"a": {"amount": 5}}


class Pay:
    """A write with a provider-side record of keys: reconcile can tell whether it was made."""

    def __call__(self, inputs, call):
        log(f"write {call.idempotency_key}")
        return {"receipt": {"key": call.idempotency_key}}

    def reconcile(self, key):
        return {"receipt": {"key": key}} if f"write {key}" in lines() else None


def pay_blind(inputs, call):
    log(f"write {call.idempotency_key}")
    return {"receipt": {"key": call.idempotency_key}}


def note(inputs, call):
    log(f"read {call.task_id}")
    return {"note": "ok"}


TOOLS = {"fetch": fetch, "pay": Pay(), "pay_blind": pay_blind, "note": note}
'''


def plan(write_tool: str) -> dict[str, Any]:
    return {
        "tasks": [
            {"id": "t1", "tool": "fetch", "inputs": {"x": "$x"}},
            {
                "id": "t2",
                "tool": write_tool,
                "deps": ["t1"],
                "inputs": {"a": "$t1.a"},
                "idempotency_key": "pay:1",
            },
            {"id": "t3", "tool": "note", "deps": ["t2"], "inputs": {"receipt": "$t2.receipt"}},
        ]
    }


def crash_and_resume(
    tmp_path: Path, point: str, target: str, write_tool: str = "pay"
) -> tuple[Result, dict[str, Any], list[str]]:
    """The run killed at ``point`` of ``target``, then resumed: the resume's result, the outcome
    and the side effects of both."""
    run = spawn(tmp_path, PROBLEM, plan(write_tool), "crash_tools.py", TOOLS, runner("crash_tools.py"),
                point, target)
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert not (run.out / "outcome.json").exists()
    resumed = resume(run)
    outcome = json.loads((run.out / "outcome.json").read_text())
    return resumed, outcome, run.log.read_text().splitlines()


@pytest.mark.parametrize(
    ("point", "reconciled"),
    [
        ("before_dispatch", 0),  # nothing journaled for t2: it is dispatched for the first time
        ("dispatched", 0),  # journaled but never called: reconcile says no, so it is called once
        ("before_commit", 1),  # called, not committed: reconcile returns its receipt, no second call
        ("after_commit", 0),  # done: not run again
    ],
)
def test_every_write_happens_exactly_once(tmp_path: Path, point: str, reconciled: int) -> None:
    resumed, outcome, effects = crash_and_resume(tmp_path, point, "t2")
    assert resumed.exit_code == 0, resumed.output
    assert (outcome["status"], outcome["reason"]) == ("completed", "goal_met")
    assert effects.count("write pay:1") == 1
    assert effects.count("read t1") == 1  # done before the crash: kept
    assert effects.count("read t3") == 1
    assert outcome["reconciled"] == reconciled
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))
    assert "session.resume" in [e["event"] for e in events]


def test_a_read_whose_result_was_lost_runs_again(tmp_path: Path) -> None:
    resumed, outcome, effects = crash_and_resume(tmp_path, "before_commit", "t1")
    assert resumed.exit_code == 0, resumed.output
    assert effects.count("read t1") == 2  # the lost read is run again
    assert effects.count("write pay:1") == 1
    assert outcome["tasks"]["t1"]["attempts"] == 2


def test_a_write_its_tool_cannot_reconcile_is_unknown_and_never_repeated(tmp_path: Path) -> None:
    resumed, outcome, effects = crash_and_resume(tmp_path, "before_commit", "t2", write_tool="pay_blind")
    assert resumed.exit_code == 1
    assert (outcome["status"], outcome["reason"]) == ("failed", "task_failed")  # its policy: fail_plan
    assert outcome["unknown"] == ["t2"]
    assert effects.count("write pay:1") == 1
    assert "read t3" not in effects


def test_resuming_a_finished_run_changes_nothing(tmp_path: Path) -> None:
    resumed, outcome, effects = crash_and_resume(tmp_path, "after_commit", "t3")
    assert resumed.exit_code == 0
    env = {**os.environ, "CRASH_LOG": str(tmp_path / "effects.log")}
    again = subprocess.run(
        [
            sys.executable,
            "-m",
            "evolve",
            "execute",
            "--resume",
            str(tmp_path / "run"),
            "--json",
            "--no-report",
        ],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "effects.log").read_text().splitlines() == effects
    assert json.loads((tmp_path / "run" / "outcome.json").read_text())["steps"] == outcome["steps"]
