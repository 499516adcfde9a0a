"""The readiness pass: each pending task whose upstream changed, looked up in the readiness
table (:mod:`evolve.execute.readiness`) and sent on: queued to start, skipped, failed without a
call, (a false ``assumes``) a replan asked for, or (a task a person owns) put waiting for them.
Its decisions are committed as they are made.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

from evolve.execute.approvals import ask, needs_person
from evolve.execute.context import RunContext
from evolve.execute.outcome import Reason, Stop
from evolve.execute.readiness import Policy, When, aggregate, decide
from evolve.execute.transitions import failed_for_good, replan_asked, skipped, task_policy
from evolve.model.evaluation import UnknownReference, holds, resolver
from evolve.model.expression import ExpressionError, parse_expression
from evolve.model.plan import Task, tested_in_text
from evolve.model.status import SATISFIED, TaskStatus

SKIP_WHY: dict[When, str] = {
    "false": "when is false",
    "unknown": "when reads an output that was never made",
}
CASCADE_WHY = "an upstream task failed (skip_dependents)"


def readiness_pass(ctx: RunContext) -> None:
    """Decide every task on the agenda (a task waiting for its retry is taken up when its time
    comes; one already queued stays queued; under a rolling horizon, a task outside the
    committed window is left for the next revision)."""
    status = ctx.state.status
    committed = ctx.state.window  # under a rolling horizon, only these may go on
    seen: set[str] = set()
    while ctx.agenda and ctx.stop is None:
        _, tid = heapq.heappop(ctx.agenda)
        if (
            tid in seen
            or status.get(tid) != TaskStatus.PENDING
            or ctx.queue.is_queued(tid)
            or ctx.queue.is_waiting(tid)
            or (committed is not None and tid not in committed)
        ):
            continue
        seen.add(tid)
        task = ctx.index.tasks[tid]
        if not assumptions_hold(ctx, task, at_dispatch=False):
            continue
        tested = tested_by(task)
        upstream, policy = aggregate(
            (*dep_state(ctx, d), d in tested) for d in task.deps if d in ctx.index.tasks
        )
        when, when_error = when_value(ctx, task) if upstream in ("done", "branch") else ("absent", "")
        decision = decide(upstream, when, policy)
        if decision == "ready":
            if needs_person(ctx, task):
                # a replan asked for may change what this task would be asked: it goes first
                if ctx.state.replan is None and assumptions_hold(ctx, task, at_dispatch=True):
                    ask(ctx, task)
            elif assumptions_hold(ctx, task, at_dispatch=True):
                ctx.queue.push(tid, ctx.index.tail.get(tid, 0.0), ctx.index.topo.get(tid, 0))
        elif decision == "skip":
            cascade = upstream == "failed"
            ctx.commit(skipped(task, SKIP_WHY.get(when, CASCADE_WHY), cascade=cascade, ev=ctx.ev))
        elif decision == "fail":
            if when != "error":
                ctx.halt(Stop(Reason.TASK_FAILED, f"{tid} cannot run: an upstream task failed"))
            else:
                ctx.commit(failed_for_good(task, "expression", when_error, state=ctx.state, ev=ctx.ev))


def resolve(ctx: RunContext) -> Callable[[Any, tuple[str, ...]], Any]:
    return resolver(ctx.facts, ctx.state.outputs)


def status_of(ctx: RunContext) -> Callable[[str], str]:
    return lambda tid: ctx.state.status.get(tid, TaskStatus.PENDING)


def tested_by(task: Task) -> frozenset[str]:
    """The deps whose status the task's ``when`` tests (a failure branch)."""
    return frozenset(tested_in_text(task.when)) if task.when else frozenset()


def when_value(ctx: RunContext, task: Task) -> tuple[When, str]:
    """The ``when`` column of the table for ``task``, and the error when it is ``error``. A dry
    run cannot decide a condition on placeholder outputs, so every such branch runs; a condition
    that reads statuses only (``failed($t9)``) it decides, as statuses are real there too."""
    if not task.when:
        return "absent", ""
    try:
        expr = parse_expression(task.when)
        if ctx.simulate and expr.refs:
            return "absent", ""
        return ("true" if holds(expr, resolve(ctx), status_of(ctx)) else "false"), ""
    except UnknownReference:
        return "unknown", ""
    except ExpressionError as exc:
        return "error", f"when {task.when!r}: {exc}"


def assumptions_hold(ctx: RunContext, task: Task, *, at_dispatch: bool) -> bool:
    """Whether the task may go on: its assumptions hold, or cannot be judged yet (before
    dispatch); ``False`` after asking for a replan (or failing the task on a broken one)."""
    if not task.assumes or task.id in ctx.assumed or ctx.simulate:
        return True
    if ctx.state.replan is not None and task.tool in ctx.state.excluded:
        return False  # the replan asked for already replaces it (a resumed session looks again)
    status = ctx.state.status
    for text in task.assumes:
        try:
            expr = parse_expression(text)
        except ExpressionError as exc:
            ctx.commit(
                failed_for_good(task, "expression", f"assumes {text!r}: {exc}", state=ctx.state, ev=ctx.ev)
            )
            return False
        known = all(ref.task is None or status.get(ref.task) in SATISFIED for ref in expr.refs)
        if not known and not at_dispatch:
            return True
        try:
            ok = holds(expr, resolve(ctx))
        except UnknownReference as exc:
            ok, text = False, f"{text} (cannot be confirmed: {exc})"
        except ExpressionError as exc:
            ctx.commit(
                failed_for_good(task, "expression", f"assumes {text!r}: {exc}", state=ctx.state, ev=ctx.ev)
            )
            return False
        if not ok:
            reason = f"{task.id} assumes {text}, which is false"
            ctx.commit(replan_asked(task, reason, "assumption", state=ctx.state, ev=ctx.ev))
            return False
    ctx.assumed.add(task.id)
    return True


def dep_state(ctx: RunContext, tid: str) -> tuple[str, Policy]:
    """A dep's status and policy as the readiness table reads them: a task skipped because
    an upstream task failed passes the skip on, as if it had failed under skip_dependents."""
    if tid in ctx.state.cascaded:
        return "failed", "skip_dependents"
    return ctx.state.status.get(tid, TaskStatus.PENDING), task_policy(ctx.index.tasks[tid])
