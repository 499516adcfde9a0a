"""Simulated execution of a plan: serial schedule generation under the run's limits.

The schedule is what makes ``makespan`` a machine-checkable fitness: each task
starts at the earliest time its dependencies have finished and a parallel slot
and its tool's resources are free, with ready tasks taken in the plan's
``priority`` order (longest remaining path first when it has none).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evolve.model.graph import levels, successors, topological_order
from evolve.model.plan import Plan
from evolve.model.problem import Problem

EPS = 1e-9


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


def schedule(problem: Problem, plan: Plan) -> Schedule:
    """Serial schedule generation for ``plan`` under ``problem``'s limits and resources.

    Tasks on or behind a dependency cycle cannot be placed; they are listed in
    ``unscheduled`` so the caller can still score the rest.
    """
    tasks = plan.by_id()
    deps = plan.dependency_map()
    order = topological_order(deps)
    placeable = set(order)
    deps = {tid: [d for d in deps[tid] if d in placeable] for tid in order}
    duration = task_durations(problem, plan)
    capacity = Capacity.of(problem)
    demand = {tid: demand_vector(problem, tasks[tid].tool, capacity) for tid in order}

    est, tail = forward_pass(order, deps, duration), backward_tails(order, deps, duration)
    rank = selection_rank(plan, order, tail)
    start = serial_sgs(order, deps, duration, demand, capacity, rank)
    finish = {tid: start[tid] + duration[tid] for tid in order}
    makespan = max(finish.values(), default=0.0)

    cp_length = max((est[t] + duration[t] for t in order), default=0.0)
    succ = successors(deps)
    latest_finish: dict[str, float] = {}
    for tid in reversed(order):
        latest_finish[tid] = min((latest_finish[s] - duration[s] for s in succ[tid]), default=makespan)
    slack = {tid: max(0.0, latest_finish[tid] - duration[tid] - start[tid]) for tid in order}

    level = levels(order, deps)
    waves: dict[int, list[str]] = {}
    for tid in order:
        waves.setdefault(level[tid], []).append(tid)
    return Schedule(
        start=start,
        finish=finish,
        makespan=makespan,
        critical_path=critical_chain(order, deps, duration, est, cp_length),
        critical_path_length=cp_length,
        slack=slack,
        waves=tuple(tuple(waves[k]) for k in sorted(waves)),
        unscheduled=tuple(tid for tid in tasks if tid not in placeable),
    )


def demand_vector(problem: Problem, tool_name: str, capacity: Capacity) -> tuple[float, ...]:
    tool = problem.tools.get(tool_name)
    uses = tool.uses if tool is not None else {}
    return (1.0, *(float(uses.get(name, 0.0)) for name in capacity.names[1:]))


def forward_pass(order: Sequence[str], deps: Mapping[str, Sequence[str]],
                 duration: Mapping[str, float]) -> dict[str, float]:
    """Earliest start of each task with unlimited resources."""
    est: dict[str, float] = {}
    for tid in order:
        est[tid] = max((est[d] + duration[d] for d in deps[tid]), default=0.0)
    return est


def backward_tails(order: Sequence[str], deps: Mapping[str, Sequence[str]],
                   duration: Mapping[str, float]) -> dict[str, float]:
    """Longest path from each task's start to the end of the plan (its own duration included)."""
    succ = successors(deps)
    tail: dict[str, float] = {}
    for tid in reversed(order):
        tail[tid] = duration[tid] + max((tail[s] for s in succ[tid]), default=0.0)
    return tail


def selection_rank(plan: Plan, order: Sequence[str],
                   tail: Mapping[str, float]) -> dict[str, tuple[int, float, int]]:
    """Sort keys for ready tasks: the plan's priority first, then longest remaining path."""
    position = {tid: i for i, tid in enumerate(plan.priority or ())}
    index = {tid: i for i, tid in enumerate(order)}
    missing = len(position)
    return {tid: (position.get(tid, missing), -tail[tid], index[tid]) for tid in order}


def serial_sgs(order: Sequence[str], deps: Mapping[str, Sequence[str]],
               duration: Mapping[str, float], demand: Mapping[str, tuple[float, ...]],
               capacity: Capacity, rank: Mapping[str, tuple[int, float, int]]) -> dict[str, float]:
    """Place tasks one at a time, each at its earliest precedence- and resource-feasible start."""
    succ = successors(deps)
    waiting = {tid: len(deps[tid]) for tid in order}
    ready = [(rank[tid], tid) for tid in order if waiting[tid] == 0]
    heapq.heapify(ready)
    profile = Profile(len(capacity.limits))
    start: dict[str, float] = {}
    while ready:
        _, tid = heapq.heappop(ready)
        earliest = max((start[d] + duration[d] for d in deps[tid]), default=0.0)
        start[tid] = profile.place(earliest, duration[tid], demand[tid], capacity.limits)
        for nxt in succ[tid]:
            waiting[nxt] -= 1
            if waiting[nxt] == 0:
                heapq.heappush(ready, (rank[nxt], nxt))
    return start


class Profile:
    """Resource usage over time as a step function: ``usage[i]`` holds on ``[times[i], times[i+1])``."""

    def __init__(self, width: int) -> None:
        self.times: list[float] = [0.0]
        self.usage: list[list[float]] = [[0.0] * width]

    def place(self, earliest: float, length: float, need: tuple[float, ...],
              limits: tuple[float, ...]) -> float:
        """Book ``need`` for ``length`` at the first feasible time >= ``earliest``; return it."""
        if length <= 0:
            return earliest
        t = earliest
        while True:
            i = bisect.bisect_right(self.times, t) - 1
            end = t + length
            clash = None
            while i < len(self.times) and self.times[i] < end - EPS:
                used = self.usage[i]
                if any(u + n > cap + EPS for u, n, cap in zip(used, need, limits)):
                    clash = i
                    break
                i += 1
            if clash is None:
                self.book(t, end, need)
                return t
            t = self.times[clash + 1] if clash + 1 < len(self.times) else math.inf
            if math.isinf(t):
                raise ValueError("a task needs more than the full capacity of a resource")

    def split(self, t: float) -> int:
        i = bisect.bisect_right(self.times, t) - 1
        if abs(self.times[i] - t) <= EPS:
            return i
        self.times.insert(i + 1, t)
        self.usage.insert(i + 1, list(self.usage[i]))
        return i + 1

    def book(self, begin: float, end: float, need: tuple[float, ...]) -> None:
        first, last = self.split(begin), self.split(end)
        for i in range(first, last):
            self.usage[i] = [u + n for u, n in zip(self.usage[i], need)]


def critical_chain(order: Sequence[str], deps: Mapping[str, Sequence[str]],
                   duration: Mapping[str, float], est: Mapping[str, float],
                   length: float) -> tuple[str, ...]:
    """The longest dependency chain, walked back from a task that ends at ``length``."""
    ends = [t for t in order if abs(est[t] + duration[t] - length) <= EPS]
    if not ends:
        return ()
    chain = [max(ends, key=lambda t: (duration[t], -order.index(t)))]
    while True:
        cur = chain[-1]
        preds = [d for d in deps[cur] if abs(est[d] + duration[d] - est[cur]) <= EPS]
        if not preds:
            break
        chain.append(preds[0])
    return tuple(reversed(chain))
