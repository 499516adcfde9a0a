"""The executor: runs a plan's tasks as their inputs become known, durably, and replans.

One coordinator loop, in this order, until nothing is left to do:

1. the *readiness pass* (:mod:`evolve.execute.readiness_pass`): every pending task whose
   upstream changed is looked up in the readiness table; skips are committed, an ``assumes``
   whose references are all known is checked (false: replan);
2. *dispatch* (:mod:`evolve.execute.calls`): ready tasks, longest remaining path first, while a
   ``max_parallel`` slot is free, the tool's ``uses`` fit the resources and steps are left;
   each call's dispatch record is committed before the call is made;
3. the *result commit* (:mod:`evolve.execute.result_commit`): answers from the dispatcher, each
   committed in one transaction (outputs and ``done``, or the error); a failure is retried
   (:class:`~evolve.execute.retry.RetryPolicy`) or is final, and then its ``on_failure`` decides;
4. *replan* (:mod:`evolve.execute.revisions`), once nothing is running, when asked for (under a
   rolling horizon, :mod:`evolve.execute.horizon`, also when the committed tasks are over);
5. *people* (:mod:`evolve.execute.approvals`): when only tasks a person owns are left, the
   session stops ``waiting`` (or, with ``wait``, polls the journal for their decisions); a
   resumed session first settles what people decided while it was stopped.

Every change is a record committed by :meth:`~evolve.execute.context.RunContext.commit`, journal
first, so a run killed anywhere continues with :meth:`Executor.resume`
(:mod:`evolve.execute.recovery`). The design is in ``docs/executor-design.md``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evolve.execute.approvals import poll, take_decisions, waiting
from evolve.execute.calls import start_ready
from evolve.execute.context import POINTS, Hook, RunContext, no_hook
from evolve.execute.dispatch import Dispatcher
from evolve.execute.events import EventLog
from evolve.execute.htn import goal_unmet
from evolve.execute.htn_tools import ARGFILL, read_ledger
from evolve.execute.journal import Journal
from evolve.execute.options import ExecuteOptions
from evolve.execute.outcome import Reason, RunStatus, Stop, build_outcome, criteria_made, run_status, verdict
from evolve.execute.readiness_pass import readiness_pass
from evolve.execute.records import ModelCalls
from evolve.execute.recovery import recover, resumed
from evolve.execute.replan import Replanner
from evolve.execute.result_commit import commit_results
from evolve.execute.revisions import commit_revision, move_horizon, replan
from evolve.execute.state import RunState
from evolve.execute.tools import ToolFn
from evolve.execute.transitions import Change
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.model.status import TaskStatus

__all__ = ["POINTS", "ExecuteOptions", "Executor", "Hook"]


class Executor:
    """One run of a plan. Build it with :meth:`start` (a new run) or :meth:`resume`."""

    def __init__(
        self,
        problem: Problem,
        journal: Journal,
        state: RunState,
        *,
        tools: Mapping[str, ToolFn],
        dispatcher: Dispatcher,
        options: ExecuteOptions,
        replanner: Replanner | None,
        facts: Mapping[str, Any],
        run_dir: Path,
        simulate: bool = False,
        on_event: Callable[[dict[str, Any]], None] | None = None,
        hook: Hook | None = None,
    ) -> None:
        self.journal = journal
        self.changed: dict[str, Any] = {}
        """The limits a resumed session changed: option -> ``[before, after]``."""
        self.ctx = RunContext(
            problem=problem,
            journal=journal,
            state=state,
            tools=tools,
            dispatcher=dispatcher,
            options=options,
            replanner=replanner,
            facts=dict(facts),
            run_dir=run_dir,
            log=EventLog(run_dir / "events.jsonl", on_event),
            simulate=simulate,
            hook=hook or no_hook,
        )

    @property
    def state(self) -> RunState:
        return self.ctx.state

    @classmethod
    def start(
        cls,
        problem: Problem,
        plan: Plan,
        journal: Journal,
        meta: Mapping[str, Any],
        model_calls: Mapping[str, int] | None = None,
        **kwargs: Any,
    ) -> Executor:
        """A new run of ``plan``: revision 0 committed with every task pending, and
        ``model_calls``, those made before the run (by purpose), counted against its
        ``limits.max_llm_calls``."""
        (kwargs["run_dir"] / "events.jsonl").write_text("")
        state = RunState(plan=plan, revision=0, status={t.id: TaskStatus.PENDING for t in plan.tasks})
        executor = cls(problem, journal, state, **kwargs)
        spent = tuple(ModelCalls(purpose, calls) for purpose, calls in (model_calls or {}).items() if calls)
        # what the run is, with its first revision: one transaction, so a journal either holds a
        # run that can be resumed or nothing
        commit_revision(
            executor.ctx, 0, plan, patch=None, reason="the plan as given", invalidated=(), meta=meta,
            also=spent,
        )
        return executor

    @classmethod
    def resume(cls, problem: Problem, journal: Journal, changed: Mapping[str, Any] | None = None,
               **kwargs: Any) -> Executor:
        """The run in ``journal`` where it stopped; ``events.jsonl`` is written again from it.
        ``changed``: the limits this session was given instead of the run's (option ->
        ``[before, after]``), journaled with its ``session.resume`` event."""
        state = RunState.restore(journal)
        EventLog.rewrite(kwargs["run_dir"] / "events.jsonl", journal.events())
        executor = cls(problem, journal, state, **kwargs)
        executor.changed = dict(changed or {})
        resumed(executor.ctx)
        limits = {"limits": executor.changed} if executor.changed else {}
        executor.ctx.commit(Change((), (executor.ctx.ev.event("session.resume", **limits),)))
        return executor

    def run(self) -> dict[str, Any]:
        """Run until the plan is done or a stop; returns ``outcome.json``'s content."""
        ctx = self.ctx
        complete = self.journal.meta().get("complete")
        try:
            if complete:
                return self.outcome(complete["reason"], complete["message"], record=False)
            recover(ctx)
            take_decisions(ctx)
            ctx.mark_pending()
            waited_until = time.monotonic() + ctx.options.wait
            while True:
                if ctx.stop is None:
                    readiness_pass(ctx)
                if ctx.stop is None and ctx.state.replan is None:
                    start_ready(ctx)
                if ctx.dispatcher.running():
                    wake = ctx.queue.next_wake(ctx.clock.now(), stopping=ctx.stop is not None)
                    commit_results(ctx, ctx.dispatcher.collect(wake))
                    ctx.log.flush()
                    continue
                if ctx.stop is not None:
                    break
                if ctx.state.replan is None and move_horizon(ctx):
                    continue  # a rolling horizon's committed tasks are over: the rest is planned again
                if ctx.state.replan is not None and not waiting(ctx):
                    replan(ctx)  # (while a person decides, the replan waits: it sees the decision)
                    continue
                timer = ctx.queue.next_timer()
                if timer is not None:
                    ctx.dispatcher.collect(timer)  # nothing runs: wait for the retry's time
                    continue
                people = waiting(ctx)
                if people and time.monotonic() < waited_until:
                    began = time.monotonic()
                    time.sleep(min(ctx.options.wait_poll, max(0.0, waited_until - time.monotonic())))
                    ctx.waited_in_sessions += time.monotonic() - began
                    if poll(ctx):
                        take_decisions(ctx)
                    continue
                if people:
                    ctx.halt(Stop(Reason.WAITING, f"waiting for a person: {', '.join(people)}"))
                break
            state = ctx.state
            made = criteria_made(ctx.problem, state.plan, state.status, state.outputs)
            unmet = goal_unmet(ctx.problem, state.plan, state.status, state.outputs)
            return self.outcome(*verdict(made, ctx.stop, unmet))
        finally:
            ctx.dispatcher.close()
            ctx.log.close()

    def outcome(self, reason: Reason, message: str, record: bool = True) -> dict[str, Any]:
        """``outcome.json``, written; the end of the session recorded (unless it was already)."""
        ctx = self.ctx
        status = run_status(reason)
        outcome = build_outcome(
            self.journal,
            ctx.problem,
            status=status,
            reason=reason,
            message=message,
            criteria=criteria_made(ctx.problem, ctx.state.plan, ctx.state.status, ctx.state.outputs),
            plan=ctx.state.plan.to_dict(),
            elapsed=ctx.clock.now(),
            replans_tried=ctx.state.replans,
            state=ctx.state,
            now_wall=time.time(),
            argfills=read_ledger(ctx.run_dir / ARGFILL),
        )
        if record and status == RunStatus.WAITING:  # not over: --resume goes on from the decision
            event = ctx.ev.event("session.wait", pending=[p["task"] for p in outcome["pending"]])
            ctx.commit(Change((), (event,)), meta={"waited_in_sessions": ctx.waited_in_sessions})
            ctx.log.flush()
        elif record:
            event = ctx.ev.event(
                "session.complete",
                status=status,
                reason=reason,
                steps=outcome["steps"],
                replans=outcome["replans"],
            )
            meta = {
                "complete": {"reason": reason, "message": message},
                "waited_in_sessions": ctx.waited_in_sessions,
            }
            ctx.commit(Change((), (event,)), meta=meta)
            ctx.log.flush()
        (ctx.run_dir / "outcome.json").write_text(json.dumps(outcome, indent=2, default=str) + "\n")
        return outcome
