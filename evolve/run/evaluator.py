"""Scoring candidates, and developing children, in this process or across a joblib pool.

Evaluation is a pure function of (problem, plan, fitness functions), and
development (the improvement of a child, the making of a first plan; see
:mod:`evolve.search.develop`) a pure function of (problem, operators, plan,
random stream), so where they run never changes the result: that is what makes
``--seed`` reproducible for any ``--jobs``. Nothing a fitness function does costs more than its own
candidate: an exception, a hang past ``eval_timeout`` (stopped by a signal in
the process running it, or by killing that process), or a dead worker all end
in a failed :class:`Evaluation` that carries the error.
"""

from __future__ import annotations

import copy
import functools
import os
import pickle
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import TypeVar

from joblib import Parallel, cpu_count, delayed, parallel_config

from evolve import defaults
from evolve.fitness.base import Fitness
from evolve.fitness.evaluation import Evaluation, evaluate_plan
from evolve.model.errors import UsageError
from evolve.model.plan import Plan, plan_hash
from evolve.model.problem import Problem
from evolve.run.backends import BackendError, backend_session
from evolve.run.chores import Chore, in_a_thread
from evolve.run.lanes import Lanes, average
from evolve.search.develop import Developed, Development, Work, develop
from evolve.search.operators import Warmer

Item = TypeVar("Item")


@dataclass(frozen=True)
class Payload:
    """What every evaluation needs besides the plan, and every development besides the child:
    sent to each worker once, not per plan (the improver carries the compiled problem)."""

    problem: Problem
    fitnesses: tuple[Fitness, ...]
    development: Development | None = None


@dataclass(frozen=True)
class PayloadFile:
    """A payload pickled to a file; each worker process reads it once and keeps it.

    ``import_path`` is the run's ``sys.path``: a reused worker may have started
    before a plugin's folder was added to it, and must find the plugin to read
    the payload.
    """

    path: str
    import_path: tuple[str, ...] = ()


@functools.lru_cache(maxsize=4)
def read_payload(path: str, import_path: tuple[str, ...] = ()) -> Payload:
    sys.path.extend(p for p in import_path if p not in sys.path)
    with open(path, "rb") as stream:
        payload = pickle.load(stream)
    assert isinstance(payload, Payload)
    return payload


def import_path(fitnesses: Sequence[Fitness]) -> tuple[str, ...]:
    """``sys.path`` plus the folder each objective's top-level package was imported from.

    A plugin may have been imported through a path entry that is gone since (or
    found only in ``sys.modules``); the folder it came from lets a worker import it too.
    """
    path = list(sys.path)
    for fitness in fitnesses:
        top = sys.modules.get(getattr(fitness.fn, "__module__", "").split(".")[0])
        locations = list(getattr(top, "__path__", None) or [])
        module_file = getattr(top, "__file__", None)
        if not locations and module_file:
            locations = [str(module_file)]
        for location in locations:
            folder = os.path.dirname(location)  # the folder holding the package or module
            if folder and folder not in path:
                path.append(folder)
    return tuple(path)


def read_shipped(payload: Payload | PayloadFile) -> None:
    """A worker's warm-up: read the payload (imports, the compiled problem) before work comes."""
    if isinstance(payload, PayloadFile):
        read_payload(payload.path, payload.import_path)


def evaluate_chunk(payload: Payload | PayloadFile, plans: Sequence[Plan],
                   timeout: float | None = None) -> list[Evaluation]:
    """The unit of work sent to a worker: many plans per call, so dispatch cost is amortised."""
    resolved = (read_payload(payload.path, payload.import_path) if isinstance(payload, PayloadFile)
                else payload)
    return [evaluate_plan(resolved.problem, plan, resolved.fitnesses, timeout) for plan in plans]


def develop_chunk(payload: Payload | PayloadFile, work: Sequence[Work], score: bool,
                  timeout: float | None = None) -> list[Developed]:
    """Children developed in a worker and, with ``score``, the plans they became scored there
    too, so one trip carries both."""
    resolved = (read_payload(payload.path, payload.import_path) if isinstance(payload, PayloadFile)
                else payload)
    assert resolved.development is not None
    fitnesses = resolved.fitnesses if score else None
    return [develop(resolved.problem, resolved.development, item, fitnesses, timeout) for item in work]


