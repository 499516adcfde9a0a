"""What one session of a run works with, and :meth:`RunContext.commit`, the one way it changes.

:meth:`~RunContext.commit` writes a :class:`~evolve.execute.transitions.Change` to the journal in
one transaction (records, events, all or none), then folds the records into the
:class:`~evolve.execute.state.RunState`, then writes the numbered events to ``events.jsonl``,
then sets the timer of a task left waiting for a retry and wakes the dependents of every task
that reached a final status. Journal first: a crash between the two leaves memory behind the
journal, never ahead, and a resume folds the journal.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve.execute.dispatch import Clock, Dispatcher
from evolve.execute.events import EventLog, Events
from evolve.execute.journal import Journal
from evolve.execute.options import ExecuteOptions
from evolve.execute.outcome import Stop
from evolve.execute.queue import ReadyQueue
from evolve.execute.records import Settled
from evolve.execute.replan import Replanner, pending_plan
from evolve.execute.retry import RetryPolicy
from evolve.execute.state import RunState
from evolve.execute.tools import ToolFn
from evolve.execute.transitions import Change
from evolve.model.graph import successors, topological_order
from evolve.model.plan import Task, parse_ref
from evolve.model.problem import Problem
from evolve.model.status import TaskStatus
from evolve.scheduling.base import Capacity, PlanGraph, backward_tails

POINTS = ("before_dispatch", "dispatched", "before_commit", "after_commit")
"""Where a :data:`Hook` is called for each call: before its dispatch record, after it (the call
not yet made), after the call returned but before its result is committed, after the commit.
Fault-injection tests kill the process there."""

Hook = Callable[[str, str], None]
"""``hook(point, task_id)``."""


@dataclass
class PlanIndex:
    """The live plan's tasks by id, topological places, successors and longest remaining paths."""

    tasks: dict[str, Task]
    topo: dict[str, int]
    succ: dict[str, list[str]]
    tail: dict[str, float]

    @classmethod
    def of(cls, problem: Problem, state: RunState) -> PlanIndex:
        plan = state.plan
        deps = plan.dependency_map()
        return cls(
            tasks=plan.by_id(),
            topo={tid: i for i, tid in enumerate(topological_order(deps))},
            succ=successors(deps),
            tail=backward_tails(PlanGraph.of(problem, pending_plan(plan, state.status))),
        )


def no_hook(point: str, task_id: str) -> None:
    """The hook of a run nobody injects faults into."""


@dataclass
class RunContext:
    """A session of a run: its inputs, durable state, queue, agenda and the stop (if any)."""

    problem: Problem
    journal: Journal
    state: RunState
    tools: Mapping[str, ToolFn]
    dispatcher: Dispatcher
    options: ExecuteOptions
    replanner: Replanner | None
    facts: dict[str, Any]
    run_dir: Path
    log: EventLog
    simulate: bool = False
    hook: Hook = no_hook
    stop: Stop | None = None
    capacity: Capacity = field(init=False)
    queue: ReadyQueue = field(init=False)
    ev: Events = field(init=False)
    index: PlanIndex = field(init=False)
    agenda: list[tuple[int, str]] = field(default_factory=list)
    """Pending tasks whose upstream changed, for the readiness pass (plan order first)."""
    assumed: set[str] = field(default_factory=set)
    """Tasks whose ``assumes`` were confirmed in this session."""
    asked: dict[int, int] = field(default_factory=dict)
    """Model calls counted with each call in flight whose callable asks a model itself (an
    argument fill), by call id: what the call did not make is given back at its result."""
    llm_calls: int = field(init=False)
    """Model calls the run's tool calls made (their tools' ``llm_calls``), from the journal."""
    waited_in_sessions: float = field(init=False)
    """Seconds sessions of the run spent waiting for people (``--wait``), this one included."""

    def __post_init__(self) -> None:
        self.llm_calls = sum(
            self.problem.tools[c.tool].llm_calls for c in self.journal.calls() if c.tool in self.problem.tools
        )
        self.waited_in_sessions = float(self.journal.meta().get("waited_in_sessions") or 0.0)
        self.capacity = Capacity.of(self.problem)
        self.queue = ReadyQueue(self.capacity.limits)
        self.ev = Events(self.dispatcher.clock, self.problem)
        self.reindex()

    @property
    def clock(self) -> Clock:
        return self.dispatcher.clock

    def reindex(self) -> None:
        """Index the live plan again (after a revision)."""
        self.index = PlanIndex.of(self.problem, self.state)

    def retry_policy(self, task: Task) -> RetryPolicy:
        return RetryPolicy.of(task, self.options)

    def commit(self, change: Change, meta: Mapping[str, Any] | None = None) -> None:
        """The one way the run changes: the journal first (one transaction), then the state,
        then ``events.jsonl``; a task left waiting for a retry gets its timer, one that reached
        a final status wakes its dependents."""
        written, events = self.journal.append(change.records, change.events, meta)
        for record in written:
            self.state.apply(record)
        self.log.emit(events)
        self.halt(change.stop)
        for record in change.records:
            if isinstance(record, Settled) and record.retry_at is not None:
                self.queue.delay(record.task_id, record.retry_at)
            elif isinstance(record, Settled) and record.status != TaskStatus.PENDING:
                self.mark_successors(record.task_id)

    def halt(self, stop: Stop | None) -> None:
        """Stop the run (the first reason given stays)."""
        self.stop = self.stop or stop

    def mark(self, tid: str) -> None:
        heapq.heappush(self.agenda, (self.index.topo.get(tid, 0), tid))

    def mark_successors(self, tid: str) -> None:
        for nxt in self.index.succ.get(tid, ()):
            self.mark(nxt)

    def mark_pending(self) -> None:
        """Put every pending task of the live plan on the agenda."""
        for tid, status in self.state.status.items():
            if status == TaskStatus.PENDING and tid in self.index.tasks:
                self.mark(tid)


def bind(ctx: RunContext, task: Task) -> dict[str, Any]:
    """The task's inputs with every reference replaced by its value (``None``: an output a
    skipped task never made, or an initial fact given no value)."""
    bound: dict[str, Any] = {}
    for key, value in task.inputs.items():
        ref = parse_ref(value)
        if ref is None:
            bound[key] = value
        elif ref.task is None:
            bound[key] = ctx.facts.get(ref.fact)
        else:
            bound[key] = ctx.state.outputs.get(ref.task, {}).get(ref.fact)
    return bound
