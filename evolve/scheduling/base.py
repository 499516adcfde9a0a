"""What every scheduler in evolve shares: the schedule a plan gets and the figures read off it.

There are two serial schedule generators, the numba kernel behind
:func:`evolve.scheduling.schedule` and the plain-Python oracle behind
:func:`evolve.scheduling.reference_schedule`. They differ only in how they
place tasks; what comes before (which tasks can be placed, their durations and
demands) and after (finish times, makespan, critical path, slack, waves) is
this module, so a disagreement between the two can only be a placement bug.
Everything here is linear in the size of the plan.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evolve.model.graph import levels, longest_tails, successors, topological_order
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem

EPS = 1e-9
"""Tolerance of every time and capacity comparison, in both schedulers."""

IMPOSSIBLE = "a task needs more than the full capacity of a resource"
"""The ``ValueError`` message of every scheduler when a task can never fit."""


@dataclass(frozen=True)
class Schedule:
    """Start and finish of every schedulable task, and the figures people read off it.

    ``critical_path`` is the longest dependency chain by duration (resources
    ignored), so ``critical_path_length`` is a lower bound on ``makespan``.
    ``slack`` is how long a task could start later, dependencies only, without
    moving the makespan. ``waves`` groups tasks by dependency level.
    """

    start: Mapping[str, float]
    finish: Mapping[str, float]
    makespan: float
    critical_path: tuple[str, ...]
    critical_path_length: float
    slack: Mapping[str, float]
    waves: tuple[tuple[str, ...], ...]
    unscheduled: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {tid: {"start": self.start[tid], "finish": self.finish[tid]} for tid in self.start}


@dataclass(frozen=True)
class Capacity:
    """The renewable capacities a schedule respects: parallel slots first, then named resources."""

    names: tuple[str, ...]
    limits: tuple[float, ...]

    @classmethod
    def of(cls, problem: Problem) -> Capacity:
        slots = problem.limits.max_parallel
        names = ("slots", *problem.resources)
        limits = (math.inf if slots is None else float(slots), *problem.resources.values())
        return cls(names=names, limits=tuple(float(x) for x in limits))


def task_durations(problem: Problem, plan: Plan) -> dict[str, float]:
    """Durations by task id; a task whose tool is unknown takes no time (the validator flags it)."""
    tools = problem.tools
    return {t.id: (tools[t.tool].duration if t.tool in tools else 0.0) for t in plan.tasks}


def demand_vector(problem: Problem, tool_name: str, capacity: Capacity) -> tuple[float, ...]:
    """What a task of ``tool_name`` holds while it runs, in ``capacity`` order: one slot, then its
    ``uses`` (an unknown tool holds only its slot, like a tool that uses nothing)."""
    tool = problem.tools.get(tool_name)
    uses = tool.uses if tool is not None else {}
    return (1.0, *(float(uses.get(name, 0.0)) for name in capacity.names[1:]))


@dataclass(frozen=True)
class PlanGraph:
    """The part of a plan a schedule can place: tasks not on or behind a dependency cycle.

    ``order`` is a topological order (Kahn's, stable in the plan's order);
    ``deps`` and ``succ`` hold only edges between placeable tasks, so both
    schedulers and the post-processing walk the same graph.
    """

    plan: Plan
    tasks: dict[str, Task]
    order: list[str]
    deps: dict[str, list[str]]
    succ: dict[str, list[str]]
    duration: dict[str, float]

    @classmethod
    def of(cls, problem: Problem, plan: Plan) -> PlanGraph:
        full = plan.dependency_map()
        order = topological_order(full)
        placeable = set(order)
        deps = {tid: [d for d in full[tid] if d in placeable] for tid in order}
        return cls(plan=plan, tasks=plan.by_id(), order=order, deps=deps, succ=successors(deps),
                   duration=task_durations(problem, plan))


def forward_pass(graph: PlanGraph) -> dict[str, float]:
    """Earliest start of each task with unlimited resources."""
    est: dict[str, float] = {}
    duration, deps = graph.duration, graph.deps
    for tid in graph.order:
        est[tid] = max((est[d] + duration[d] for d in deps[tid]), default=0.0)
    return est


def backward_tails(graph: PlanGraph) -> dict[str, float]:
    """Longest path from each task's start to the end of the plan (its own duration included):
    the "longest remaining path" that orders ready tasks the priority leaves unordered."""
    return longest_tails(graph.order, graph.succ, graph.duration)


def priority_positions(plan: Plan) -> dict[str, int]:
    """Each task's place in the plan's ``priority`` (the last one counts if an id repeats)."""
    return {tid: i for i, tid in enumerate(plan.priority or ())}


def summarise(graph: PlanGraph, start: Mapping[str, float]) -> Schedule:
    """The :class:`Schedule` of the placed tasks ``start`` (one entry per task of ``graph.order``,
    in the order the scheduler placed them, which is the order a schedule lists them in)."""
    order, deps, duration = graph.order, graph.deps, graph.duration
    finish = {tid: start[tid] + duration[tid] for tid in order}
    makespan = max(finish.values(), default=0.0)

    est = forward_pass(graph)
    cp_length = max((est[t] + duration[t] for t in order), default=0.0)
    latest_finish: dict[str, float] = {}
    for tid in reversed(order):
        latest_finish[tid] = min((latest_finish[s] - duration[s] for s in graph.succ[tid]),
                                 default=makespan)
    slack = {tid: max(0.0, latest_finish[tid] - duration[tid] - start[tid]) for tid in order}

    level = levels(order, deps)
    waves: dict[int, list[str]] = {}
    for tid in order:
        waves.setdefault(level[tid], []).append(tid)
    return Schedule(
        start=dict(start),
        finish=finish,
        makespan=makespan,
        critical_path=critical_chain(graph, est, cp_length),
        critical_path_length=cp_length,
        slack=slack,
        waves=tuple(tuple(waves[k]) for k in sorted(waves)),
        unscheduled=tuple(tid for tid in graph.tasks if tid not in finish),
    )


def critical_chain(graph: PlanGraph, est: Mapping[str, float], length: float) -> tuple[str, ...]:
    """The longest dependency chain, walked back from a task that ends at ``length``.

    Of the tasks ending there it starts from the longest, the earliest in
    ``order`` on ties, and then follows the first dependency that ends exactly
    when the current task can start.
    """
    deps, duration = graph.deps, graph.duration
    ends = [(i, t) for i, t in enumerate(graph.order) if abs(est[t] + duration[t] - length) <= EPS]
    if not ends:
        return ()
    chain = [max(ends, key=lambda it: (duration[it[1]], -it[0]))[1]]
    while True:
        cur = chain[-1]
        preds = [d for d in deps[cur] if abs(est[d] + duration[d] - est[cur]) <= EPS]
        if not preds:
            break
        chain.append(preds[0])
    return tuple(reversed(chain))
