"""Where tool calls run: the executor's seam to threads, a virtual clock or a Dask cluster.

The executor hands a :class:`Job` to a dispatcher and later collects :class:`Result` values;
it never waits on a call itself. Each job has a deadline on the run's clock: a call still
running past it comes back as a ``timeout`` result, and the run goes on (the stuck thread or
remote task is abandoned, never joined). The journal stays with the coordinator: a dispatcher
runs calls and reports, nothing else.
"""

from __future__ import annotations

import heapq
import itertools
import queue
import threading
import time
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from evolve.execute.tools import Call, ToolFailure, ToolFn

Kind = Literal["ok", "failure", "timeout", "exception", "lost"]
"""How a call ended; ``lost``: cut off by its server's death, it may have taken effect."""


class Clock(Protocol):
    """The run's time, in seconds from the start of the run (across resumed sessions)."""

    virtual: bool

    def now(self) -> float: ...
    def wall_deadline(self, at: float) -> float:
        """What a tool is told its deadline is (``Call.deadline``) for run time ``at``."""


class WallClock:
    """Real time; ``offset`` is where an earlier session of the run stopped."""

    virtual = False

    def __init__(self, offset: float = 0.0) -> None:
        self.offset = offset
        self.began = time.monotonic()

    def now(self) -> float:
        return self.offset + time.monotonic() - self.began

    def wall_deadline(self, at: float) -> float:
        return time.time() + (at - self.now())


class VirtualClock:
    """Simulated time: it moves only when the dispatcher says a call has finished."""

    virtual = True

    def __init__(self, start: float = 0.0) -> None:
        self.time = start

    def now(self) -> float:
        return self.time

    def advance(self, to: float) -> None:
        self.time = max(self.time, to)

    def wall_deadline(self, at: float) -> float:
        return at


@dataclass(frozen=True)
class Job:
    """One tool call to make. ``started`` and ``deadline`` are run times; ``duration`` is the
    catalog's (what a simulated call takes)."""

    call_id: int
    task_id: str
    tool: str
    fn: ToolFn
    inputs: Mapping[str, Any]
    call: Call
    started: float
    deadline: float
    duration: float


@dataclass(frozen=True)
class Result:
    job: Job
    kind: Kind
    outputs: Mapping[str, Any] | None
    error: str | None
    retryable: bool
    finished: float


Outcome = tuple[Kind, "Mapping[str, Any] | None", "str | None", bool]


def run_tool(fn: ToolFn, inputs: Mapping[str, Any], call: Call) -> Outcome:
    """Call one tool and say how it went, never raising: ``(kind, outputs, error, retryable)``.

    Module-level so that it ships to any worker (Dask pickles it by reference).
    """
    try:
        outputs = fn(inputs, call)
    except ToolFailure as exc:
        return ("lost" if exc.uncertain else "failure"), None, exc.message, exc.retryable
    except Exception as exc:  # the tool's own bug: a failure that is not retried
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return "exception", None, f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})", False
    if not isinstance(outputs, Mapping):
        return "exception", None, f"returned {type(outputs).__name__}, not a mapping of outputs", False
    return "ok", dict(outputs), None, False


def timed_out(job: Job, finished: float) -> Result:
    return Result(job, "timeout", None, f"no answer within {job.deadline - job.started:g} s", True, finished)


def next_wake(deadlines: Iterable[float], until: float | None, now: float) -> float | None:
    """When a polling dispatcher wakes next: the nearest deadline or ``until``; ``None`` when
    there is nothing to wait for or ``until`` has already come."""
    wakes = list(deadlines)
    if until is not None:
        if until <= now:
            return None
        wakes.append(until)
    return min(wakes) if wakes else None


class Dispatcher(Protocol):
    @property
    def clock(self) -> Clock: ...

    def submit(self, job: Job) -> None: ...
    def collect(self, until: float | None) -> list[Result]:
        """At least one result, or none once the clock reaches ``until`` (``None``: wait for a
        result; an empty list at once when nothing is running)."""

    def running(self) -> int: ...
    def close(self) -> None: ...


