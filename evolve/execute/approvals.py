"""People in the loop, the executor's side: asking, the gate at dispatch, and settling decisions.

- :func:`ask`: a ready task whose tool a person owns (``by: human``) is not dispatched: an
  :class:`~evolve.execute.records.Asked` puts it ``waiting`` with the exact action it approves
  (the writes downstream of it, their tools and bound inputs, hashed; see
  :mod:`evolve.execute.people`). An approval of an action a person rejected before is refused
  without asking.
- :func:`gate`: checked when a write or an approval is dispatched. A write whose action was
  rejected is refused (``refused``: a replan without its tool, as for a false ``assumes``), and
  so is an automatic approval of one; a write whose human approval approved another action (a
  replan changed its inputs or its tool) is not run: the approval is asked again with the new
  action.
- authorization: a write or approval whose scope the run no longer grants is refused.
- thresholds (``policy.approval_required``): a write whose condition holds on its actual
  inputs is refused, named with the values, when no approval upstream is done.
- :func:`take_decisions`: a waiting task whose ask a person decided is settled from the
  decision (approved, answered: ``done`` with outputs; rejected: failed for good under its
  ``on_failure``).
- :func:`poll`: with ``--wait``, the decisions another process committed are folded in.

The transitions (:func:`asked`, :func:`settled_by`) are pure, like those of
:mod:`evolve.execute.transitions`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from evolve.execute.context import RunContext, bind
from evolve.execute.events import Events
from evolve.execute.people import action_hash, iso, write_hash
from evolve.execute.records import Asked, AskKind, Decided, Settled, Verdict
from evolve.execute.state import RunState
from evolve.execute.transitions import NOTHING, Change, failed_for_good, replan_asked
from evolve.model.evaluation import holds, inputs_resolver
from evolve.model.expression import ExpressionError, parse_expression
from evolve.model.graph import upstream
from evolve.model.plan import Task, parse_ref
from evolve.model.status import TaskStatus
from evolve.model.validate import produced_by


def asked(
    task: Task,
    kind: AskKind,
    *,
    ask_id: int,
    action: dict[str, Any] | None,
    since_wall: float,
    ev: Events,
) -> Change:
    """A task a person owns starts waiting for them (event ``awaiting_approval`` or
    ``awaiting_answer``, with the exact action)."""
    digest = None if action is None else action_hash(action["writes"])
    now = ev.clock.now()
    event = ev.step(
        f"awaiting_{kind}", task, attempt=0, kind=kind, action=action, action_hash=digest,
        since=iso(since_wall),
    )
    return Change((Asked(ask_id, task.id, kind, task.tool, action, digest, now, since_wall),), (event,))


def settled_by(task: Task, made: Decided, fields: tuple[str, ...], *, state: RunState, ev: Events) -> Change:
    """A waiting task settled from a person's decision: approved (each declared output is the
    approval's record) or answered (the outputs given) is ``done``; rejected fails for good."""
    if made.verdict == Verdict.REJECTED:
        why = f"rejected by {made.by}" + (f": {made.note}" if made.note else "")
        return failed_for_good(task, "rejected", why, state=state, ev=ev)
    if made.verdict == Verdict.ANSWERED:
        outputs = dict(made.outputs or {})
    else:
        record = {
            "approved": True,
            "by": made.by,
            "at": iso(made.at),
            "note": made.note,
            "action_hash": made.action_hash,
        }
        outputs = {name: record for name in fields}
    now = ev.clock.now()
    event = ev.step("step.end", task, attempt=0, status=made.verdict, by=made.by, started=now, finished=now)
    return Change((Settled(task.id, TaskStatus.DONE, outputs=outputs, finished=now),), (event,))


def needs_person(ctx: RunContext, task: Task) -> bool:
    """Whether ``task`` waits for a person (a dry run cannot: its human tasks are simulated)."""
    tool = ctx.problem.tools.get(task.tool)
    return tool is not None and tool.by == "human" and not ctx.simulate


def risk(ctx: RunContext, task: Task) -> str:
    return ctx.ev.risk_of(task.tool)


def deps_map(ctx: RunContext) -> dict[str, tuple[str, ...]]:
    return {tid: t.deps for tid, t in ctx.index.tasks.items()}


def action_inputs(ctx: RunContext, write: Task) -> dict[str, Any]:
    """A write's inputs as its action: bound, except those that read an approval's own record
    (an approval cannot approve what it is about to say)."""
    bound = bind(ctx, write)
    for key, value in write.inputs.items():
        ref = parse_ref(value)
        source = ctx.index.tasks.get(ref.task or "") if ref is not None else None
        if source is not None and risk(ctx, source) == "approval":
            del bound[key]
    return bound


