"""The result commit: what came back from the dispatcher, made durable.

The calls that succeeded are committed in one transaction (outputs and ``done`` for each); each
failure on its own, because it may retry, fail for good or ask for a replan. A write cut off by
its deadline, or found dispatched after a crash, is first asked about through its tool's
``reconcile`` (:func:`reconcile`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from evolve.execute.context import RunContext
from evolve.execute.dispatch import Result
from evolve.execute.journal import dumps
from evolve.execute.records import CallStatus, ErrorKind, ModelCalls
from evolve.execute.tools import asks_model, reconciler
from evolve.execute.transitions import NOTHING, Change, call_failed, failed_for_good, succeeded
from evolve.model.plan import Task
from evolve.model.validate import produced_by

NO_RECONCILE = "the write may have been made and its tool has no reconcile"

Reconciled = Change | Literal["not_made", "cannot_tell"]
"""What a write's ``reconcile`` said: the change settling it as done, that the write was not
made (it is tried as usual), or nothing to go on."""


def commit_results(ctx: RunContext, results: list[Result]) -> None:
    """Commit ``results`` (between the ``before_commit`` and ``after_commit`` hooks)."""
    done = NOTHING
    failed: list[tuple[Task, Result, ErrorKind, str]] = []
    for result in results:
        task = ctx.index.tasks[result.job.task_id]
        ctx.queue.release(task.id)
        ctx.hook("before_commit", task.id)
        if result.job.call_id in ctx.asked:
            done += given_back(ctx, result)
        error = result.error or "failed"
        if result.kind == "ok":
            outputs, error = checked_outputs(ctx, task, result.outputs)
            if outputs is not None:
                done += succeeded(
                    task,
                    call_id=result.job.call_id,
                    call_status=CallStatus.DONE,
                    outputs=outputs,
                    started=result.job.started,
                    finished=result.finished,
                    attempt=result.job.call.attempt,
                    risk=ctx.problem.tools[task.tool].risk,
                    ev=ctx.ev,
                )
                continue
        kind: ErrorKind = "exception" if result.kind == "ok" else result.kind
        failed.append((task, result, kind, error))
    if done.records:
        ctx.commit(done)
    for task, result, kind, error in failed:
        ctx.commit(failure(ctx, task, result, kind, error))
    for result in results:
        ctx.hook("after_commit", result.job.task_id)


def given_back(ctx: RunContext, result: Result) -> Change:
    """The model calls counted at the dispatch of ``result``'s call that it did not make (its
    arguments came from the reply cache, or it failed before asking), given back; and any it made
    past them. A call cut off by its deadline keeps what was counted: its ask may still be under
    way."""
    counted = ctx.asked.pop(result.job.call_id, 0)
    if not counted or result.kind == "timeout":
        return NOTHING
    asker = asks_model(ctx.tools.get(result.job.tool))
    if asker is None:
        return NOTHING
    made = asker.model_calls_made(result.job.task_id, result.job.call.attempt)
    return NOTHING if made == counted else Change((ModelCalls(asker.purpose, made - counted),), ())


def failure(ctx: RunContext, task: Task, result: Result, kind: ErrorKind, error: str) -> Change:
    """A failed call's change: a write cut off by its deadline or by its server's death, which
    may have been made, is reconciled first."""
    job = result.job
    risk = ctx.problem.tools[task.tool].risk
    if kind in ("timeout", "lost") and risk == "write":
        settled = reconcile(ctx, task, job.call_id, job.started, job.call.idempotency_key)
        if isinstance(settled, Change):
            return settled
        if settled == "cannot_tell":
            return failed_for_good(
                task,
                "unknown",
                f"{error}; {NO_RECONCILE}",
                state=ctx.state,
                ev=ctx.ev,
                call_id=job.call_id,
                call_status=CallStatus.UNKNOWN,
                started=job.started,
                finished=result.finished,
            )
    return call_failed(
        task,
        call_id=job.call_id,
        kind=kind,
        error=error,
        retryable=result.retryable,
        started=job.started,
        finished=result.finished,
        risk=risk,
        state=ctx.state,
        policy=ctx.retry_policy(task),
        ev=ctx.ev,
    )


def checked_outputs(
    ctx: RunContext, task: Task, outputs: Mapping[str, Any] | None
) -> tuple[dict[str, Any] | None, str]:
    """The outputs as the journal keeps them (JSON data), or why they cannot be kept (a
    declared output missing, or a value that is not JSON: a run folder holds data only)."""
    produced = produced_by(ctx.problem, task) or ()
    missing = [f for f in produced if outputs is None or f not in outputs]
    if missing:
        return None, f"returned no {', '.join(repr(f) for f in missing)}"
    try:
        return json.loads(dumps(dict(outputs or {}))), ""
    except (TypeError, ValueError) as exc:
        return None, f"returned outputs that are not JSON data ({exc})"


def reconcile(ctx: RunContext, task: Task, call_id: int, started: float, key: str | None) -> Reconciled:
    """Ask a write's tool whether the call was made under ``key``, the idempotency key it was
    dispatched with (see :data:`Reconciled`)."""
    rec = reconciler(ctx.tools.get(task.tool))
    if rec is None or key is None:
        return "cannot_tell"
    try:
        found = rec(key)
    except Exception:
        return "cannot_tell"
    if found is None:
        return "not_made"
    outputs, _ = checked_outputs(ctx, task, found)
    if outputs is None:
        return "cannot_tell"
    return succeeded(
        task,
        call_id=call_id,
        call_status=CallStatus.RECONCILED,
        outputs=outputs,
        started=started,
        finished=ctx.clock.now(),
        attempt=ctx.state.attempts.get(task.id, 1),
        risk=ctx.problem.tools[task.tool].risk,
        ev=ctx.ev,
    )
