"""The transitions: from a task, what happened to it, the run's state and the retry policy to
the records that say so (and their events). Pure: no journal, no clock reading beyond the event
stamps, no tool. :meth:`evolve.execute.context.RunContext.commit` makes a :class:`Change` real.

Each function is one edge of a task's life: ``pending`` -> ``dispatched`` is the dispatch record
(:mod:`evolve.execute.calls`); from ``dispatched`` a call ends in :func:`succeeded`, a retry
(:func:`call_failed`, left ``pending`` with a wake time) or :func:`failed_for_good`; a pending
task may be :func:`skipped`, failed without a call, or ask for a replan (:func:`replan_asked`);
:func:`lost` puts back a read a crash cut off. Under a rolling horizon, a window whose tasks are
all over asks for the rest to be planned again (:func:`horizon_reached`) or, with no replan
left, commits the rest as it stands (:func:`horizon_lifted`). A new status is a new function here returning a
:class:`~evolve.execute.records.Settled` with it (see ``docs/executor-design.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evolve.execute.events import Events
from evolve.execute.outcome import Reason, Stop
from evolve.execute.records import CallStatus, ErrorKind, Next, Record, ReplanAsked, Settled, Window
from evolve.execute.retry import RetryPolicy
from evolve.execute.state import RunState
from evolve.model.plan import Task
from evolve.model.status import ENDED_WITHOUT_OUTPUTS, TaskStatus


@dataclass(frozen=True)
class Change:
    """Records to commit together with their events, and the stop they lead to (if any)."""

    records: tuple[Record, ...]
    events: tuple[dict[str, Any], ...]
    stop: Stop | None = None

    def __add__(self, other: Change) -> Change:
        return Change(self.records + other.records, self.events + other.events, self.stop or other.stop)


NOTHING = Change((), ())


def task_policy(task: Task) -> Next:
    """The task's ``on_failure`` as the readiness table reads it (see :meth:`Task.failure_policy`)."""
    return task.failure_policy()


def succeeded(
    task: Task,
    *,
    call_id: int,
    call_status: CallStatus,
    outputs: Mapping[str, Any],
    started: float,
    finished: float,
    attempt: int,
    risk: str,
    ev: Events,
) -> Change:
    """A call that made its outputs (``call_status`` ``reconciled``: a write its tool confirmed)."""
    event = ev.step(
        "step.end",
        task,
        risk=risk,
        attempt=attempt,
        status="reconciled" if call_status == CallStatus.RECONCILED else "done",
        started=started,
        finished=finished,
    )
    record = Settled(task.id, TaskStatus.DONE, call_id, call_status, outputs, finished=finished)
    return Change((record,), (event,))


def call_failed(
    task: Task,
    *,
    call_id: int,
    kind: ErrorKind,
    error: str,
    retryable: bool,
    started: float,
    finished: float,
    risk: str,
    state: RunState,
    policy: RetryPolicy,
    ev: Events,
) -> Change:
    """A call that failed: tried again after the policy's backoff, or failed for good."""
    failures = state.failures.get(task.id, 0) + 1
    first = state.first_failure.get(task.id, finished)
    call_status: CallStatus = CallStatus.TIMEOUT if kind == "timeout" else CallStatus.FAILED
    retry_at = policy.retry_at(failures=failures, first=first, finished=finished, retryable=retryable)
    if retry_at is not None:
        event = ev.step_error(
            task,
            error,
            kind,
            retryable=True,
            nxt="retry",
            retry_at=retry_at,
            started=started,
            finished=finished,
            risk=risk,
            attempt=state.attempts.get(task.id, 1),
        )
        record = Settled(
            task.id,
            TaskStatus.PENDING,
            call_id,
            call_status,
            error=error,
            finished=finished,
            failures=failures,
            first_failure=first,
            retry_at=retry_at,
        )
        return Change((record,), (event,))
    if policy.spent(failures=failures, retryable=retryable):
        error = f"{error} (after {failures} attempts)"
    return failed_for_good(
        task,
        kind,
        error,
        state=state,
        ev=ev,
        call_id=call_id,
        call_status=call_status,
        started=started,
        finished=finished,
        retryable=retryable,
        failures=failures,
    )


