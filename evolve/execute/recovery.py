"""Recovery after a crash: the state folded back from the journal, and the calls a killed
session left dispatched settled (as DBOS recovers its pending workflows at start-up).

Resuming never reads an event to decide anything: statuses, outputs, retry wake times and
cascaded skips are journal columns (:meth:`evolve.execute.state.RunState.restore`).
"""

from __future__ import annotations

from evolve.execute.context import RunContext
from evolve.execute.outcome import Reason, Stop
from evolve.execute.records import CallStatus
from evolve.execute.result_commit import reconcile
from evolve.execute.transitions import Change, failed_for_good, lost, task_policy
from evolve.model.status import ENDED_WITHOUT_OUTPUTS, TaskStatus

CUT_OFF_WRITE = (
    "dispatched before the process stopped; its tool has no reconcile to tell whether the write was made"
)


def resumed(ctx: RunContext) -> None:
    """What a resumed session rebuilds beside the state: the retry timers of waiting tasks, and
    the stop a task failed for good under ``fail_plan`` (or ``retry``) already decided."""
    for tid, at in ctx.state.retry_at.items():
        if ctx.state.status.get(tid) == TaskStatus.PENDING:
            ctx.queue.delay(tid, at)
    rows = ctx.journal.tasks()
    stops = [
        Stop(Reason.TASK_FAILED, f"{task.id} ({task.tool}) failed: {row.error}")
        for task in ctx.state.plan.tasks
        if (row := rows.get(task.id)) is not None
        and row.status in ENDED_WITHOUT_OUTPUTS
        and task_policy(task) in ("fail_plan", "retry")
    ]
    ctx.halt(stops[-1] if stops else None)  # the last in plan order speaks


def recover(ctx: RunContext) -> None:
    """Settle the calls a killed session left dispatched but not committed: a read runs again,
    a write is reconciled through its tool (no ``reconcile``: ``unknown``)."""
    for call in ctx.journal.calls(CallStatus.DISPATCHED):
        task = ctx.index.tasks.get(call.task_id)
        if task is None:
            continue
        started = call.started if call.started is not None else ctx.clock.now()
        change: Change | None = None
        if call.risk == "write":
            settled = reconcile(ctx, task, call.call_id, started, call.idempotency_key)
            if isinstance(settled, Change):
                change = settled
            elif settled == "cannot_tell":
                change = failed_for_good(
                    task,
                    "unknown",
                    CUT_OFF_WRITE,
                    state=ctx.state,
                    ev=ctx.ev,
                    call_id=call.call_id,
                    call_status=CallStatus.UNKNOWN,
                    started=started,
                    finished=ctx.clock.now(),
                )
        if change is None:
            change = lost(
                task, call_id=call.call_id, attempt=call.attempt, risk=call.risk, started=started, ev=ctx.ev
            )
        ctx.commit(change)
    ctx.log.flush()
