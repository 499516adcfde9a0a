"""Which thread a child develops in: a lane of its own, or after another child in its lane.

The children of a generation develop side by side in threads of the search's process (see
:meth:`evolve.run.evaluator.Evaluator.develop`). Threads that outnumber the cores share them:
three children on two cores run at two thirds of a core each until the shortest is done, so
they finish in the longest child's time plus half the shortest's. That is the best one can do
without knowing their lengths, but when one child is long and two are short, two lanes do
better: the long child alone, the short ones one after the other (max(long, short + short)).

A child's length is known before it starts from its *kind* (see
:attr:`evolve.search.develop.Development.kind`: a tool-choice child that is annealed is short,
one that is climbed long) and the CPU seconds the children of that kind took so far. Placing a
child only decides when it runs, never what it makes, so results stay the same for any
``--jobs``; a wrong estimate costs time only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, Future, wait
from dataclasses import dataclass
from typing import Any, TypeVar

from evolve import defaults

Made = TypeVar("Made")


def average(previous: float | None, value: float, weight: float = defaults.EVAL_AVERAGE_WEIGHT) -> float:
    """An exponential moving average, so one noisy measurement does not flip the choice."""
    return value if previous is None else (1 - weight) * previous + weight * value


def shared_finish(remaining: Sequence[float], cores: int) -> float:
    """When jobs with these seconds of work left all finish, sharing ``cores`` equally (the
    processor sharing of the operating system's scheduler: k jobs on fewer cores each run at
    cores / k of one)."""
    clock = done = 0.0
    left = len(remaining)
    for work in sorted(remaining):
        clock += (work - done) / min(1.0, cores / left)
        done, left = work, left - 1
    return clock


@dataclass
class Track:
    """One child's place in a lane: its estimated seconds (``None``: not known yet), and when
    it started and whether it is done (set by the thread that runs it)."""

    estimate: float | None
    started: float | None = None
    done: bool = False

    def remaining(self, now: float) -> float | None:
        """The seconds of work it has left by its estimate (0 once over it: it ends soon)."""
        if self.done:
            return 0.0
        if self.estimate is None or self.started is None:
            return self.estimate
        return max(0.0, self.estimate - (now - self.started))


class Lanes:
    """The lanes of one batch of children on ``pool``: each child goes to a lane of its own
    unless appending it to the lane that ends first is predicted to finish the batch sooner,
    by more than ``margin`` of its own length. ``seconds`` (the CPU seconds per kind so far)
    is shared across batches and updated as children end."""

    def __init__(self, pool: Executor, cores: int, seconds: dict[str, float],
                 margin: float = defaults.LANE_MARGIN) -> None:
        self.pool = pool
        self.cores = cores
        self.seconds = seconds
        self.margin = margin
        self.lanes: list[list[Track]] = []
        self.last: list[Future[Any]] = []

    def run(self, children: Iterable[tuple[Callable[[], Made], str | None]]) -> list[Future[Made]]:
        """Start each ``(task, kind)`` of ``children`` in a lane; the futures, in order.

        The first ``cores - 1`` start as they come, and so does any child of a kind whose
        length is not known yet; the rest are placed once ``children`` is exhausted, longest
        first: ``children`` may draft each child as it is taken (see
        :class:`~evolve.search.develop.Developer`), and that drafting keeps a core busy, so
        a child held back meanwhile loses little, and placing with every length known puts
        the long child on a core of its own whichever place it was drafted in."""
        futures: list[Future[Made] | None] = []
        held: list[tuple[int, Callable[[], Made], str]] = []
        for task, kind in children:
            if len(futures) < self.cores - 1 or kind is None or kind not in self.seconds:
                futures.append(self.submit(task, kind))
            else:
                held.append((len(futures), task, kind))
                futures.append(None)
        for index, task, kind in sorted(held, key=lambda child: -self.seconds[child[2]]):
            futures[index] = self.submit(task, kind)
        return [future for future in futures if future is not None]

    def submit(self, task: Callable[[], Made], kind: str | None) -> Future[Made]:
        """Start ``task`` (a child of ``kind``) in the lane :meth:`lane_for` picks."""
        estimate = self.seconds.get(kind) if kind is not None else None
        lane = self.lane_for(estimate, time.perf_counter())
        track = Track(estimate)
        previous = None if lane is None else self.last[lane]

        def run() -> Made:
            if previous is not None:
                wait([previous])
            track.started = time.perf_counter()
            cpu = time.thread_time()
            try:
                return task()
            finally:
                track.done = True
                if kind is not None:
                    self.seconds[kind] = average(self.seconds.get(kind), time.thread_time() - cpu)

        future = self.pool.submit(run)
        if lane is None:
            self.lanes.append([track])
            self.last.append(future)
        else:
            self.lanes[lane].append(track)
            self.last[lane] = future
        return future

    def lane_for(self, estimate: float | None, now: float) -> int | None:
        """The lane to append a child of ``estimate`` seconds to, or ``None`` for a lane of its
        own: its own whenever a core is free or any length is unknown."""
        if estimate is None:
            return None
        left: list[float] = []
        for lane in self.lanes:
            parts = [track.remaining(now) for track in lane]
            if any(part is None for part in parts):
                return None
            left.append(sum(part for part in parts if part is not None))
        busy = [i for i, work in enumerate(left) if work > 0]
        if len(busy) < self.cores:
            return None
        alone = shared_finish([left[i] for i in busy] + [estimate], self.cores)
        first = min(busy, key=lambda i: left[i])
        after = shared_finish([left[i] + (estimate if i == first else 0.0) for i in busy], self.cores)
        return first if after + self.margin * estimate < alone else None
