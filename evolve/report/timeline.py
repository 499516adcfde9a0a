"""One plan's schedule as the pictures need it: bars, the critical path and resource usage.

The HTML report, the matplotlib plots and the terminal view all draw the same
thing, so they read it from one :class:`Timeline` instead of each recomputing
start times, critical flags and usage steps (and disagreeing about edge cases
such as zero-length tasks, which hold no resource, exactly as the scheduler has it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from evolve.model.graph import levels, topological_order
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.scheduling import Capacity, demand_vector, schedule


@dataclass(frozen=True)
class Bar:
    """One task on the time axis. ``slack`` is ``None`` when it cannot be known (no problem)."""

    id: str
    tool: str
    start: float
    finish: float
    critical: bool
    deps: tuple[str, ...]
    slack: float | None = None
    name: str | None = None

    @property
    def duration(self) -> float:
        return self.finish - self.start


@dataclass(frozen=True)
class Usage:
    """How much of one capacity is in use over time.

    ``steps`` are ``(time, level)`` pairs: ``level`` holds from ``time`` until the
    next step. ``limit`` is ``None`` for an unlimited capacity.
    """

    name: str
    limit: float | None
    steps: tuple[tuple[float, float], ...]

    @property
    def peak(self) -> float:
        return max((level for _, level in self.steps), default=0.0)


@dataclass(frozen=True)
class Timeline:
    """A scheduled plan: bars in start order, the critical path, usage and dependency levels."""

    bars: tuple[Bar, ...]
    makespan: float
    critical_path: tuple[str, ...]
    usage: tuple[Usage, ...]
    level: Mapping[str, int]
    unscheduled: tuple[str, ...] = ()

    def bar(self, task_id: str) -> Bar:
        for bar in self.bars:
            if bar.id == task_id:
                return bar
        raise KeyError(task_id)


def timeline_of(problem: Problem, plan: Plan) -> Timeline:
    """The timeline of ``plan`` scheduled under ``problem`` (the scheduler is the one truth)."""
    sched = schedule(problem, plan)
    capacity = Capacity.of(problem)
    tasks = plan.by_id()
    critical = set(sched.critical_path)
    demands = {tid: demand_vector(problem, tasks[tid].tool, capacity) for tid in sched.start}
    spans = {tid: (sched.start[tid], sched.finish[tid]) for tid in sched.start}
    usage = tuple(
        Usage(name=name, limit=None if math.isinf(limit) else limit,
              steps=usage_steps(spans, {tid: d[i] for tid, d in demands.items()}))
        for i, (name, limit) in enumerate(zip(capacity.names, capacity.limits))
    )
    bars = tuple(
        Bar(id=tid, tool=tasks[tid].tool, start=sched.start[tid], finish=sched.finish[tid],
            critical=tid in critical, deps=known_deps(tasks[tid].deps, sched.start),
            slack=sched.slack[tid], name=tasks[tid].name)
        for tid in start_order(spans)
    )
    level = {tid: i for i, wave in enumerate(sched.waves) for tid in wave}
    return Timeline(bars=bars, makespan=sched.makespan, critical_path=sched.critical_path,
                    usage=usage, level=level, unscheduled=sched.unscheduled)


def timeline_from_times(plan: Plan, times: Mapping[str, tuple[float, float]],
                        critical_path: Sequence[str]) -> Timeline:
    """A timeline from stored start and finish times, when the problem is not at hand.

    Without the problem the tools' resource demands are unknown, so the only
    usage shown is the number of tasks running at once; slack stays unknown.
    """
    tasks = plan.by_id()
    spans = {tid: times[tid] for tid in tasks if tid in times}
    critical = set(critical_path)
    bars = tuple(
        Bar(id=tid, tool=tasks[tid].tool, start=spans[tid][0], finish=spans[tid][1],
            critical=tid in critical, deps=known_deps(tasks[tid].deps, spans), name=tasks[tid].name)
        for tid in start_order(spans)
    )
    deps = {tid: list(known_deps(tasks[tid].deps, spans)) for tid in spans}
    running = usage_steps(spans, {tid: 1.0 for tid in spans})
    return Timeline(
        bars=bars, makespan=max((f for _, f in spans.values()), default=0.0),
        critical_path=tuple(critical_path), usage=(Usage("slots", None, running),),
        level=levels(topological_order(deps), deps),
        unscheduled=tuple(tid for tid in tasks if tid not in spans),
    )


def known_deps(deps: Sequence[str], placed: Mapping[str, object]) -> tuple[str, ...]:
    return tuple(d for d in deps if d in placed)


def start_order(spans: Mapping[str, tuple[float, float]]) -> list[str]:
    """Tasks by start time, then finish, then the plan's order: the order a Gantt chart reads in."""
    index = {tid: i for i, tid in enumerate(spans)}
    return sorted(spans, key=lambda t: (spans[t][0], spans[t][1], index[t]))


def usage_steps(spans: Mapping[str, tuple[float, float]],
                amount: Mapping[str, float]) -> tuple[tuple[float, float], ...]:
    """The step function of total ``amount`` held by tasks over their spans.

    A zero-length task holds nothing, as in the scheduler. The first step is at
    time 0 and the last returns to 0 at the end, so a chart can draw it as is.
    """
    delta: dict[float, float] = {0.0: 0.0}
    for tid, (start, finish) in spans.items():
        need = amount.get(tid, 0.0)
        if finish <= start or need == 0.0:
            continue
        delta[start] = delta.get(start, 0.0) + need
        delta[finish] = delta.get(finish, 0.0) - need
    steps: list[tuple[float, float]] = []
    level = 0.0
    for t in sorted(delta):
        level += delta[t]
        level = 0.0 if abs(level) < 1e-9 else level
        if steps and steps[-1][1] == level:
            continue
        steps.append((t, level))
    return tuple(steps)
