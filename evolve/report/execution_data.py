"""What the execution report reads from an ``evolve execute`` run folder, as plain values.

The folder is data: ``outcome.json`` and ``events.jsonl`` are parsed as JSON and nothing in them
is executed or imported (the journal is not opened: the events hold all the report needs).
A folder whose run has not ended yet has no ``outcome.json``; the report is then drawn from
the events alone and says so.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve.execute.session import JOURNAL
from evolve.model.errors import EvolveError

OUTCOME = "outcome.json"
EVENTS = "events.jsonl"


class ExecutionReportError(EvolveError):
    """A run folder the execution report cannot read: names the file and what is wrong."""


@dataclass(frozen=True)
class Segment:
    """One attempt of a task on the run clock: ``status`` is the ``step.end`` status
    (``done``, ``reconciled``, ``skipped``) or the ``step.error`` kind (``failure``, ``timeout``,
    ``exception``, ``unknown``, ``lost``, ``assumption``, ``expression``)."""

    start: float
    finish: float
    status: str
    attempt: int
    note: str = ""


@dataclass(frozen=True)
class TaskRow:
    """A task of any revision, with the plan's schedule for it and what really happened."""

    id: str
    tool: str
    risk: str
    status: str
    revision: int
    attempts: int
    planned: tuple[float, float] | None
    """Start and finish in the schedule of the revision it ran under (or last planned in)."""
    planned_revision: int | None
    segments: tuple[Segment, ...]
    error: str | None = None


@dataclass(frozen=True)
class Commit:
    """A revision of the plan as committed: when, and its schedule (task -> start, finish)."""

    revision: int
    time: float
    tasks: int
    planned: Mapping[str, tuple[float, float]]

    @property
    def base(self) -> float:
        """Where its schedule starts (what a chart of it alone is drawn from)."""
        return min((start for start, _ in self.planned.values()), default=0.0)


@dataclass(frozen=True)
class Revision:
    """One replan: what it invalidated, added and updated, why, and who proposed it."""

    revision: int
    time: float | None
    reason: str
    removed: tuple[str, ...]
    added: tuple[str, ...]
    revised: tuple[str, ...]
    replanner: str = ""
    note: str = ""
    base_version: int | None = None
    """The revision the patch was made against (the audit trail; ``None`` in older runs)."""
    evidence: Mapping[str, Any] = field(default_factory=dict)
    """What caused the replan: the task, the assumption or error, the values observed."""


@dataclass(frozen=True)
class Execution:
    folder: Path
    outcome: Mapping[str, Any]
    """``outcome.json`` (empty while the run has not ended)."""
    events: tuple[Mapping[str, Any], ...]
    rows: tuple[TaskRow, ...]
    commits: tuple[Commit, ...]
    revisions: tuple[Revision, ...]
    finished: bool
    virtual: bool
    """Whether the run clock was virtual (``--simulate``): then plan and run share one time unit."""
    end: float
    problem: str = ""
    notes: tuple[str, ...] = field(default=())

    def segment_count(self) -> int:
        return sum(len(row.segments) for row in self.rows)


def number(value: object) -> float | None:
    """A finite number, or ``None`` for anything else (a run folder is not trusted to be tidy)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def text(value: object) -> str:
    return "" if value is None else str(value)


def strings(value: object) -> tuple[str, ...]:
    return tuple(str(v) for v in value) if isinstance(value, Sequence) and not isinstance(value, str) else ()


def read_text(path: Path) -> str:
    """A run folder file's text, or an :class:`ExecutionReportError` naming it (missing, a
    folder, unreadable, not UTF-8)."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ExecutionReportError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ExecutionReportError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise ExecutionReportError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None


def read_events(path: Path) -> list[Mapping[str, Any]]:
    events: list[Mapping[str, Any]] = []
    lines = read_text(path).splitlines()
    for number_, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ExecutionReportError(f"{path}: line {number_}: invalid JSON ({exc.msg})") from None
        if not isinstance(event, Mapping) or not isinstance(event.get("event"), str):
            raise ExecutionReportError(f"{path}: line {number_}: expected an object with an 'event' key")
        events.append(event)
    return events