def evaluate_batch(problem: Problem, plans: Sequence[Plan], fitnesses: Sequence[Fitness],
                   timeout: float | None = None) -> list[Evaluation]:
    """Score ``plans`` in this process."""
    return evaluate_chunk(Payload(problem, tuple(fitnesses)), plans, timeout)


@dataclass
class Route:
    """Where one kind of work (scoring, developing) runs when both places are allowed: here or
    in the pool, whichever measured less wall time per item.

    The pool is first tried once a call's work here exceeds ``min_parallel_seconds``; its
    first call is not measured (it pays for workers that are still starting), so the second
    is; then every ``reprobe`` calls the path not taken is measured again, as costs drift
    while plans grow or shrink, less often each time a probe confirms the choice.
    """

    min_parallel_seconds: float
    here: float | None = None
    pool: float | None = None
    reprobe: int = 10
    since_probe: int = 0
    probing: bool = field(default=False, repr=False)
    pool_calls: int = 0

    def stays_here(self, count: int) -> bool:
        here, pool = self.here, self.pool
        self.probing = False
        if count < 2 or here is None:
            return True  # a first, in-process measurement decides the next calls
        if pool is None:
            return here * count < self.min_parallel_seconds
        self.since_probe += 1
        if self.since_probe >= self.reprobe and here * count >= self.min_parallel_seconds:
            self.since_probe, self.probing = 0, True
            return not self.prefers_here()
        return self.prefers_here()

    def prefers_here(self) -> bool:
        """Whether the measurements so far favour this process over the pool."""
        return self.here is not None and (self.pool is None or self.here <= self.pool)

    def record(self, local: bool, per_item: float) -> None:
        preferred_here = self.prefers_here()
        if local:
            self.here = average(self.here, per_item)
        elif self.pool_calls == 0:
            self.pool_calls = 1
            return
        else:
            self.pool = average(self.pool, per_item)
        if self.probing and self.prefers_here() == preferred_here:
            self.reprobe = min(2 * self.reprobe, 320)  # the probe confirmed the choice: probe less


