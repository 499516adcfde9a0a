"""The journal: a run's durable state, in SQLite (WAL mode, the standard library's ``sqlite3``).

Everything the runtime knows that it could not recompute lives here, written in transactions
that each take the state from one consistent point to the next: a revision of the plan with the
rows of its tasks; the *dispatch record* of a call (call row ``dispatched``, task ``dispatched``),
committed before the call is made; the call's *result* (outputs and status ``done``, or the
error), committed in one transaction after it returns. The events of ``events.jsonl`` are rows of
the same transactions, so the event log never tells more or less than the state: after a crash,
``events.jsonl`` is written again from the table.

Every transaction is one :meth:`Journal.write` of records (:mod:`evolve.execute.records`), events
and run-level meta; the task rows hold what a resume folds (:mod:`evolve.execute.state`), retry
wake times and cascaded skips included, so nothing is ever read back out of an event. The
schema's version is SQLite's ``user_version`` (:data:`SCHEMA_VERSION`).

A journal is data: opening one reads JSON text and numbers, and never executes anything.
"""

from __future__ import annotations

import functools
import json
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar, assert_never

from evolve import defaults
from evolve.execute import records as rec
from evolve.execute.journal_legacy import legacy_records
from evolve.execute.record_codec import RecordCodecError, decode, encode
from evolve.execute.records import CALL_STATUSES, CallRow, CallStatus, Revision, TaskRow
from evolve.model.errors import EvolveError
from evolve.model.status import TASK_STATUSES, TaskStatus

SCHEMA_VERSION = 4
"""Kept in SQLite's ``user_version``. 2: the tasks' retry wake times and cascaded skips are
columns (version 1, which had neither, kept them only in events; it is refused, not guessed).
3: the ``asks`` table (what a person was asked, and what they decided). 4: the ``history``
table, every record as it was applied; a version 3 journal is migrated when opened (its history
made once from its tables, :mod:`evolve.execute.journal_legacy`), older ones are refused."""

MIGRATES_FROM = 3
"""The one older schema a journal is migrated from rather than refused."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS revisions (
    revision INTEGER PRIMARY KEY, plan TEXT NOT NULL, patch TEXT, diff TEXT, reason TEXT,
    created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY, revision INTEGER NOT NULL, tool TEXT NOT NULL, risk TEXT NOT NULL,
    status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,
    outputs TEXT, error TEXT, started REAL, finished REAL, planned_start REAL, planned_finish REAL,
    first_failure REAL, retry_at REAL, cascaded INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS calls (
    call_id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, attempt INTEGER NOT NULL, tool TEXT NOT NULL,
    risk TEXT NOT NULL, idempotency_key TEXT, status TEXT NOT NULL, inputs TEXT, outputs TEXT,
    error TEXT, started REAL, finished REAL);
CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS history (seq INTEGER PRIMARY KEY, kind TEXT NOT NULL, body TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS asks (
    ask_id INTEGER PRIMARY KEY, task_id TEXT NOT NULL, kind TEXT NOT NULL, tool TEXT NOT NULL,
    action TEXT, action_hash TEXT, since REAL NOT NULL, since_wall REAL NOT NULL,
    verdict TEXT, decided_by TEXT, decided_at REAL, note TEXT, decided_hash TEXT, outputs TEXT);
"""

__all__ = [
    "CALL_STATUSES", "SCHEMA_VERSION", "TASK_STATUSES", "CallRow", "Journal", "JournalError", "Revision",
    "TaskRow",
]

SYNC_MODES = ("FULL", "NORMAL", "OFF")


class JournalError(EvolveError):
    """A journal that cannot be used: names the file and the fault."""


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def loads(text: str | None) -> Any:
    return None if text is None else json.loads(text)


R = TypeVar("R")
P = ParamSpec("P")
Named = TypeVar("Named", bound=StrEnum)


def damage_named(table: str) -> Callable[[Callable[Concatenate[Journal, P], R]],
                                         Callable[Concatenate[Journal, P], R]]:
    """A reading method whose JSON column may have been damaged (the journal is a file anyone
    can edit, cut or corrupt): an unreadable value is a :class:`JournalError` naming the file
    and the table, bad input for ``evolve pending``, ``approve`` or ``--resume``, not a crash."""
    def decorate(read: Callable[Concatenate[Journal, P], R]) -> Callable[Concatenate[Journal, P], R]:
        @functools.wraps(read)
        def wrapper(self: Journal, /, *args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return read(self, *args, **kwargs)
            except json.JSONDecodeError as exc:
                raise JournalError(f"{self.path}: {table}: a value is not JSON ({exc.msg}); "
                                   "the journal is damaged") from None
        return wrapper
    return decorate


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
    "retry_at",
    "cascaded",
)


