"""The plain-Python serial schedule generation scheme: the oracle the kernel is tested against.

:func:`reference_schedule` is what :func:`evolve.scheduling.schedule` computes,
written the readable way: ready tasks in a heap ordered by the tuple
:func:`selection_rank` (priority position, longest remaining path, topological
index), the resource profile a sorted list of event times. It is quadratic in
the worst case and used only by tests and benchmarks; the preparation and the
figures read off the starts are shared (:mod:`evolve.scheduling.base`), so the
two can differ only in where they place tasks.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping

from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.scheduling.base import (
    EPS,
    IMPOSSIBLE,
    Capacity,
    PlanGraph,
    Schedule,
    backward_tails,
    demand_vector,
    priority_positions,
    summarise,
)


def reference_schedule(problem: Problem, plan: Plan) -> Schedule:
    """The schedule of ``plan`` by the Python SGS; equal to :func:`evolve.scheduling.schedule`."""
    graph = PlanGraph.of(problem, plan)
    capacity = Capacity.of(problem)
    demand = {tid: demand_vector(problem, graph.tasks[tid].tool, capacity) for tid in graph.order}
    rank = selection_rank(graph, backward_tails(graph))
    return summarise(graph, serial_sgs(graph, demand, capacity, rank))


def selection_rank(graph: PlanGraph, tail: Mapping[str, float]) -> dict[str, tuple[int, float, int]]:
    """Sort keys for ready tasks: the plan's priority first, then longest remaining path."""
    position = priority_positions(graph.plan)
    missing = len(position)
    return {tid: (position.get(tid, missing), -tail[tid], i) for i, tid in enumerate(graph.order)}


def serial_sgs(graph: PlanGraph, demand: Mapping[str, tuple[float, ...]], capacity: Capacity,
               rank: Mapping[str, tuple[int, float, int]]) -> dict[str, float]:
    """Place tasks one at a time, each at its earliest precedence- and resource-feasible start;
    the result lists them in the order they were placed."""
    order, deps, duration, succ = graph.order, graph.deps, graph.duration, graph.succ
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
                raise ValueError(IMPOSSIBLE)

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