class Evaluator:
    """Evaluates lists of plans, keeping one joblib pool open for the whole run.

    Work goes out as one chunk per worker. Built-in objectives are trusted: when a
    chunk is measured to be cheaper than ``min_parallel_seconds`` it is scored in
    this process, since shipping it would cost more than it saves. With
    ``isolate`` (the default when a plugin objective or an ``eval_timeout`` is
    set) every evaluation goes to a worker process, so that even a crash costs
    one candidate and never the run. When a call to the pool fails (a
    worker died, or a hang could only be ended by killing it), each plan of it
    is retried alone, which names the culprit and scores everyone else.

    Given the search's ``development`` (its initializer and improver), it is also the
    search's :class:`~evolve.search.develop.Developer`: children are improved where they
    are scored, in the same trip. Operators that may run in threads (the tool-choice search,
    whose kernels release the GIL) are developed in ``jobs + 1`` threads of this process on
    the local backends (see :meth:`thread_pool`): no worker start, no shipping, every core busy from the first
    generation on. Others go where scoring would: here or the pool, whichever measured
    cheaper, and always the pool of a cluster backend (Dask, Ray).
    """

    def __init__(self, problem: Problem, fitnesses: Sequence[Fitness], *, jobs: int | None = None,
                 backend: str = defaults.BACKEND, scheduler_address: str | None = None,
                 eval_timeout: float | None = None, isolate: bool | None = None,
                 min_parallel_seconds: float = defaults.MIN_PARALLEL_SECONDS,
                 kill_grace: float = defaults.EVAL_KILL_GRACE,
                 development: Development | None = None,
                 pool_after_seconds: float = defaults.POOL_AFTER_SECONDS) -> None:
        if eval_timeout is not None and backend == "threading":
            raise BackendError("--eval-timeout needs a process backend (loky, dask or ray): "
                               "a thread cannot be stopped")
        self.problem = problem
        self.fitnesses = tuple(fitnesses)
        self.jobs = resolve_jobs(jobs)
        self.backend = backend
        self.scheduler_address = scheduler_address
        self.eval_timeout = eval_timeout
        self.min_parallel_seconds = min_parallel_seconds
        self.kill_grace = kill_grace
        if isolate is None:
            isolate = eval_timeout is not None or any(f.source != "builtin" for f in self.fitnesses)
        self.trusted = not isolate
        self.scoring = Route(min_parallel_seconds)
        self.developing = Route(min_parallel_seconds)
        self.development = development
        self.pool_after_seconds = pool_after_seconds
        self.developed_here = 0.0
        self.evaluations = 0
        self.worker_failures = 0
        self.parallel: Parallel | None = None
        self.threads: ThreadPoolExecutor | None = None
        self.warming: Iterator[object] | None = None
        self.chores: list[Chore] = []
        self.seconds: dict[str, float] = {}
        self.shipped: Payload | PayloadFile = Payload(problem, self.fitnesses, development)
        self.stack = ExitStack()

    def __enter__(self) -> Evaluator:
        if self.backend in ("dask", "ray"):
            self.open_pool()  # a cluster was asked for: fail now if it cannot be reached
        return self

    def open_pool(self) -> Parallel:
        """Start the workers on first need: a run whose batches all stay in-process never pays
        for a pool."""
        if self.parallel is not None:
            return self.parallel
        try:
            extra = self.stack.enter_context(backend_session(self.backend, self.jobs, self.scheduler_address))
            if self.backend == "loky":
                folder = Path(self.stack.enter_context(tempfile.TemporaryDirectory(prefix="evolve-")))
                path = folder / "payload.pkl"
                path.write_bytes(pickle.dumps(self.shipped))
                self.shipped = PayloadFile(str(path), import_path(self.fitnesses))
            scatter = [self.shipped] if self.backend == "dask" else None
            config = {"scatter": scatter, **extra} if self.backend == "dask" else {}
            self.stack.enter_context(parallel_config(backend=self.backend, **config))
            # joblib runs n_jobs=1 in this very process, which isolates nothing: an isolated
            # single-job run gets a pool of two workers and sends its one chunk to one of them
            workers = 2 if self.jobs == 1 and not self.trusted else self.jobs
            # results come back as a generator: a call returns as soon as its work is dispatched,
            # so this process can do a share of a development while the workers do theirs
            self.parallel = self.stack.enter_context(Parallel(n_jobs=workers, return_as="generator"))
            if self.backend == "loky":
                # loky starts its processes on the first call: start them now, reading the
                # payload, so they are ready when work comes (drained before the next call)
                self.warming = self.parallel(delayed(read_shipped)(self.shipped) for _ in range(workers))
        except BaseException:
            self.stack.close()
            raise
        return self.parallel

    def pool(self) -> Parallel:
        """The pool, ready for a call: open, and done with its warm-up."""
        parallel = self.open_pool()
        if self.warming is not None:
            warming, self.warming = self.warming, None
            try:
                for _ in warming:
                    pass
            except Exception:
                self.worker_failures += 1  # a worker that cannot start fails the next call too
        return parallel

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.warming is not None:
            self.pool()
        self.parallel = self.threads = None
        self.stack.close()

    def evaluate(self, plans: Sequence[Plan]) -> list[Evaluation]:
        """Evaluations of ``plans``, in the same order."""
        if not plans:
            return []
        began = time.perf_counter()
        count = len(plans)
        local = self.here(self.scoring, count)
        if local:
            out = evaluate_chunk(Payload(self.problem, self.fitnesses), plans, self.eval_timeout)
        else:
            out = [ev for chunk in self.run_chunks(split(list(plans), self.jobs)) for ev in chunk]
        self.scoring.record(local, (time.perf_counter() - began) / count)
        self.evaluations += count
        return out

    def develop(self, work: Iterable[Work]) -> list[Developed]:
        """The children of ``work`` developed, in order, and scored in the same trip when the
        objectives are trusted (otherwise scoring stays on :meth:`evaluate`'s isolated path).

        In threads (see :meth:`in_threads`) they are developed side by side, the first from the
        moment ``work`` yields it (the search drafts the next child meanwhile), the others in
        the lanes their kinds' lengths call for (see :mod:`evolve.run.lanes`); no timeout
        applies there, as a signal stops only the main thread, but with an ``eval_timeout``
        nothing is scored in them either (the objectives are then not trusted).

        Through the pool, this process develops a share too while it waits (it would idle
        otherwise): three children on two workers take one child's time per process, not two.
        A failed trip to the pool is redone here: development is trusted code, and doing it
        again gives the same children."""
        if self.development is None:
            raise UsageError("this evaluator was made without the search's development "
                             "(pass development= to develop children with it)")
        fitnesses = self.fitnesses if self.trusted else None
        development = self.development
        if self.in_threads():
            def one(item: Work) -> Developed:
                return hashed(develop(self.problem, development, item, fitnesses))

            lanes = Lanes(self.thread_pool(), self.jobs, self.seconds)
            futures = lanes.run((functools.partial(one, item), development.kind_of(self.problem, item))
                                for item in work)
            if self.chores:
                # this thread would only wait: its chores fill the core the last development
                # leaves idle, rather than crowd the cores while all of them run
                pending = set(futures)
                while len(pending) > 1:
                    pending = wait(pending, return_when=FIRST_COMPLETED).not_done
                while self.chores:
                    self.chores.pop(0).run()
            return [future.result() for future in futures]
        work = list(work)
        if not work:
            return []
        began = time.perf_counter()
        local = self.parallel is None or self.here(self.developing, len(work), isolated=False)
        if local:
            out = []
            for item in work:
                out.append(develop(self.problem, development, item, fitnesses, self.eval_timeout))
                if self.parallel is None and self.worth_a_pool(began):
                    self.open_pool()  # its workers start while this process develops the rest
        else:
            # the streams as they came: a redo after a failed trip starts from these, not from
            # streams this process (or a thread of the threading backend) advanced meanwhile
            fresh = [replace(item, rng=copy.deepcopy(item.rng)) for item in work]
            parts = split(list(work), self.jobs + 1)
            mine = parts.pop() if len(parts) > 1 else []
            parallel = self.pool()
            parallel.timeout = None  # trusted work of unknown length: no kill backstop
            try:
                pending = parallel(delayed(develop_chunk)(self.shipped, chunk, self.trusted,
                                                          self.eval_timeout) for chunk in parts)
                here = [develop(self.problem, development, item, fitnesses, self.eval_timeout)
                        for item in mine]
                out = [made for chunk in pending for made in chunk] + here
            except Exception:
                self.worker_failures += 1
                out = [develop(self.problem, development, item) for item in fresh]
        elapsed = time.perf_counter() - began
        self.developed_here += elapsed if local else 0.0
        self.developing.record(local, elapsed / len(work))
        return out

    def defer(self, chore: Chore) -> None:
        """Run ``chore`` (a checkpoint's text and write, say) where it costs least: while this
        process waits for its development threads next, whose kernels leave the GIL free, when
        there are such threads; otherwise in a thread of its own, now. Whoever needs it done
        runs it (it runs once), so a chore never waits on a development that does not come."""
        if self.in_threads():
            self.chores.append(chore)
        else:
            in_a_thread(chore)

    def in_threads(self) -> bool:
        """Whether children are developed in threads of this process: more than one job, a
        local backend, and operators that may run in threads."""
        return (self.jobs > 1 and self.backend in ("loky", "threading")
                and self.development is not None and self.development.threads)

    def thread_pool(self) -> ThreadPoolExecutor:
        """The run's threads, started on first need and joined when the run ends: ``jobs + 1``,
        as the search's own thread only waits meanwhile (the pool path's share of this process),
        so the three children of a default generation share two cores and finish in 1.5 child
        times, where two threads would take two."""
        if self.threads is None:
            self.threads = self.stack.enter_context(
                ThreadPoolExecutor(self.jobs + 1, thread_name_prefix="evolve-develop"))
            if self.development is not None and self.development.warm is not None:
                warming = threading.Thread(target=self.warm_up, args=(self.development.warm,),
                                           name="evolve-warm", daemon=True)
                warming.start()
                self.stack.callback(warming.join)
        return self.threads

    def warm_up(self, warm: Warmer) -> None:
        """Load the kernels that developing and scoring a child call, in a thread of its own
        beside the first children (see :attr:`~evolve.search.operators.OperatorSet.warm`): what
        numba loads there, while their kernels run, they do not wait for later. An error here
        is dropped, as nothing depends on this work: the children call the same code, and
        meet any real error themselves."""
        try:
            made = warm(self.problem)
            if made is not None and self.trusted:
                evaluate_plan(self.problem, made, self.fitnesses)
        except Exception:  # see the docstring
            return

    def worth_a_pool(self, began: float) -> bool:
        """Whether to start the workers: more than one job, not the threading backend, and
        ``pool_after_seconds`` spent developing here already (with this call's time so far):
        a run whose children cost that much has more of them coming, and a shorter run
        would not win back the workers' start."""
        if self.jobs == 1 or self.backend == "threading":
            return False
        return self.developed_here + time.perf_counter() - began >= self.pool_after_seconds

    def here(self, route: Route, count: int, *, isolated: bool = True) -> bool:
        """Whether work goes to this process: scoring (``isolated``) only when the objectives
        are trusted, and either kind only when it measured cheaper here than through the pool
        (see :class:`Route`)."""
        if self.jobs == 1 and self.backend in ("loky", "threading"):
            return self.trusted or not isolated
        if isolated and not self.trusted:
            return False
        return route.stays_here(count)

    def run_chunks(self, chunks: list[list[Plan]]) -> list[list[Evaluation]]:
        parallel = self.pool()
        longest = max(len(c) for c in chunks)
        parallel.timeout = self.hard_timeout(longest)
        try:
            return list(parallel(
                delayed(evaluate_chunk)(self.shipped, chunk, self.eval_timeout) for chunk in chunks))
        except Exception:
            self.worker_failures += 1
            return [[self.run_alone(plan) for plan in chunk] for chunk in chunks]

    def run_alone(self, plan: Plan) -> Evaluation:
        """Score one plan in a worker of its own call; a failure of the call is this plan's."""
        parallel = self.pool()
        parallel.timeout = self.hard_timeout(1)
        try:
            calls = [delayed(evaluate_chunk)(self.shipped, [plan], self.eval_timeout)]
            evaluation: Evaluation = next(iter(parallel(calls)))[0]
            return evaluation
        except Exception as exc:
            kind = type(exc).__name__
            if "Timeout" in kind:
                return Evaluation(failed=f"EvaluationTimeout: worker killed after {self.hard_timeout(1):g}s")
            return Evaluation(failed=f"WorkerDied: the worker process evaluating this plan died ({kind}: "
                                     f"{str(exc).splitlines()[0] if str(exc) else ''})")

    def hard_timeout(self, plans: int) -> float | None:
        """How long a call may run before its workers are killed: a backstop for hangs that the
        in-worker signal cannot interrupt (e.g. inside C code)."""
        if self.eval_timeout is None:
            return None
        return self.eval_timeout * plans + self.kill_grace