def action_of(ctx: RunContext, task: Task) -> dict[str, Any]:
    """What approval ``task`` approves: every write still to run downstream of it, with its
    tool and inputs bound as they now stand (``null`` for an input not known yet: the write then
    differs at dispatch, and the approval is asked again)."""
    deps = deps_map(ctx)
    writes = []
    for tid, other in sorted(ctx.index.tasks.items(), key=lambda kv: ctx.index.topo.get(kv[0], 0)):
        if (
            risk(ctx, other) == "write"
            and ctx.state.status.get(tid) == TaskStatus.PENDING
            and task.id in upstream(tid, deps)
        ):
            inputs = action_inputs(ctx, other)
            writes.append(
                {"task": tid, "tool": other.tool, "inputs": inputs, "hash": write_hash(other.tool, inputs)}
            )
    return {"writes": writes}


def next_ask_id(state: RunState) -> int:
    return max(state.asked, default=0) + 1


def ask(ctx: RunContext, task: Task) -> None:
    """Put ``task`` waiting for a person (an approval of a rejected action is refused instead)."""
    kind: AskKind = AskKind.APPROVAL if risk(ctx, task) == "approval" else AskKind.ANSWER
    action = action_of(ctx, task) if kind == AskKind.APPROVAL else None
    refused = not_granted(ctx, task) if kind == AskKind.APPROVAL else None
    refused = refused or rejected_in(ctx, task, action)
    if refused is not None:
        ctx.commit(refused)
        return
    given = approved_before(ctx.state, action)
    if given is not None:  # a person approved these very writes already: never asked twice
        fields = tuple(produced_by(ctx.problem, task) or ())
        ctx.commit(settled_by(task, given, fields, state=ctx.state, ev=ctx.ev))
        return
    ctx.commit(
        asked(task, kind, ask_id=next_ask_id(ctx.state), action=action, since_wall=time.time(), ev=ctx.ev)
    )


def approved_before(state: RunState, action: dict[str, Any] | None) -> Decided | None:
    """A person's approval of every write of ``action`` (each the same tool with the same bound
    inputs), given on an earlier ask of the run (``None``: none, or ``action`` holds no write).
    A replan or a rolling horizon may put a new approval before writes a person already
    approved: the approval carries over, as the gate lets a write run on its own hash."""
    hashes = {w["hash"] for w in (action or {}).get("writes", ())}
    if not hashes:
        return None
    for ask_id, made in sorted(state.decided.items()):
        granted = state.asked[ask_id].action or {}
        if made.verdict == Verdict.APPROVED and hashes <= {w["hash"] for w in granted.get("writes", ())}:
            return made
    return None


def not_granted(ctx: RunContext, task: Task) -> Change | None:
    """Authorization at dispatch: a write or approval whose tool's scope the run's problem does
    not grant (now: a run resumed with other scopes) fails, named, under its ``on_failure``."""
    tool = ctx.problem.tools.get(task.tool)
    if tool is None or ctx.problem.scope_granted(tool.scope):
        return None
    granted = ", ".join(ctx.problem.scopes or ()) or "none"
    why = f"refused: scope {tool.scope!r} of {task.tool} is not granted to this run (scopes: {granted})"
    return failed_for_good(task, "refused", why, state=ctx.state, ev=ctx.ev)


def rejected_in(ctx: RunContext, task: Task, action: dict[str, Any] | None) -> Change | None:
    """The refusal of an approval whose action holds a write a person rejected (else ``None``)."""
    for write in (action or {}).get("writes", ()):
        ask_id = ctx.state.rejected.get(write["hash"])
        if ask_id is not None:
            return refusal(ctx, task, f"it approves {write['task']} ({write['tool']})", ask_id)
    return None


def refusal(ctx: RunContext, task: Task, what: str, ask_id: int) -> Change:
    """A task that would run a rejected action: the plan is wrong about what may be done, as
    with a false ``assumes``, so it is replanned without the task's tool (the task is left to
    the replan, which invalidates it; with no replan left the run stops)."""
    made = ctx.state.decided[ask_id]
    rejected_task = ctx.state.asked[ask_id].task_id
    why = (
        f"{task.id} ({task.tool}) refused: {what}, an action {made.by} rejected at {iso(made.at)} "
        f"(in {rejected_task}; a rejection is final for that action)"
    )
    return replan_asked(task, why, "refused", state=ctx.state, ev=ctx.ev)