class LocalDispatcher:
    """Each call in a daemon thread of this process, answers through a queue.

    A thread per call rather than a fixed pool: a stuck call then holds only its own thread,
    never a slot the next call needs.
    """

    def __init__(self, clock: WallClock | None = None) -> None:
        self.clock = clock or WallClock()
        self.answers: queue.Queue[tuple[int, Outcome, float]] = queue.Queue()
        self.jobs: dict[int, Job] = {}

    def submit(self, job: Job) -> None:
        self.jobs[job.call_id] = job
        threading.Thread(target=self.work, args=(job,), daemon=True, name=f"evolve-{job.task_id}").start()

    def work(self, job: Job) -> None:
        outcome = run_tool(job.fn, job.inputs, job.call)
        self.answers.put((job.call_id, outcome, self.clock.now()))

    def running(self) -> int:
        return len(self.jobs)

    def collect(self, until: float | None) -> list[Result]:
        results: list[Result] = []
        while not results:
            now = self.clock.now()
            for call_id, job in list(self.jobs.items()):
                if job.deadline <= now:
                    del self.jobs[call_id]
                    results.append(timed_out(job, now))
            if results:
                break
            wake = next_wake((job.deadline for job in self.jobs.values()), until, now)
            if wake is None:
                return []
            try:
                answer = self.answers.get(timeout=max(0.0, wake - now))
            except queue.Empty:
                continue
            results.extend(self.accept(answer))
        while True:
            try:
                results.extend(self.accept(self.answers.get_nowait()))
            except queue.Empty:
                return results

    def accept(self, answer: tuple[int, Outcome, float]) -> list[Result]:
        call_id, (kind, outputs, error, retryable), finished = answer
        job = self.jobs.pop(call_id, None)
        if job is None:  # it had timed out: its late answer is dropped
            return []
        return [Result(job, kind, outputs, error, retryable, finished)]

    def close(self) -> None:
        self.jobs.clear()


class SimulatedDispatcher:
    """Calls made at once, answered when the virtual clock reaches ``start + duration``."""

    def __init__(self, clock: VirtualClock | None = None) -> None:
        self.clock = clock or VirtualClock()
        self.heap: list[tuple[float, int, Result]] = []
        self.counter = itertools.count()

    def submit(self, job: Job) -> None:
        kind, outputs, error, retryable = run_tool(job.fn, job.inputs, job.call)
        finish = job.started + job.duration
        if finish > job.deadline:
            result = timed_out(job, job.deadline)
        else:
            result = Result(job, kind, outputs, error, retryable, finish)
        heapq.heappush(self.heap, (result.finished, next(self.counter), result))

    def running(self) -> int:
        return len(self.heap)

    def collect(self, until: float | None) -> list[Result]:
        if not self.heap or (until is not None and until < self.heap[0][0]):
            if until is not None:
                self.clock.advance(until)
            return []
        first = self.heap[0][0]
        self.clock.advance(first)
        results = []
        while self.heap and self.heap[0][0] <= first:
            results.append(heapq.heappop(self.heap)[2])
        return results

    def close(self) -> None:
        self.heap.clear()


class DaskDispatcher:
    """Tool calls as tasks of a Dask cluster (``distributed``); answers are polled here.

    The callables and inputs are pickled to the workers, so tools must be importable there
    (module-level functions). A call past its deadline is cancelled and reported as a timeout.
    """

    def __init__(self, client: Any, clock: WallClock | None = None) -> None:
        self.client = client
        self.clock = clock or WallClock()
        self.futures: dict[int, tuple[Job, Any]] = {}

    def submit(self, job: Job) -> None:
        future = self.client.submit(
            run_tool,
            job.fn,
            job.inputs,
            job.call,
            pure=False,
            key=f"evolve-call-{job.call_id}-{time.time_ns()}",
        )
        self.futures[job.call_id] = (job, future)

    def running(self) -> int:
        return len(self.futures)

    def collect(self, until: float | None) -> list[Result]:
        from distributed import wait  # the dask extra; only this dispatcher needs it

        results: list[Result] = []
        while not results:
            now = self.clock.now()
            for call_id, (job, future) in list(self.futures.items()):
                if future.done():
                    del self.futures[call_id]
                    results.append(self.result(job, future, now))
                elif job.deadline <= now:
                    del self.futures[call_id]
                    future.cancel()
                    results.append(timed_out(job, now))
            if results:
                break
            wake = next_wake((job.deadline for job, _ in self.futures.values()), until, now)
            if wake is None:
                return []
            try:
                wait(  # type: ignore[no-untyped-call]
                    [f for _, f in self.futures.values()],
                    timeout=max(0.001, wake - now),
                    return_when="FIRST_COMPLETED",
                )
            except Exception:  # distributed's TimeoutError (its type differs between versions)
                continue
        return results

    def result(self, job: Job, future: Any, now: float) -> Result:
        try:
            kind, outputs, error, retryable = future.result()
        except Exception as exc:  # the worker died or could not unpickle the tool
            return Result(
                job, "exception", None, f"the cluster lost the call: {type(exc).__name__}: {exc}", True, now
            )
        return Result(job, kind, outputs, error, retryable, now)

    def close(self) -> None:
        for _, future in self.futures.values():
            future.cancel()
        self.futures.clear()