def hashed(developed: Developed) -> Developed:
    """``developed`` with its plan's task texts made (see :func:`~evolve.model.plan.task_text`):
    in a development thread, where it overlaps the other threads' kernels, rather than in the
    search's thread, which hashes every child it receives and would do it there alone."""
    if developed.plan is not None:
        plan_hash(developed.plan)
    return developed


def resolve_jobs(jobs: int | None) -> int:
    """``None`` or 0 means every core; negative counts back from it, as in joblib."""
    cores = int(cpu_count())
    if not jobs:
        return cores
    if jobs < 0:
        return max(1, cores + 1 + jobs)
    return int(jobs)


def capped_jobs(jobs: int | None, cores: int, *, remote: bool = False) -> tuple[int | None, str | None]:
    """``jobs`` held to the ``cores`` of this machine, and the warning to print when it was cut.

    Local workers beyond the cores cannot make a run faster (results never depend on
    ``--jobs``), and ``--jobs 1000`` would spend minutes spawning processes; a remote cluster
    (``remote``) has cores of its own, so its count is left as asked.
    """
    if remote or jobs is None or jobs <= cores:
        return jobs, None
    return cores, f"--jobs {jobs} is more than this machine's {cores} cores; using {cores}"


def split(items: list[Item], parts: int) -> list[list[Item]]:
    """``items`` cut into at most ``parts`` contiguous chunks of near-equal size."""
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    chunks, begin = [], 0
    for i in range(parts):
        end = begin + size + (1 if i < extra else 0)
        chunks.append(items[begin:end])
        begin = end
    return chunks