def gate(ctx: RunContext, task: Task) -> Change | None:
    """What happens instead of dispatching ``task`` (``None``: it is dispatched).

    A write: refused if its action was rejected; held, and its approval asked again, if a
    human approval upstream approved another action (or is waiting again). An automatic
    approval: refused if it would approve a rejected action."""
    kind = risk(ctx, task)
    if kind in ("approval", "write"):
        unauthorized = not_granted(ctx, task)
        if unauthorized is not None:
            return unauthorized
    if kind == "approval":
        return rejected_in(ctx, task, action_of(ctx, task))
    if kind != "write":
        return None
    digest = write_hash(task.tool, action_inputs(ctx, task))
    if digest in ctx.state.rejected:
        return refusal(ctx, task, f"{task.tool} with these inputs", ctx.state.rejected[digest])
    deps = deps_map(ctx)
    above = over_threshold(ctx, task)
    if above is not None and not any(
        risk(ctx, ctx.index.tasks[up]) == "approval" and ctx.state.status.get(up) == TaskStatus.DONE
        for up in upstream(task.id, deps)
    ):
        why = f"refused: {above}, and no approval upstream (policy.approval_required)"
        return failed_for_good(task, "refused", why, state=ctx.state, ev=ctx.ev)
    for tid in sorted(upstream(task.id, deps), key=lambda t: ctx.index.topo.get(t, 0)):
        approval = ctx.index.tasks[tid]
        if risk(ctx, approval) != "approval" or not needs_person(ctx, approval):
            continue
        status = ctx.state.status.get(tid)
        if status == TaskStatus.SKIPPED:
            continue
        if status != TaskStatus.DONE:
            return NOTHING  # asked again: the write waits with it
        granted = ctx.state.ask(tid)
        hashes = {w["hash"] for w in ((granted.action or {}).get("writes", ()) if granted else ())}
        if digest not in hashes:
            action = action_of(ctx, approval)
            return asked(
                approval,
                AskKind.APPROVAL,
                ask_id=next_ask_id(ctx.state),
                action=action,
                since_wall=time.time(),
                ev=ctx.ev,
            )
    return None


def over_threshold(ctx: RunContext, task: Task) -> str | None:
    """What makes the write need an approval by the problem's ``policy.approval_required``,
    checked on its actual inputs (``None``: it does not). A condition that cannot be decided on
    them (an input missing, a type error) counts as holding: the write is not let through."""
    condition = ctx.problem.policy.threshold(task.tool)
    if condition is None:
        return None
    inputs = bind(ctx, task)
    expr = parse_expression(condition)
    resolve = inputs_resolver(inputs)
    try:
        if not holds(expr, resolve):
            return None
    except ExpressionError as exc:
        return f"{condition} cannot be decided on its inputs ({exc})"
    values = []
    for ref in expr.refs:
        try:
            values.append(f"{ref} = {json.dumps(resolve(ref, ()), default=str)}")
        except KeyError:
            values.append(f"{ref} unknown")
    return f"{condition} holds ({', '.join(values)})"


def take_decisions(ctx: RunContext) -> bool:
    """Settle every waiting task a person decided; whether any was."""
    taken = False
    for tid, ask_id in list(ctx.state.latest.items()):
        made = ctx.state.decided.get(ask_id)
        task = ctx.index.tasks.get(tid)
        if made is None or task is None or ctx.state.status.get(tid) != TaskStatus.WAITING:
            continue
        fields = tuple(produced_by(ctx.problem, task) or ())
        ctx.commit(settled_by(task, made, fields, state=ctx.state, ev=ctx.ev))
        taken = True
    if taken:
        ctx.mark_pending()  # a write held for its approval may be further down than its successors
    return taken


def waiting(ctx: RunContext) -> list[str]:
    """The live plan's tasks waiting for a person."""
    return [tid for tid in ctx.index.tasks if ctx.state.status.get(tid) == TaskStatus.WAITING]


def poll(ctx: RunContext) -> bool:
    """Fold in the decisions another process committed (``evolve approve`` while this session
    waits), with their events; whether there were any."""
    new = [d for d in ctx.journal.history(("Decided",))
           if isinstance(d, Decided) and d.ask_id not in ctx.state.decided]
    if not new:
        return False
    for made in new:
        ctx.state.apply(made)
    seen = ctx.journal.seq
    events = [e for e in ctx.journal.events() if int(e["seq"]) > seen]
    ctx.journal.seq = max([seen, *(int(e["seq"]) for e in events)])
    ctx.log.emit(events)
    return True