class Journal:
    """One open journal. Methods that change state are one transaction each."""

    def __init__(self, path: str | Path, *, sync: str = defaults.EXECUTE_JOURNAL_SYNC,
                 read_only: bool = False) -> None:
        """Open (or create) the journal at ``path``. ``read_only``: open an existing journal to
        read it only (no schema written, no checkpoint at close: a reader of many runs, such as
        ``evolve serve``'s inbox, neither touches them nor waits on the disk)."""
        if sync not in SYNC_MODES:
            raise JournalError(f"journal sync must be one of {', '.join(SYNC_MODES)}, got {sync!r}")
        self.path = Path(path)
        try:
            self.db = self.connect(self.path, read_only=read_only, sync=sync)
            version = self.scalar("PRAGMA user_version")
            legacy = version == MIGRATES_FROM
            if version not in (SCHEMA_VERSION, MIGRATES_FROM) and self.scalar(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'tasks'"
            ):
                self.db.close()
                raise JournalError(
                    f"{self.path}: journal schema version {version or 1}, and this evolve reads "
                    f"version {SCHEMA_VERSION} only (the run was made by another evolve; start it again)"
                )
            if read_only and legacy:  # an old journal is migrated once, as any opening of it is
                self.db.close()
                self.db = self.connect(self.path, read_only=False, sync=sync)
                read_only = False
            if not read_only:
                self.db.executescript(SCHEMA)
                if legacy:
                    self.migrate()
                self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            self.seq = self.scalar("SELECT COALESCE(MAX(seq), 0) FROM events")
            self.next_call = self.scalar("SELECT COALESCE(MAX(call_id), 0) FROM calls") + 1
        except sqlite3.DatabaseError as exc:
            raise JournalError(f"{self.path}: not a usable journal ({exc})") from None

    @staticmethod
    def connect(path: Path, *, read_only: bool, sync: str) -> sqlite3.Connection:
        if read_only:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None,
                                 check_same_thread=False)
        else:
            db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={sync}")
        return db

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
        """Number ``events`` and insert them (inside the caller's transaction). The count is
        read again first: a person's decision (``evolve approve``) may have added an event
        from another process since."""
        out = []
        self.seq = max(self.seq, self.scalar("SELECT COALESCE(MAX(seq), 0) FROM events"))
        for event in events:
            self.seq += 1
            body = {**event, "seq": self.seq}
            db.execute("INSERT INTO events (seq, body) VALUES (?, ?)", (self.seq, dumps(body)))
            out.append(body)
        return out

    # -- reading ---------------------------------------------------------------------------

    @damage_named("meta")
    def meta(self) -> dict[str, Any]:
        return {k: loads(v) for k, v in self.db.execute("SELECT key, value FROM meta")}

    @damage_named("revisions")
    def revisions(self) -> list[Revision]:
        rows = self.db.execute(
            "SELECT revision, plan, patch, diff, reason, created FROM revisions ORDER BY revision"
        )
        return [Revision(r[0], loads(r[1]), loads(r[2]), loads(r[3]), r[4], r[5]) for r in rows]

    @damage_named("tasks")
    def tasks(self) -> dict[str, TaskRow]:
        rows = self.db.execute(f"SELECT {', '.join(TASK_COLUMNS)} FROM tasks ORDER BY rowid")
        found = {}
        for r in rows:
            values = dict(zip(TASK_COLUMNS, r))
            values["outputs"] = loads(values["outputs"])
            values["cascaded"] = bool(values["cascaded"])
            values["status"] = self.status_named("tasks", values["task_id"], values["status"], TaskStatus)
            found[values["task_id"]] = TaskRow(**values)
        return found

    @damage_named("calls")
    def calls(self, status: CallStatus | None = None) -> list[CallRow]:
        sql = (
            "SELECT call_id, task_id, attempt, tool, risk, idempotency_key, status, inputs, outputs, "
            "error, started, finished FROM calls"
        )
        rows = self.db.execute(
            sql + (" WHERE status = ?" if status else "") + " ORDER BY call_id", (status,) if status else ()
        )
        return [
            CallRow(r[0], r[1], r[2], r[3], r[4], r[5], self.status_named("calls", r[0], r[6], CallStatus),
                    loads(r[7]), loads(r[8]), r[9], r[10], r[11])
            for r in rows
        ]

    def status_named(self, table: str, row: str, status: object, names: type[Named]) -> Named:
        """A row's ``status`` read back as its name in ``names``; any other text is damage."""
        if status not in tuple(names):
            raise JournalError(f"{self.path}: {table}: {row} has status {status!r}, not one of "
                               f"{', '.join(names)}; the journal is damaged")
        return names(str(status))

    def call_count(self) -> int:
        """Tool calls made: every dispatch record (a step each, whatever became of it)."""
        return self.scalar("SELECT COUNT(*) FROM calls")

    @damage_named("meta")
    def excluded(self) -> list[str]:
        """The tools a replan request took out of use (the run's meta ``excluded``)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'excluded'").fetchone()
        return list(loads(row[0])) if row is not None else []

    @damage_named("meta")
    def model_calls(self) -> dict[str, int]:
        """The model calls the run made by purpose, other than its tools' (the meta ``model_calls``)."""
        row = self.db.execute("SELECT value FROM meta WHERE key = 'model_calls'").fetchone()
        return {str(k): int(v) for k, v in loads(row[0]).items()} if row is not None else {}

    @damage_named("asks")
    def asks(self) -> tuple[list[rec.Asked], list[rec.Decided]]:
        """What people were asked, in order, and what they decided (the ``asks`` table)."""
        asked, decided = [], []
        rows = self.db.execute(
            "SELECT ask_id, task_id, kind, tool, action, action_hash, since, since_wall, verdict, "
            "decided_by, decided_at, note, decided_hash, outputs FROM asks ORDER BY ask_id"
        )
        for r in rows:
            asked.append(rec.Asked(r[0], r[1], r[2], r[3], loads(r[4]), r[5], r[6], r[7]))
            if r[8] is not None:
                decided.append(rec.Decided(r[0], r[1], r[8], r[9], r[10], r[11], r[12], loads(r[13])))
        return asked, decided

    def history(self, kinds: Sequence[str] = ()) -> list[rec.Record]:
        """Every record the run applied, in the order it applied them (only ``kinds``, by
        class name, when given): what ``--resume`` folds."""
        sql = "SELECT seq, kind, body FROM history"
        if kinds:
            sql += f" WHERE kind IN ({', '.join('?' * len(kinds))})"
        rows = self.db.execute(sql + " ORDER BY seq", tuple(kinds))
        try:
            return [decode(kind, body, f"{self.path}: history row {seq}") for seq, kind, body in rows]
        except RecordCodecError as exc:
            raise JournalError(f"{exc}; the journal is damaged") from None

    def migrate(self) -> None:
        """A version 3 journal's history, made once from its tables (one transaction)."""
        made = legacy_records(self.revisions(), self.calls(), self.asks(), self.tasks(), self.meta(),
                              self.model_calls(), str(self.path))
        with self.transaction() as db:
            for record in made:
                self.put_history(db, record)

    @damage_named("events")
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(body) for (body,) in self.db.execute("SELECT body FROM events ORDER BY seq")]

    # -- writing ---------------------------------------------------------------------------

    def write(
        self,
        records: Sequence[rec.Record],
        events: Iterable[dict[str, Any]] = (),
        meta: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        """``records``, ``events`` and run-level ``meta`` in one transaction: all or none. The
        events come back numbered (``seq``)."""
        return self.append(records, events, meta)[1]

    def append(
        self,
        records: Sequence[rec.Record],
        events: Iterable[dict[str, Any]] = (),
        meta: Mapping[str, Any] | None = None,
    ) -> tuple[list[rec.Record], list[dict[str, Any]]]:
        """As :meth:`write`, and the records as the history holds them: what the live run
        folds, so that its state and a replay of the history are the same values."""
        with self.transaction() as db:
            written = [self.put_history(db, record) for record in records]
            for record in records:
                self.put_record(db, record)
            self.put_meta(db, meta)
            return written, self.add_events(db, events)

    def put_history(self, db: sqlite3.Connection, record: rec.Record) -> rec.Record:
        """Append ``record`` to the history (inside the caller's transaction); the record as a
        replay will read it back."""
        kind, body = encode(record)
        cursor = db.execute("INSERT INTO history (kind, body) VALUES (?, ?)", (kind, body))
        return decode(kind, body, f"{self.path}: history row {cursor.lastrowid}")

    def put_record(self, db: sqlite3.Connection, record: rec.Record) -> None:
        """One record's rows (inside the caller's transaction)."""
        if isinstance(record, rec.Dispatched):
            db.execute(
                "INSERT INTO calls (call_id, task_id, attempt, tool, risk, idempotency_key, status, "
                "inputs, started) VALUES (?, ?, ?, ?, ?, ?, 'dispatched', ?, ?)",
                (
                    record.call_id,
                    record.task_id,
                    record.attempt,
                    record.tool,
                    record.risk,
                    record.key,
                    record.inputs_json,
                    record.started,
                ),
            )
            self.next_call = max(self.next_call, record.call_id + 1)
            db.execute(
                "UPDATE tasks SET status = 'dispatched', attempts = ?, started = ?, retry_at = NULL "
                "WHERE task_id = ?",
                (record.attempt, record.started, record.task_id),
            )
        elif isinstance(record, rec.Settled):
            outputs = None if record.outputs is None else dumps(dict(record.outputs))
            if record.call_id is not None:
                db.execute(
                    "UPDATE calls SET status = ?, outputs = ?, error = ?, finished = ? WHERE call_id = ?",
                    (record.call_status, outputs, record.error, record.finished, record.call_id),
                )
            db.execute(
                "UPDATE tasks SET status = ?, outputs = COALESCE(?, outputs), error = ?, "
                "finished = COALESCE(?, finished), failures = COALESCE(?, failures), "
                "first_failure = COALESCE(first_failure, ?), retry_at = ?, cascaded = ? "
                "WHERE task_id = ?",
                (
                    record.status,
                    outputs,
                    record.error,
                    record.finished,
                    record.failures,
                    record.first_failure,
                    record.retry_at,
                    int(record.cascaded),
                    record.task_id,
                ),
            )
        elif isinstance(record, rec.Revised):
            self.put_revision(db, record)
        elif isinstance(record, rec.ReplanAsked):
            self.put_meta(db, {"excluded": sorted(set(self.excluded()) | set(record.tools))})
            self.put_meta(db, {"replan": record.reason})
        elif isinstance(record, rec.ReplanTried):
            self.put_meta(db, {"replan_tried": record.tried})
        elif isinstance(record, rec.ModelCalls):
            spent = self.model_calls()
            spent[record.purpose] = spent.get(record.purpose, 0) + record.calls
            self.put_meta(db, {"model_calls": spent})
        elif isinstance(record, rec.Asked):
            self.put_ask(db, record)
        elif isinstance(record, rec.Decided):
            self.put_decision(db, record)
        elif isinstance(record, rec.Window):
            self.put_meta(db, {"window": {"revision": record.revision, "tasks": list(record.tasks)}})
        else:
            assert_never(record)

    def put_ask(self, db: sqlite3.Connection, record: rec.Asked) -> None:
        """A person asked: the ask's row, and its task ``waiting``."""
        db.execute(
            "INSERT INTO asks (ask_id, task_id, kind, tool, action, action_hash, since, since_wall) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                record.ask_id,
                record.task_id,
                record.kind,
                record.tool,
                None if record.action is None else dumps(dict(record.action)),
                record.action_hash,
                record.since,
                record.since_wall,
            ),
        )
        db.execute(
            "UPDATE tasks SET status = 'waiting', retry_at = NULL WHERE task_id = ?", (record.task_id,)
        )

    def put_decision(self, db: sqlite3.Connection, record: rec.Decided) -> None:
        """A person's decision on an open ask; an ask decided already (or asked again since,
        by another process) is refused, and the transaction rolled back."""
        cursor = db.execute(
            "UPDATE asks SET verdict = ?, decided_by = ?, decided_at = ?, note = ?, decided_hash = ?, "
            "outputs = ? WHERE ask_id = ? AND task_id = ? AND verdict IS NULL AND ask_id = "
            "(SELECT MAX(ask_id) FROM asks WHERE task_id = ?)",
            (
                record.verdict,
                record.by,
                record.at,
                record.note,
                record.action_hash,
                None if record.outputs is None else dumps(dict(record.outputs)),
                record.ask_id,
                record.task_id,
                record.task_id,
            ),
        )
        if cursor.rowcount != 1:
            raise JournalError(f"{self.path}: {record.task_id} is no longer waiting for that decision")

    def put_revision(self, db: sqlite3.Connection, record: rec.Revised) -> None:
        """A new revision of the plan: its record, the rows of its new tasks (or their new
        planned times), the tasks it invalidates, and the replan request cleared."""
        db.execute(
            "INSERT INTO revisions (revision, plan, patch, diff, reason, created) VALUES (?, ?, ?, ?, ?, ?)",
            (
                record.revision,
                dumps(record.plan.to_dict()),
                dumps(record.patch),
                dumps({**(record.diff or {}), "signature": record.signature}),
                record.reason,
                record.created,
            ),
        )
        for row in record.rows:
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
                    row.retry_at,
                    int(row.cascaded),
                ),
            )
        for task_id in record.invalidated:
            db.execute(
                "UPDATE tasks SET status = 'invalidated', retry_at = NULL WHERE task_id = ?", (task_id,)
            )
        self.put_meta(db, {"replan": None})
