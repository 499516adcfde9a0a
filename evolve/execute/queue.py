"""What may start and when: the :class:`ReadyQueue` (ready tasks, retry timers, held resources).

Pure bookkeeping, with no journal, clock or dispatcher: the loop tells it the time and asks it
what to start and when to wake. Nothing here is durable; a resumed run rebuilds it from
:class:`evolve.execute.state.RunState` (its pending tasks and their retry wake times).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

from evolve.scheduling.base import EPS

Demand = tuple[float, ...]
"""A tool's use of each capacity: the run's slots (``max_parallel``) first, then each resource."""


class ReadyQueue:
    """Ready tasks, longest remaining path first; retry timers; the capacity running calls hold.

    ``limits`` are the capacities, slots first (:class:`evolve.scheduling.base.Capacity`)."""

    def __init__(self, limits: Sequence[float]) -> None:
        self.limits = tuple(limits)
        self.ready: list[tuple[float, int, str]] = []
        self.queued: set[str] = set()
        self.delayed: list[tuple[float, str]] = []
        self.timers: dict[str, float] = {}
        self.held = [0.0] * len(self.limits)
        self.demands: dict[str, Demand] = {}

    # -- ready tasks ---------------------------------------------------------------------

    def push(self, tid: str, tail: float, topo: int) -> None:
        """``tid`` may start; the longest remaining path (``tail``) first, then plan order."""
        self.queued.add(tid)
        heapq.heappush(self.ready, (-tail, topo, tid))

    def is_queued(self, tid: str) -> bool:
        return tid in self.queued

    def clear_ready(self) -> None:
        """Forget the ready tasks (a new revision decides them again); timers stay."""
        self.ready.clear()
        self.queued.clear()

    def take(
        self,
        running: int,
        steps_left: int,
        pending: Callable[[str], bool],
        demand: Callable[[str], Demand],
    ) -> tuple[list[str], str | None]:
        """The tasks to start now, in order, and the first one the step budget stopped (or
        ``None``). A task no longer ``pending`` is dropped; one whose resources are held by
        running calls stays queued for later; the taken ones hold their demand until
        :meth:`release`."""
        aside = []
        batch: list[str] = []
        over: str | None = None
        while self.ready and running + len(batch) < self.limits[0]:
            item = heapq.heappop(self.ready)
            tid = item[2]
            if not pending(tid):
                self.queued.discard(tid)
                continue
            need = demand(tid)
            if any(h + d > cap + EPS for h, d, cap in zip(self.held[1:], need[1:], self.limits[1:])):
                aside.append(item)
                continue
            if len(batch) >= steps_left:
                heapq.heappush(self.ready, item)
                over = tid
                break
            self.queued.discard(tid)
            self.demands[tid] = need
            self.held = [h + d for h, d in zip(self.held, need)]
            batch.append(tid)
        for item in aside:
            heapq.heappush(self.ready, item)
        return batch, over

    def release(self, tid: str) -> None:
        """A call of ``tid`` came back: its resources are free again."""
        need = self.demands.pop(tid, None)
        if need is not None:
            self.held = [h - d for h, d in zip(self.held, need)]

    # -- retry timers --------------------------------------------------------------------

    def delay(self, tid: str, at: float) -> None:
        """``tid`` waits for its retry until ``at``."""
        heapq.heappush(self.delayed, (at, tid))
        self.timers[tid] = at

    def is_waiting(self, tid: str) -> bool:
        """Whether ``tid`` waits for a retry timer (the readiness pass leaves it alone)."""
        return tid in self.timers

    def due(self, now: float) -> list[str]:
        """The tasks whose timers ran out at ``now``, taken off the timers, earliest first."""
        out = []
        while self.delayed and self.delayed[0][0] <= now + EPS:
            _, tid = heapq.heappop(self.delayed)
            self.timers.pop(tid, None)
            out.append(tid)
        return out

    def next_timer(self) -> float | None:
        """The earliest retry timer, due or not."""
        return self.delayed[0][0] if self.delayed else None

    def next_wake(self, now: float, *, stopping: bool) -> float | None:
        """When to stop waiting for running calls: at the next retry timer, if one is still ahead
        and can start. A stopping run dispatches nothing, and a due timer whose task could not
        start waits for a running call to free its way: waking for either would not advance the
        clock and would wait again at once, forever."""
        at = self.next_timer()
        if stopping or at is None:
            return None
        return at if at > now + EPS else None