def failed_for_good(
    task: Task,
    kind: ErrorKind,
    error: str,
    *,
    state: RunState,
    ev: Events,
    call_id: int | None = None,
    call_status: CallStatus | None = None,
    started: float | None = None,
    finished: float | None = None,
    retryable: bool = False,
    failures: int | None = None,
) -> Change:
    """The task failed and will not be tried again: its ``on_failure`` decides the rest (a
    ``kind`` ``unknown`` leaves it ``unknown``: a write no one can tell was made)."""
    policy = task_policy(task)
    nxt: Next = "fail_plan" if policy == "retry" else policy
    event = ended(
        task, error, kind, nxt, state=state, ev=ev, retryable=retryable, started=started, finished=finished
    )
    records: tuple[Record, ...] = (
        Settled(
            task.id,
            TaskStatus.UNKNOWN if kind == "unknown" else TaskStatus.FAILED,
            call_id,
            call_status,
            error=error,
            finished=finished,
            failures=failures if failures is not None else state.failures.get(task.id),
        ),
    )
    failed = f"{task.id} ({task.tool}) failed: {error}"
    if nxt == "replan":
        records += (ReplanAsked((task.tool,), failed),)
    stop = Stop(Reason.TASK_FAILED, failed) if nxt == "fail_plan" else None
    return Change(records, (event,), stop)


def skipped(task: Task, why: str, *, cascade: bool, ev: Events) -> Change:
    """A pending task that will not run (its ``when`` is false, or an upstream task failed
    under ``skip_dependents``: a cascade, which passes the skip on and keeps why)."""
    now = ev.clock.now()
    event = ev.step("step.end", task, attempt=0, status="skipped", started=now, finished=now, reason=why)
    record = Settled(task.id, TaskStatus.SKIPPED, error=why if cascade else None, cascaded=cascade)
    return Change((record,), (event,))


def replan_asked(task: Task, reason: str, kind: ErrorKind, *, state: RunState, ev: Events) -> Change:
    """A false assumption: the plan is wrong about ``task``; its tool is not used again."""
    event = ended(task, reason, kind, "replan", state=state, ev=ev)
    return Change((ReplanAsked((task.tool,), reason),), (event,))


def ended(
    task: Task,
    error: str,
    kind: ErrorKind,
    nxt: Next,
    *,
    state: RunState,
    ev: Events,
    retryable: bool = False,
    started: float | None = None,
    finished: float | None = None,
) -> dict[str, Any]:
    """The ``step.error`` of a task that will not be tried again (``nxt`` says what follows);
    a decision without a call starts and ends now."""
    now = ev.clock.now()
    return ev.step_error(
        task,
        error,
        kind,
        attempt=state.attempts.get(task.id, 0),
        retryable=retryable,
        nxt=nxt,
        started=now if started is None else started,
        finished=now if finished is None else finished,
    )


def lost(task: Task, *, call_id: int, attempt: int, risk: str, started: float, ev: Events) -> Change:
    """A call a killed session left dispatched whose result is lost: the task runs again."""
    event = ev.step_error(
        task,
        "the process stopped during the call; it is run again",
        "lost",
        retryable=True,
        nxt="retry",
        started=started,
        finished=ev.clock.now(),
        risk=risk,
        attempt=attempt,
    )
    record = Settled(
        task.id, TaskStatus.PENDING, call_id, CallStatus.LOST, error="the process stopped during the call",
        attempt=attempt,
    )
    return Change((record,), (event,))


def horizon_reached(state: RunState, reason: str, ev: Events) -> Change:
    """Every task the rolling horizon committed is over: the rest of the plan is to be planned
    again (the reason ``horizon``); a committed tool that failed for good is not used again."""
    committed = state.window or ()
    tasks = state.plan.by_id()
    failed = tuple(
        sorted(
            {
                tasks[tid].tool
                for tid in committed
                if tid in tasks and state.status.get(tid) in ENDED_WITHOUT_OUTPUTS
            }
        )
    )
    event = ev.event(
        "plan.horizon",
        revision=state.revision,
        action="replan",
        committed=list(committed),
        excluded=list(failed),
    )
    return Change((ReplanAsked(failed, reason),), (event,))


def horizon_lifted(state: RunState, ev: Events) -> Change:
    """Every committed task is over but no replan is left: the rest of the plan is committed
    as it stands (the run goes on as a plan given whole would)."""
    rest = tuple(t.id for t in state.plan.tasks if state.status.get(t.id) == TaskStatus.PENDING)
    event = ev.event("plan.horizon", revision=state.revision, action="lift", committed=list(rest))
    return Change((Window(state.revision, rest),), (event,))
