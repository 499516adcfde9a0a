"""The journal: a run's durable state, in SQLite (WAL mode, the standard library's ``sqlite3``).

Everything the runtime knows that it could not recompute lives here, written in transactions
that each take the state from one consistent point to the next: a revision of the plan with the
rows of its tasks; the *dispatch record* of a call (call row ``dispatched``, task ``dispatched``),
committed before the call is made; the call's *result* (outputs and status ``done``, or the
error), committed in one transaction after it returns. The events of ``events.jsonl`` are rows of
the same transactions, so the event log never tells more or less than the state: after a crash,
``events.jsonl`` is written again from the table.

A journal is data: opening one reads JSON text and numbers, and never executes anything.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.model.errors import EvolveError

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS revisions (
    revision INTEGER PRIMARY KEY, plan TEXT NOT NULL, patch TEXT, diff TEXT, reason TEXT,
    created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY, revision INTEGER NOT NULL, tool TEXT NOT NULL, risk TEXT NOT NULL,
    status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,
    outputs TEXT, error TEXT, started REAL, finished REAL, planned_start REAL, planned_finish REAL,
    first_failure REAL);
CREATE TABLE IF NOT EXISTS calls (
    call_id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, attempt INTEGER NOT NULL, tool TEXT NOT NULL,
    risk TEXT NOT NULL, idempotency_key TEXT, status TEXT NOT NULL, inputs TEXT, outputs TEXT,
    error TEXT, started REAL, finished REAL);
CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);
"""

TASK_STATUSES = ("pending", "dispatched", "done", "failed", "skipped", "unknown", "invalidated")
CALL_STATUSES = ("dispatched", "done", "failed", "timeout", "reconciled", "lost", "unknown")
"""A call's fate: ``lost`` is a read found dispatched after a crash (it is run again);
``reconciled`` a write found so and settled by its tool's ``reconcile``; ``unknown`` a write
found so whose tool cannot tell."""

SYNC_MODES = ("FULL", "NORMAL", "OFF")


class JournalError(EvolveError):
    """A journal that cannot be used: names the file and the fault."""


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


@dataclass(frozen=True)
class TaskRow:
    """One task as the journal holds it."""

    task_id: str
    revision: int
    tool: str
    risk: str
    status: str
    attempts: int = 0
    failures: int = 0
    outputs: Mapping[str, Any] | None = None
    error: str | None = None
    started: float | None = None
    finished: float | None = None
    planned_start: float | None = None
    planned_finish: float | None = None
    first_failure: float | None = None


@dataclass(frozen=True)
class CallRow:
    call_id: int
    task_id: str
    attempt: int
    tool: str
    risk: str
    idempotency_key: str | None
    status: str
    inputs: Any
    outputs: Any
    error: str | None
    started: float | None
    finished: float | None


@dataclass(frozen=True)
class Revision:
    revision: int
    plan: dict[str, Any]
    patch: dict[str, Any] | None
    diff: dict[str, Any] | None
    reason: str | None
    created: float


@dataclass(frozen=True)
class Dispatch:
    """A call about to be made, as its dispatch record holds it."""

    task_id: str
    attempt: int
    tool: str
    risk: str
    key: str | None
    inputs_json: str
    started: float
    event: dict[str, Any]


@dataclass(frozen=True)
class Settle:
    """A call's result (or a task settled without a call: ``call_id`` ``None``)."""

    call_id: int | None
    task_id: str
    call_status: str
    task_status: str
    outputs_json: str | None
    error: str | None
    finished: float | None
    failures: int | None = None
    first_failure: float | None = None
    events: tuple[dict[str, Any], ...] = ()


TASK_COLUMNS = (
    "task_id",
    "revision",
    "tool",
    "risk",
    "status",
    "attempts",
    "failures",
    "outputs",
    "error",
    "started",
    "finished",
    "planned_start",
    "planned_finish",
    "first_failure",
)


