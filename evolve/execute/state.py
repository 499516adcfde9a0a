"""The run's durable state in memory: :class:`RunState`, changed only by :meth:`RunState.apply`.

The journal's history is the truth and this is its fold: a live run applies each record right
after the journal appended it to the history (:meth:`evolve.execute.context.RunContext.commit`),
and a resumed run replays the history through the same ``apply`` (:meth:`RunState.restore`),
record by record in the order they were applied; nothing is rebuilt from the tables.
What is not here is not durable: the ready queue, the readiness pass's agenda, a stop.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, assert_never

from evolve.execute.journal import Journal, JournalError
from evolve.execute.records import (
    Asked,
    Decided,
    Dispatched,
    ModelCalls,
    Record,
    ReplanAsked,
    ReplanTried,
    Revised,
    Settled,
    Verdict,
    Window,
)
from evolve.model.plan import Plan
from evolve.model.status import TaskStatus


@dataclass
class RunState:
    """Everything the loop decides from that a crash must not lose."""

    plan: Plan = field(default_factory=lambda: Plan(tasks=()))
    revision: int = -1
    status: dict[str, TaskStatus] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)
    first_failure: dict[str, float] = field(default_factory=dict)
    retry_at: dict[str, float] = field(default_factory=dict)
    """Pending tasks waiting for a retry, and when they may go."""
    cascaded: set[str] = field(default_factory=set)
    """Tasks skipped because an upstream task failed: they pass the skip on."""
    excluded: set[str] = field(default_factory=set)
    replan: str | None = None
    signatures: set[str] = field(default_factory=set)
    calls: int = 0
    replans: int = 0
    asked: dict[int, Asked] = field(default_factory=dict)
    """Every ask of a person, by ``ask_id``."""
    latest: dict[str, int] = field(default_factory=dict)
    """Each task's latest ask."""
    decided: dict[int, Decided] = field(default_factory=dict)
    """The decisions people made, by ``ask_id``."""
    rejected: dict[str, int] = field(default_factory=dict)
    """The hash of every write a person rejected, and the ask that rejected it: final, for any
    approval (see :mod:`evolve.execute.approvals`)."""
    model_calls: dict[str, int] = field(default_factory=dict)
    """Model calls the run made by purpose, other than its tools' (theirs: the calls' tools)."""
    window: tuple[str, ...] | None = None
    """Under a rolling horizon, the tasks committed (the only ones that may run); ``None``: no
    horizon, every task of the plan is committed."""

    def ask(self, tid: str) -> Asked | None:
        """The latest ask of ``tid`` (``None``: it never waited for a person)."""
        ask_id = self.latest.get(tid)
        return None if ask_id is None else self.asked[ask_id]

    @property
    def steps(self) -> int:
        """The step budget spent: every call made and every replan tried."""
        return self.calls + self.replans

    def apply(self, record: Record) -> None:
        """Fold one committed record in: the one way this state changes."""
        if isinstance(record, Dispatched):
            self.status[record.task_id] = TaskStatus.DISPATCHED
            self.attempts[record.task_id] = record.attempt
            self.retry_at.pop(record.task_id, None)
            self.calls += 1
        elif isinstance(record, Settled):
            tid = record.task_id
            self.status[tid] = record.status
            if record.outputs is not None:
                self.outputs[tid] = dict(record.outputs)
            if record.attempt is not None:
                self.attempts[tid] = record.attempt
            if record.failures is not None:
                self.failures[tid] = record.failures
            if record.first_failure is not None:
                self.first_failure.setdefault(tid, record.first_failure)
            if record.retry_at is not None:
                self.retry_at[tid] = record.retry_at
            else:
                self.retry_at.pop(tid, None)
            if record.cascaded:
                self.cascaded.add(tid)
            else:
                self.cascaded.discard(tid)
        elif isinstance(record, ReplanAsked):
            self.excluded.update(record.tools)
            self.replan = record.reason
        elif isinstance(record, ReplanTried):
            self.replans = max(self.replans, record.tried)
        elif isinstance(record, ModelCalls):
            self.model_calls[record.purpose] = self.model_calls.get(record.purpose, 0) + record.calls
        elif isinstance(record, Asked):
            self.status[record.task_id] = TaskStatus.WAITING
            self.retry_at.pop(record.task_id, None)
            self.asked[record.ask_id] = record
            self.latest[record.task_id] = record.ask_id
        elif isinstance(record, Decided):
            self.decided[record.ask_id] = record
            if record.verdict == Verdict.REJECTED:
                for write in (self.asked[record.ask_id].action or {}).get("writes", ()):
                    self.rejected.setdefault(write["hash"], record.ask_id)
        elif isinstance(record, Revised):
            for tid in record.invalidated:
                self.status[tid] = TaskStatus.INVALIDATED
                self.retry_at.pop(tid, None)  # out of the plan, it waits for nothing
            for task in record.plan.tasks:
                self.status.setdefault(task.id, TaskStatus.PENDING)
            self.signatures.add(record.signature)
            self.plan = record.plan
            self.revision = record.revision
            self.replans = max(self.replans, record.revision)
            self.replan = None
        elif isinstance(record, Window):
            self.window = record.tasks
        else:
            assert_never(record)

    @classmethod
    def restore(cls, journal: Journal) -> RunState:
        """The state of the run in ``journal``: its history replayed through :meth:`apply`,
        record by record, as the live run applied it."""
        history = journal.history()
        if not any(isinstance(record, Revised) for record in history):
            raise JournalError(f"{journal.path}: the run never committed a plan; start it again")
        state = cls()
        for record in history:
            state.apply(record)
        return state
