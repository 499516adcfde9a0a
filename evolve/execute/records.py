"""What a run commits: the record kinds, and the statuses they name.

A record is one durable fact about the run. The executor never changes its state any other way:
:meth:`evolve.execute.context.RunContext.commit` appends records (with their events) to the
journal's history in one transaction and then folds them into
:class:`evolve.execute.state.RunState` with ``apply``; a resumed run replays the history through
the same ``apply``.

To add a kind: a frozen dataclass here (its fields JSON values, tuples, mappings, a ``Plan`` or
``TaskRow`` values: :mod:`evolve.execute.record_codec` reads them from the type hints), added to
:data:`Record`; a case in ``RunState.apply``; a case in ``Journal.put_record``, its projection in
the tables. mypy's exhaustiveness check (``assert_never``) names each place still missing it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, Literal

from evolve.model.plan import FailurePolicy, Plan
from evolve.model.status import TaskStatus


class CallStatus(StrEnum):
    """A call's fate."""

    DISPATCHED = "dispatched"
    DONE = "done"
    FAILED = "failed"
    TIMEOUT = "timeout"
    RECONCILED = "reconciled"
    """A write found dispatched after a crash and settled by its tool's ``reconcile``."""
    LOST = "lost"
    """A read found dispatched after a crash (it is run again)."""
    UNKNOWN = "unknown"
    """A write found dispatched after a crash whose tool cannot tell."""


ErrorKind = Literal[
    "failure", "timeout", "exception", "unknown", "expression", "assumption", "lost", "rejected", "refused"
]
"""How a step failed (a ``step.error``'s ``kind``): the dispatcher's (``failure``, ``timeout``,
``exception``), ``unknown`` (a write no one can tell was made), a broken ``when``/``assumes``
(``expression``), a false assumption, a call a crash cut off (``lost``: the executor's crash, or
the death of the server that took it), an approval a person rejected (``rejected``), or a write
or approval refused at dispatch because its action was rejected before (``refused``)."""


class AskKind(StrEnum):
    """What a person is asked: to approve or reject an action, or to give a task's outputs."""

    APPROVAL = "approval"
    ANSWER = "answer"


class Verdict(StrEnum):
    """A person's decision on what they were asked (``evolve approve``, ``reject``, ``answer``)."""

    APPROVED = "approved"
    REJECTED = "rejected"
    ANSWERED = "answered"


VERDICTS: Final[tuple[Verdict, ...]] = tuple(Verdict)

Next = FailurePolicy
"""What follows a failed step (a ``step.error``'s ``next``)."""

CALL_STATUSES: Final[tuple[CallStatus, ...]] = tuple(CallStatus)
MADE: Final[frozenset[CallStatus]] = frozenset({CallStatus.DONE, CallStatus.RECONCILED})
"""Call statuses whose outputs were made (returned, or settled by ``reconcile``)."""



@dataclass(frozen=True)
class TaskRow:
    """One task as the journal holds it."""

    task_id: str
    revision: int
    tool: str
    risk: str
    status: TaskStatus
    attempts: int = 0
    failures: int = 0
    outputs: Mapping[str, Any] | None = None
    error: str | None = None
    started: float | None = None
    finished: float | None = None
    planned_start: float | None = None
    planned_finish: float | None = None
    first_failure: float | None = None
    retry_at: float | None = None
    cascaded: bool = False


@dataclass(frozen=True)
class CallRow:
    """One call as the journal's ``calls`` table holds it."""

    call_id: int
    task_id: str
    attempt: int
    tool: str
    risk: str
    idempotency_key: str | None
    status: CallStatus
    inputs: Any
    outputs: Any
    error: str | None
    started: float | None
    finished: float | None


@dataclass(frozen=True)
class Revision:
    """One revision as the journal's ``revisions`` table holds it."""

    revision: int
    plan: dict[str, Any]
    patch: dict[str, Any] | None
    diff: dict[str, Any] | None
    reason: str | None
    created: float


