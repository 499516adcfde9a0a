"""Making calls: the ready tasks the queue lets start, their dispatch records (one transaction
for a whole wave: one sync to the disk), then the calls handed to the dispatcher. A write or an
approval the gate of :mod:`evolve.execute.approvals` stops is not dispatched."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from evolve.execute.approvals import gate
from evolve.execute.context import RunContext, bind
from evolve.execute.dispatch import Job
from evolve.execute.journal import dumps
from evolve.execute.limits import deadline_passed, llm_budget_spent
from evolve.execute.outcome import Reason, Stop
from evolve.execute.readiness_pass import readiness_pass
from evolve.execute.records import Dispatched, ModelCalls, Record
from evolve.execute.tools import Call, asks_model
from evolve.execute.transitions import Change
from evolve.model.keys import resolve_key
from evolve.model.plan import Task
from evolve.model.status import TaskStatus
from evolve.scheduling.base import demand_vector


def start_ready(ctx: RunContext) -> None:
    """Take up the retries whose time came, then start what the queue lets start."""
    for tid in ctx.queue.due(ctx.clock.now()):
        if ctx.state.status.get(tid) == TaskStatus.PENDING:
            ctx.mark(tid)
    if ctx.queue.next_timer() is not None or ctx.agenda:
        readiness_pass(ctx)
    late = deadline_passed(ctx)
    if late is not None:
        ctx.halt(late)
        return
    tasks = ctx.index.tasks
    taken, over = ctx.queue.take(
        ctx.dispatcher.running(),
        ctx.options.steps - ctx.state.steps,
        lambda tid: ctx.state.status.get(tid) == TaskStatus.PENDING,
        lambda tid: demand_vector(ctx.problem, tasks[tid].tool, ctx.capacity),
    )
    if over is not None and not taken and not ctx.dispatcher.running():
        # only once no call the steps left paid for is still out: its result may make the goal,
        # or skip what is ready (a step is a call made, never one merely ready)
        ctx.halt(Stop(Reason.STEP_BUDGET, f"--max-steps {ctx.options.steps} spent with {over} ready to run"))
    if taken:
        dispatch(ctx, [tasks[tid] for tid in taken])


def dispatch(ctx: RunContext, batch: list[Task]) -> None:
    """Make the calls of ``batch``: their dispatch records first, in one transaction, then the
    calls."""
    now = ctx.clock.now()
    jobs = []
    records: list[Record] = []
    events = []
    call_id = ctx.journal.next_call
    asking: dict[str, int] = {}  # model calls the wave's callables make themselves, by purpose
    for task in batch:
        tool = ctx.problem.tools[task.tool]
        attempt = ctx.state.attempts.get(task.id, 0) + 1
        # a dry run has no deadlines: its clock counts the catalog's units, not seconds
        timeout = math.inf if ctx.simulate else task.timeout or ctx.options.timeout
        ctx.hook("before_dispatch", task.id)
        inputs = bind(ctx, task)
        asker = asks_model(ctx.tools.get(task.tool))  # (a tool a person owns has no callable)
        asks = asker.model_calls_needed(task.id) if asker is not None else 0
        spent = llm_budget_spent(ctx, task, asks, asking)
        if spent is not None or ctx.stop is not None:
            ctx.halt(spent)
            ctx.queue.release(task.id)
            continue
        key = write_key_of(ctx, task, inputs)
        instead = gate(ctx, task)
        if instead is not None:
            ctx.queue.release(task.id)
            if instead.records:
                ctx.commit(instead)
            continue
        events.append(
            ctx.ev.step(
                "step.start",
                task,
                risk=tool.risk,
                attempt=attempt,
                idempotency_key=key,
                revision=ctx.state.revision,
            )
        )
        records.append(
            Dispatched(
                call_id, task.id, attempt, task.tool, tool.risk, key, dumps(inputs), now
            )
        )
        if asker is not None and asks:
            records.append(ModelCalls(asker.purpose, asks))  # with its dispatch: a crash never loses it
            asking[asker.purpose] = asking.get(asker.purpose, 0) + asks
            ctx.asked[call_id] = asks
        call = Call(
            task_id=task.id,
            attempt=attempt,
            idempotency_key=key,
            deadline=ctx.clock.wall_deadline(now + timeout),
            tool=task.tool,
        )
        jobs.append(
            Job(
                call_id=call_id,
                task_id=task.id,
                tool=task.tool,
                fn=ctx.tools[task.tool],
                inputs=tool.call_arguments(inputs),  # the callable's own parameter names
                call=call,
                started=now,
                deadline=now + timeout,
                duration=tool.duration,
            )
        )
        call_id += 1
        ctx.llm_calls += tool.llm_calls
    if records:
        ctx.commit(Change(tuple(records), tuple(events)))
    for job in jobs:
        ctx.hook("dispatched", job.task_id)
        ctx.dispatcher.submit(job)


def write_key_of(ctx: RunContext, task: Task, inputs: Mapping[str, Any]) -> str | None:
    """The idempotency key of this call: the task's template resolved on its bound inputs and
    the run's request id (:func:`evolve.model.keys.resolve_key`)."""
    if task.idempotency_key is None:
        return None
    return resolve_key(task.idempotency_key, request_id=ctx.options.request_id or "",
                       tool=task.tool, inputs=inputs)