def is_execution_folder(path: str | Path) -> bool:
    """Whether ``path`` is an ``evolve execute`` run folder (its journal, and no search summary),
    so the commands that take a run folder (``report``, ``show``) can take either kind."""
    folder = Path(path)
    return (folder.is_dir() and (folder / JOURNAL).is_file()
            and not (folder / "summary.json").exists())


def load_execution(run_dir: str | Path) -> Execution:
    """The run folder's outcome and events, turned into rows, commits and revisions."""
    folder = Path(run_dir)
    if not folder.is_dir():
        raise ExecutionReportError(f"{folder}: not a run folder")
    events_path = folder / EVENTS
    if not events_path.exists():
        raise ExecutionReportError(f"{folder}: no {EVENTS}: not an evolve execute run folder")
    events = read_events(events_path)
    outcome_path = folder / OUTCOME
    outcome: Mapping[str, Any] = {}
    if outcome_path.exists():
        data = read_json(outcome_path)
        if not isinstance(data, Mapping):
            raise ExecutionReportError(f"{outcome_path}: expected a JSON object")
        outcome = data
    commits = tuple(read_commits(events))
    rows = tuple(read_rows(outcome, events, commits))
    times = [t for e in events if (t := number(e.get("time"))) is not None]
    times += [s.finish for row in rows for s in row.segments]
    elapsed = number(outcome.get("elapsed"))
    end = max([*times, elapsed or 0.0, 0.0])
    virtual = outcome.get("clock") == "virtual" or bool(outcome.get("simulate"))
    notes = () if outcome else ("the run has not ended (no outcome.json): drawn from its events so far",)
    return Execution(folder=folder, outcome=outcome, events=tuple(events), rows=rows, commits=commits,
                     revisions=tuple(read_revisions(outcome, events)), finished=bool(outcome),
                     virtual=virtual, end=end, problem=text(outcome.get("problem")) or folder.name,
                     notes=notes)


def read_commits(events: Sequence[Mapping[str, Any]]) -> list[Commit]:
    commits: list[Commit] = []
    for event in events:
        if event["event"] != "plan.commit":
            continue
        planned: dict[str, tuple[float, float]] = {}
        raw = event.get("planned")
        if isinstance(raw, Mapping):
            for tid, span in raw.items():
                if isinstance(span, Mapping):
                    start, finish = number(span.get("start")), number(span.get("finish"))
                    if start is not None and finish is not None:
                        planned[str(tid)] = (start, max(finish, start))
        revision = event.get("revision")
        commits.append(Commit(revision=revision if isinstance(revision, int) else len(commits),
                              time=number(event.get("time")) or 0.0,
                              tasks=event["tasks"] if isinstance(event.get("tasks"), int) else len(planned),
                              planned=planned))
    return commits


def read_segments(events: Sequence[Mapping[str, Any]]) -> dict[str, list[Segment]]:
    found: dict[str, list[Segment]] = {}
    for event in events:
        kind = event["event"]
        if kind not in ("step.end", "step.error"):
            continue
        task = event.get("task")
        if not isinstance(task, str):
            continue
        at = number(event.get("time")) or 0.0
        start = number(event.get("started"))
        finish = number(event.get("finished"))
        start = at if start is None else start
        finish = start if finish is None else max(finish, start)
        attempt = event["attempt"] if isinstance(event.get("attempt"), int) else 0
        if kind == "step.end":
            status = text(event.get("status")) or "done"
            note = text(event.get("reason"))
        else:
            status = text(event.get("kind")) or "failure"
            follow = text(event.get("next"))
            note = text(event.get("error")) + (f" -> {follow}" if follow else "")
        found.setdefault(task, []).append(Segment(start, finish, status, attempt, note))
    return found