class Journal:
    """One open journal. Methods that change state are one transaction each."""

    def __init__(self, path: str | Path, *, sync: str = defaults.EXECUTE_JOURNAL_SYNC) -> None:
        if sync not in SYNC_MODES:
            raise JournalError(f"journal sync must be one of {', '.join(SYNC_MODES)}, got {sync!r}")
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA synchronous={sync}")
            self.db.executescript(SCHEMA)
            self.seq = self.scalar("SELECT COALESCE(MAX(seq), 0) FROM events")
            self.next_call = self.scalar("SELECT COALESCE(MAX(call_id), 0) FROM calls") + 1
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"{self.path}: not a usable journal ({exc})") from None

    def close(self) -> None:
        self.db.close()

    def scalar(self, sql: str, args: Sequence[Any] = ()) -> int:
        row = self.db.execute(sql, tuple(args)).fetchone()
        return int(row[0]) if row is not None and row[0] is not None else 0

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; a failure rolls everything back."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def put_meta(self, db: sqlite3.Connection, meta: Mapping[str, Any] | None) -> None:
        for key, value in (meta or {}).items():
            db.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET "
                "value = excluded.value",
                (key, dumps(value)),
            )

    def add_events(self, db: sqlite3.Connection, events: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
        """Number ``events`` and insert them (inside the caller's transaction)."""
        out = []
        for event in events:
            self.seq += 1
            body = {**event, "seq": self.seq}
            db.execute("INSERT INTO events (seq, body) VALUES (?, ?)", (self.seq, dumps(body)))
            out.append(body)
        return out

    # -- reading ---------------------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        return {k: loads(v) for k, v in self.db.execute("SELECT key, value FROM meta")}

    def revisions(self) -> list[Revision]:
        rows = self.db.execute(
            "SELECT revision, plan, patch, diff, reason, created FROM revisions ORDER BY revision"
        )
        return [Revision(r[0], loads(r[1]), loads(r[2]), loads(r[3]), r[4], r[5]) for r in rows]

    def tasks(self) -> dict[str, TaskRow]:
        rows = self.db.execute(f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks ORDER BY rowid")
        found = {}
        for r in rows:
            values = dict(zip(TASK_COLUMNS, r))
            values["outputs"] = loads(values["outputs"])
            found[values["task_id"]] = TaskRow(**values)
        return found

    def calls(self, status: str | None = None) -> list[CallRow]:
        sql = (
            "SELECT call_id, task_id, attempt, tool, risk, idempotency_key, status, inputs, outputs, "
            "error, started, finished FROM calls"
        )
        rows = self.db.execute(
            sql + (" WHERE status = ?" if status else "") + " ORDER BY call_id", (status,) if status else ()
        )
        return [
            CallRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], loads(r[7]), loads(r[8]), r[9], r[10], r[11])
            for r in rows
        ]

    def call_count(self) -> int:
        """Tool calls made: every dispatch record (a step each, whatever became of it)."""
        return self.scalar("SELECT COUNT(*) FROM calls")

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(body) for (body,) in self.db.execute("SELECT body FROM events ORDER BY seq")]

    # -- writing ---------------------------------------------------------------------------

    def commit_revision(
        self,
        revision: Revision,
        rows: Iterable[TaskRow],
        status_changes: Mapping[str, str],
        events: Iterable[dict[str, Any]],
        meta: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """A new revision of the plan: its record, the rows of its new tasks (or their new
        planned times), and the tasks it invalidates, in one transaction."""
        with self.transaction() as db:
            db.execute(
                "INSERT INTO revisions (revision, plan, patch, diff, reason, created) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (
                    revision.revision,
                    dumps(revision.plan),
                    dumps(revision.patch),
                    dumps(revision.diff),
                    revision.reason,
                    revision.created,
                ),
            )
            for row in rows:
                db.execute(
                    f"INSERT INTO tasks ({', '.join(TASK_COLUMNS)}) "
                    f"VALUES ({', '.join('?' * len(TASK_COLUMNS))}) "
                    "ON CONFLICT(task_id) DO UPDATE SET planned_start = excluded.planned_start, "
                    "planned_finish = excluded.planned_finish",
                    (
                        row.task_id,
                        row.revision,
                        row.tool,
                        row.risk,
                        row.status,
                        row.attempts,
                        row.failures,
                        None if row.outputs is None else dumps(row.outputs),
                        row.error,
                        row.started,
                        row.finished,
                        row.planned_start,
                        row.planned_finish,
                        row.first_failure,
                    ),
                )
            for task_id, status in status_changes.items():
                db.execute("UPDATE tasks SET status = ? WHERE task_id = ?", (status, task_id))
            self.put_meta(db, meta)
            return self.add_events(db, events)

    def dispatch(self, item: Dispatch) -> tuple[int, list[dict[str, Any]]]:
        """One dispatch record, committed before the call is made: the call's id and events."""
        ids, events = self.dispatch_many([item])
        return ids[0], events

    def dispatch_many(self, items: Sequence[Dispatch]) -> tuple[list[int], list[dict[str, Any]]]:
        """The dispatch records of calls about to be made together, in one transaction (one sync
        to the disk for a whole wave of ready tasks): the calls' ids and the events."""
        ids = list(range(self.next_call, self.next_call + len(items)))
        with self.transaction() as db:
            for call_id, item in zip(ids, items):
                db.execute(
                    "INSERT INTO calls (call_id, task_id, attempt, tool, risk, idempotency_key, status, "
                    "inputs, started) VALUES (?, ?, ?, ?, ?, ?, 'dispatched', ?, ?)",
                    (
                        call_id,
                        item.task_id,
                        item.attempt,
                        item.tool,
                        item.risk,
                        item.key,
                        item.inputs_json,
                        item.started,
                    ),
                )
                db.execute(
                    "UPDATE tasks SET status = 'dispatched', attempts = ?, started = ? WHERE task_id = ?",
                    (item.attempt, item.started, item.task_id),
                )
            events = self.add_events(db, [item.event for item in items])
        self.next_call += len(items)
        return ids, events

    def settle(
        self,
        call_id: int | None,
        task_id: str,
        *,
        call_status: str,
        task_status: str,
        outputs_json: str | None,
        error: str | None,
        finished: float | None,
        failures: int | None = None,
        first_failure: float | None = None,
        events: Iterable[dict[str, Any]] = (),
        meta: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """A call's result and its task's new status in one transaction (``call_id`` ``None``:
        a task settled without a call, e.g. skipped)."""
        item = Settle(
            call_id,
            task_id,
            call_status,
            task_status,
            outputs_json,
            error,
            finished,
            failures,
            first_failure,
            tuple(events),
        )
        return self.settle_many([item], meta)

    def settle_many(
        self, items: Sequence[Settle], meta: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Results of calls that came back together, in one transaction: each call's outputs and
        its task's status change together, and all of them or none."""
        with self.transaction() as db:
            for item in items:
                if item.call_id is not None:
                    db.execute(
                        "UPDATE calls SET status = ?, outputs = ?, error = ?, finished = ? WHERE call_id = ?",
                        (item.call_status, item.outputs_json, item.error, item.finished, item.call_id),
                    )
                db.execute(
                    "UPDATE tasks SET status = ?, outputs = COALESCE(?, outputs), error = ?, "
                    "finished = COALESCE(?, finished), failures = COALESCE(?, failures), "
                    "first_failure = COALESCE(first_failure, ?) WHERE task_id = ?",
                    (
                        item.task_status,
                        item.outputs_json,
                        item.error,
                        item.finished,
                        item.failures,
                        item.first_failure,
                        item.task_id,
                    ),
                )
            self.put_meta(db, meta)
            return self.add_events(db, [event for item in items for event in item.events])

    def record(
        self, events: Iterable[dict[str, Any]], meta: Mapping[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """Events and run-level facts (a replan asked for, the end of a session) in one transaction."""
        with self.transaction() as db:
            self.put_meta(db, meta)
            return self.add_events(db, events)