@dataclass(frozen=True)
class Dispatched:
    """A call about to be made: committed before the call is (``call_id``: the journal's
    ``next_call`` onwards)."""

    call_id: int
    task_id: str
    attempt: int
    tool: str
    risk: str
    key: str | None
    inputs_json: str
    started: float


@dataclass(frozen=True)
class Settled:
    """A task's new status and what came with it, in one row: a call's result (``call_id``
    set) or a decision without a call (skipped, failed on a broken condition).

    ``retry_at`` is the wake time of a task left ``pending`` for a retry; ``cascaded`` marks a
    task skipped because an upstream task failed (it passes the skip on to its dependents);
    ``attempt`` is the attempt the result belongs to (``None``: unchanged)."""

    task_id: str
    status: TaskStatus
    call_id: int | None = None
    call_status: CallStatus | None = None
    outputs: Mapping[str, Any] | None = None
    error: str | None = None
    finished: float | None = None
    failures: int | None = None
    first_failure: float | None = None
    retry_at: float | None = None
    cascaded: bool = False
    attempt: int | None = None


@dataclass(frozen=True)
class ReplanAsked:
    """The plan must change: ``tools`` are not to be used again, and why (``reason``)."""

    tools: tuple[str, ...]
    reason: str | None


@dataclass(frozen=True)
class ReplanTried:
    """A replan was attempted, the ``tried``-th of the run: it counts as a replan and a step,
    whatever it found (a replanner whose answers its checks refused is asked again, so the
    replans tried may be more than the revisions made)."""

    tried: int


@dataclass(frozen=True)
class ModelCalls:
    """Model calls the run makes for ``purpose`` (e.g. ``replan``), added to its count. Committed
    before the calls are made, with what they may spend at most, so a crash never loses one; a
    negative ``calls`` gives back what was counted and not spent."""

    purpose: str
    calls: int


@dataclass(frozen=True)
class Revised:
    """A revision of the plan: ``invalidated`` tasks leave it, every new task is ``pending``.

    ``rows`` are the journal rows of the plan's tasks (their planned times); ``patch``, ``diff``,
    ``reason`` and ``created`` the revision's record."""

    revision: int
    plan: Plan
    invalidated: tuple[str, ...]
    signature: str
    patch: Mapping[str, Any] | None = None
    diff: Mapping[str, Any] | None = None
    reason: str = ""
    created: float = 0.0
    rows: tuple[TaskRow, ...] = ()


@dataclass(frozen=True)
class Asked:
    """A task a person owns waits for them (its status becomes ``waiting``): ``ask_id`` numbers
    the asks of the run (an approval asked again after its action changed is a new ask).

    ``action`` is what an approval approves: the writes downstream of it, each with its tool,
    its bound inputs and their hash; ``action_hash`` hashes them all (``None`` for an answer).
    ``since`` is the run's clock, ``since_wall`` the epoch seconds (when a person was asked)."""

    ask_id: int
    task_id: str
    kind: AskKind
    tool: str
    action: Mapping[str, Any] | None
    action_hash: str | None
    since: float
    since_wall: float


@dataclass(frozen=True)
class Decided:
    """A person's decision on ask ``ask_id``: who, when (epoch seconds), the note, the action
    hash they decided on, and (an answer) the outputs they gave. Written by ``evolve approve``,
    ``reject`` or ``answer`` in one transaction; the executor then settles the task from it."""

    ask_id: int
    task_id: str
    verdict: Verdict
    by: str
    at: float
    note: str | None = None
    action_hash: str | None = None
    outputs: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Window:
    """Under a rolling horizon (``ExecuteOptions.horizon``), the tasks of ``revision`` that are
    committed: only they may run; when they are over, the rest of the plan is planned again.
    Committed with its revision, in one transaction, so a resumed run knows where the horizon
    stood (journal meta ``window``)."""

    revision: int
    tasks: tuple[str, ...]


Record = (
    Dispatched | Settled | ReplanAsked | ReplanTried | Revised | Asked | Decided | ModelCalls | Window
)
"""Every kind of record (see the module docstring to add one)."""
