"""A run folder's side of a person's decision: what it waits for, and a decision committed.

``evolve pending`` / ``approve`` / ``reject`` / ``answer`` (:mod:`evolve.cli.human`) and the web
inbox of ``evolve serve`` (:mod:`evolve.serve`) both go through these two functions, so a decision
taken in a browser is checked and journaled exactly like one taken on the command line: the
same checks (:func:`~evolve.execute.people.decision`), the same record and event, one transaction
that is refused when the ask was decided meanwhile (the first of two people wins).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from evolve.execute.people import (
    commit_decision,
    commit_resolution,
    decision,
    pending,
    resolution,
    unresolved,
)
from evolve.execute.records import AskKind, Decided, Verdict
from evolve.execute.session import open_run, read_run
from evolve.execute.state import RunState


def pending_in(folder: Path) -> list[dict[str, Any]]:
    """What the run in ``folder`` waits for (:func:`~evolve.execute.people.pending`), read
    without writing to its journal."""
    journal, _ = open_run(folder, read_only=True)  # the problem is not needed: not parsed
    try:
        return pending(RunState.restore(journal))
    finally:
        journal.close()


def unresolved_in(folder: Path) -> list[dict[str, Any]]:
    """The writes of the run in ``folder`` whose outcome is unknown, each awaiting ``evolve
    resolve`` (:func:`~evolve.execute.people.unresolved`), read without writing to its journal.
    Kept apart from :func:`pending_in`: they are no ask a person answers in the inbox."""
    journal, _ = open_run(folder, read_only=True)
    try:
        return unresolved(RunState.restore(journal), journal)
    finally:
        journal.close()


def describe(item: dict[str, Any]) -> list[str]:
    """One pending item in a few lines: the task, the tool, since when, the exact action (what
    ``evolve pending`` prints, and the web inbox shows); a write whose outcome is unknown: its
    key and inputs, and how to resolve it."""
    if item["kind"] == "resolve":
        inputs = json.dumps(item["inputs"], sort_keys=True, default=str)
        return [f"{item['task']:<6} {item['tool']}  resolve  key {item['idempotency_key']}",
                f"    the write's outcome is unknown (inputs {inputs}): evolve resolve RUN {item['task']} "
                "--done --output FILE.json, or --not-done"]
    step = f" [{item['step']}]" if item.get("step", item["task"]) != item["task"] else ""
    head = f"{item['task'] + step:<6} {item['tool']}  {item['kind']}  since {item['since']}"
    if item["kind"] != AskKind.APPROVAL:
        return [head]
    lines = [f"{head}  action {item['action_hash'][:12]}"]
    for write in item["action"]["writes"]:
        inputs = json.dumps(write["inputs"], sort_keys=True, default=str)
        lines.append(f"    approves {write['task']} {write['tool']} {inputs}")
    if not item["action"]["writes"]:
        lines.append("    approves no write (none is downstream of it)")
    return lines


def decide_in(
    folder: Path,
    task_id: str,
    verdict: Verdict,
    *,
    by: str,
    note: str | None,
    action: str | None = None,
    outputs: Any = None,
    name: str | None = None,
) -> Decided:
    """Check a person's decision against the run in ``folder`` and commit it (one transaction),
    or raise why not (:class:`~evolve.execute.people.DecisionError`, or a
    :class:`~evolve.execute.journal.JournalError` when another decision won the race). ``name``
    is how messages call the run (default: its folder)."""
    journal, _, problem = read_run(folder)
    try:
        state = RunState.restore(journal)
        made = decision(
            state, problem, name or str(folder), task_id, verdict, by=by, at=time.time(), note=note,
            action=action, outputs=outputs,
        )
        events = journal.events()
        commit_decision(journal, made, float(events[-1].get("time", 0.0)) if events else 0.0)
    finally:
        journal.close()
    return made


def resolve_in(
    folder: Path,
    task_id: str,
    done: bool,
    *,
    by: str,
    note: str | None,
    outputs: Any = None,
) -> None:
    """Commit a person's word on a write of the run in ``folder`` whose outcome is unknown
    (:func:`~evolve.execute.people.resolution`: done with ``outputs``, or not done), in one
    transaction, or raise why not (:class:`~evolve.execute.people.DecisionError`)."""
    journal, _, problem = read_run(folder)
    try:
        events = journal.events()
        records, event = resolution(
            RunState.restore(journal), problem, journal, str(folder), task_id, done, by=by,
            at=time.time(), time=float(events[-1].get("time", 0.0)) if events else 0.0, note=note,
            outputs=outputs,
        )
        commit_resolution(journal, records, event)
    finally:
        journal.close()
