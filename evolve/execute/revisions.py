"""Revisions of the plan: the first one, and replanning (ask the replanner, check its proposal,
commit it as a new revision with its tasks' rows and planned times); under a rolling horizon,
each revision's committed window and the horizon's move when that window is over."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from evolve.execute import horizon
from evolve.execute.context import RunContext
from evolve.execute.limits import llm_budget_left, model_calls_made, over_llm_budget, spent_text
from evolve.execute.outcome import PlanDiff, Reason, Stop
from evolve.execute.records import ModelCalls, Record, ReplanTried, Revised, TaskRow, Window
from evolve.execute.replan import (
    Metered,
    Refusing,
    evidence,
    pending_plan,
    signature,
    situation,
    template_proposal,
    translate,
)
from evolve.execute.transitions import Change, horizon_lifted, horizon_reached
from evolve.model.evaluation import resolver
from evolve.model.patch import stale
from evolve.model.plan import Plan
from evolve.model.status import TaskStatus
from evolve.model.validate import validate
from evolve.scheduling import schedule


def replan(ctx: RunContext) -> None:
    """One replan: the step, replan and model-call budgets checked, the replanner asked, its
    proposal made a patch of the live plan, refused if seen before or invalid, else committed.

    A :class:`~evolve.execute.replan.Metered` replanner's calls are journaled before it is asked
    (what it may spend at most), and what it did not spend is given back with the replan tried."""
    state, options = ctx.state, ctx.options
    reason = state.replan or "replan"
    if state.replans >= options.max_replans:
        ctx.halt(Stop(Reason.REPLAN_BUDGET, f"--max-replans {options.max_replans} spent; {reason}"))
        return
    if state.steps >= options.steps:
        ctx.halt(Stop(Reason.STEP_BUDGET, f"--max-steps {options.steps} spent before a replan; {reason}"))
        return
    if ctx.replanner is None:
        ctx.halt(Stop(Reason.NO_PLAN, f"no replanner; {reason}"))
        return
    revision = state.revision + 1
    # under a rolling horizon the problem as it now stands also says what the tools were seen to make
    known = ctx.problem
    if options.horizon is not None:
        known = horizon.observed_problem(ctx.problem, ctx.journal.calls())
    now_situation = situation(known, state.plan, state.status, state.outputs, state.excluded, reason)
    metered = ctx.replanner if isinstance(ctx.replanner, Metered) else None
    left = llm_budget_left(ctx)
    need = metered.model_calls_needed(now_situation, left) if metered is not None else 0
    spent = over_llm_budget(ctx, need, f"the replan of revision {revision}")
    if spent is not None:
        ctx.halt(Stop(spent.reason, f"{spent.message}; {reason}"))
        return
    if need:
        ctx.commit(Change((ModelCalls("replan", need),), ()))
    folder = ctx.run_dir / "replans" / f"r{revision}"
    proposal = ctx.replanner.propose(now_situation, revision, options.seed + revision, folder)
    tried: tuple[Record, ...] = (ReplanTried(state.replans + 1),)
    if metered is not None and metered.spent != need:
        tried += (ModelCalls("replan", metered.spent - need),)
    draft: dict[str, Any] = {"revision": revision, "reason": reason}
    fallback: str | None = None
    if proposal is None:
        event = ctx.ev.event("plan.draft", replanner=ctx.replanner.name, plan=None, folder=None, **draft)
        ctx.commit(Change(tried, (event,)))
        tried = ()
        excluded = ", ".join(sorted(state.excluded)) or "change"
        found = f"the {ctx.replanner.name} replanner found no valid, complete plan without {excluded}"
        proposal = template_proposal(now_situation, ctx.problem)
        if proposal is not None:
            fallback = f"{found}; the problem's template instead"
        else:
            budget = ctx.problem.limits.max_llm_calls
            if metered is not None and metered.spent and budget is not None and llm_budget_left(ctx) == 0:
                # it spent what was left: more calls might have found one
                made = spent_text(budget, model_calls_made(ctx))
                ctx.halt(Stop(Reason.LLM_BUDGET,
                              f"{made}, and {found} with the last {metered.spent}; {reason}"))
                return
            answers = ctx.replanner.refused if isinstance(ctx.replanner, Refusing) else ()
            if answers:  # its answers were refused, not none given: asked again while replans are left
                if state.replans >= options.max_replans:
                    why = f"{ctx.replanner.name}'s plans refused each time (last: {answers[0]})"
                    budget_spent = f"--max-replans {options.max_replans} spent"
                    ctx.halt(Stop(Reason.REPLAN_BUDGET, f"{budget_spent}, the {why}; {reason}"))
                return
            ctx.halt(Stop(Reason.NO_PLAN, f"{found}; {reason}"))
            return
    base = state.revision if proposal.base_version is None else proposal.base_version
    patch = translate(
        now_situation, proposal.plan, state.plan, state.status, set(ctx.journal.tasks()), revision
    )
    patch = replace(patch, base_version=base,
                    evidence=evidence(now_situation, resolver(ctx.facts, state.outputs)))
    event = ctx.ev.event(
        "plan.draft",
        replanner=proposal.source,
        plan=patch.plan.to_dict(),
        folder=proposal.folder,
        note=proposal.note,
        base_version=base,
        **draft,
    )
    ctx.commit(Change(tried, (event,)))
    refused = stale(base, state.revision)
    if refused is not None:
        ctx.halt(Stop(Reason.NO_PLAN, f"{refused}, so it is not applied; {reason}"))
        return
    sig = signature(patch.plan, {**state.status, **{t.id: "pending" for t in patch.added}})
    if sig in state.signatures:
        ctx.halt(Stop(Reason.LOOP_DETECTED,
                      f"the replanner proposed a plan it had proposed before; {reason}"))
        return
    banned = [t.id for t in patch.added if t.tool in state.excluded]
    errors = [str(e) for e in validate(ctx.problem, patch.plan, ctx.facts)]
    if banned:
        errors.append(f"uses excluded tools in {', '.join(banned)}")
    if errors:
        ctx.halt(Stop(Reason.NO_PLAN, f"the replanned plan is not valid: {errors[0]}"))
        return
    record = patch.to_dict()
    if fallback is not None:
        record["fallback"] = {"reason": "template_fallback", "message": fallback}
    commit_revision(
        ctx, revision, patch.plan, patch=record, reason=reason, invalidated=patch.invalidate, sig=sig
    )
    ctx.queue.clear_ready()
    ctx.mark_pending()


def move_horizon(ctx: RunContext) -> bool:
    """Under a rolling horizon whose committed tasks are all over: ask for the rest to be planned
    again (the replan then runs as any other), or, with no replan left, commit the rest as it
    stands. ``False``: the horizon does not move (none set, or not reached)."""
    state = ctx.state
    can_replan = ctx.replanner is not None and state.replans < ctx.options.max_replans
    move = horizon.step(ctx.problem, state, can_replan)
    if move is None:
        return False
    if move == "replan":
        ctx.commit(horizon_reached(state, horizon.REASON, ctx.ev))
    else:
        ctx.commit(horizon_lifted(state, ctx.ev))
        ctx.mark_pending()
    return True


def commit_revision(
    ctx: RunContext,
    revision: int,
    plan: Plan,
    *,
    patch: dict[str, Any] | None,
    reason: str,
    invalidated: Iterable[str],
    sig: str | None = None,
    meta: Mapping[str, Any] | None = None,
    also: tuple[Record, ...] = (),
) -> None:
    """Commit a revision: new tasks' rows with their planned times, the invalidated tasks, the
    ``plan.diff`` and ``plan.commit`` events, and the replan request cleared; under a rolling
    horizon, in the same transaction, the tasks it commits (its window, ``plan.window``); and
    ``also``, records that belong to the same transaction (a new run's model calls so far)."""
    gone = tuple(invalidated)
    status: dict[str, TaskStatus] = dict(ctx.state.status)
    for tid in gone:
        status[tid] = TaskStatus.INVALIDATED
    for task in plan.tasks:
        status.setdefault(task.id, TaskStatus.PENDING)
    if sig is None:
        sig = signature(plan, status)
    now = ctx.clock.now()
    planned = schedule(ctx.problem, pending_plan(plan, status))
    rows = []
    for task in plan.tasks:
        start = planned.start.get(task.id)
        rows.append(
            TaskRow(
                task_id=task.id,
                revision=revision,
                tool=task.tool,
                risk=ctx.ev.risk_of(task.tool),
                status=status[task.id],
                planned_start=None if start is None else now + start,
                planned_finish=None if start is None else now + planned.finish[task.id],
            )
        )
    diff = PlanDiff.of(revision, patch or {}, reason).to_dict() if patch is not None else {}
    events = [ctx.ev.event("plan.diff", **diff)] if patch is not None else []
    events.append(
        ctx.ev.event(
            "plan.commit",
            revision=revision,
            plan=plan.to_dict(),
            tasks=len(plan.tasks),
            planned={
                tid: {"start": now + planned.start[tid], "finish": now + planned.finish[tid]}
                for tid in planned.start
            },
        )
    )
    revised = Revised(revision, plan, gone, sig, patch, diff, reason, now, tuple(rows))
    records: tuple[Record, ...] = (revised, *also)
    k = ctx.options.horizon
    if k is not None:
        committed = horizon.window(ctx.problem, plan, status, k)
        records += (Window(revision, committed),)
        events.append(ctx.ev.event("plan.window", revision=revision, horizon=k, committed=list(committed)))
    ctx.commit(Change(records, tuple(events)), meta)
    ctx.reindex()