def planned_for(tid: str, commits: Sequence[Commit], first_start: float | None
                ) -> tuple[tuple[float, float] | None, int | None]:
    """The task's span in the last revision that planned it before it started (or at all)."""
    chosen: tuple[float, float] | None = None
    revision: int | None = None
    for commit in commits:
        if first_start is not None and commit.time > first_start + 1e-9 and chosen is not None:
            break
        if tid in commit.planned:
            chosen, revision = commit.planned[tid], commit.revision
    return chosen, revision


def read_rows(outcome: Mapping[str, Any], events: Sequence[Mapping[str, Any]],
              commits: Sequence[Commit]) -> list[TaskRow]:
    segments = read_segments(events)
    tasks = outcome.get("tasks") if isinstance(outcome.get("tasks"), Mapping) else {}
    assert isinstance(tasks, Mapping)
    ids: list[str] = [str(t) for t in tasks]
    for event in events:  # tasks the outcome does not list (a run still going): from the events
        for tid in [event.get("task"), *(event.get("planned") or {})]:
            if isinstance(tid, str) and tid not in ids:
                ids.append(tid)
    tools = tool_names(events)
    rows = []
    for tid in ids:
        info = tasks.get(tid) if isinstance(tasks.get(tid), Mapping) else {}
        assert isinstance(info, Mapping)
        own = sorted(segments.get(tid, []), key=lambda s: (s.start, s.attempt))
        first = next((s.start for s in own if s.status not in ("skipped", "assumption")), None)
        planned, revision = planned_for(tid, commits, first)
        status = text(info.get("status")) or (own[-1].status if own else "pending")
        added = info.get("revision")
        rows.append(TaskRow(
            id=tid, tool=text(info.get("tool")) or tools.get(tid, "?"), risk=text(info.get("risk")) or "read",
            status=status, revision=added if isinstance(added, int) else (revision or 0),
            attempts=info["attempts"] if isinstance(info.get("attempts"), int) else len(own),
            planned=planned, planned_revision=revision, segments=tuple(own),
            error=text(info.get("error")) or None))
    return rows


def tool_names(events: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each task's tool, from the committed plans and the steps."""
    names: dict[str, str] = {}
    for event in events:
        plan = event.get("plan")
        if isinstance(plan, Mapping) and isinstance(plan.get("tasks"), list):
            for task in plan["tasks"]:
                if isinstance(task, Mapping) and isinstance(task.get("id"), str):
                    names[task["id"]] = text(task.get("tool"))
        if isinstance(event.get("task"), str) and isinstance(event.get("tool"), str):
            names[event["task"]] = event["tool"]
    return names


def read_revisions(outcome: Mapping[str, Any], events: Sequence[Mapping[str, Any]]) -> list[Revision]:
    drafts = {e.get("revision"): e for e in events if e["event"] == "plan.draft"}
    diffs = [e for e in events if e["event"] == "plan.diff"]
    listed = outcome.get("revisions")
    source: Sequence[Any] = listed if isinstance(listed, list) and listed else diffs
    revisions: list[Revision] = []
    for item in source:
        if not isinstance(item, Mapping):
            continue
        number_ = item.get("revision")
        diff_event = next((d for d in diffs if d.get("revision") == number_), None)
        draft = drafts.get(number_, {})
        revisions.append(Revision(
            revision=number_ if isinstance(number_, int) else len(revisions) + 1,
            time=number(diff_event.get("time")) if diff_event is not None else number(item.get("time")),
            reason=text(item.get("reason")), removed=strings(item.get("removed")),
            added=strings(item.get("added")), revised=strings(item.get("revised")),
            replanner=text(draft.get("replanner")), note=text(draft.get("note")),
            base_version=base if isinstance(base := item.get("base_version"), int) else None,
            evidence=found if isinstance(found := item.get("evidence"), Mapping) else {}))
    return revisions
