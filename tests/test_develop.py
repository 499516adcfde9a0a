"""Children are developed (made by the initializer, hill-climbed by the improver) where they are
scored: in the workers when the pool is the cheaper place, with results byte-identical to a
search that does it all in its own process, on loky and on a Dask cluster; a worker that dies
while developing costs nothing but the time to redo its work here."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from numba.core.registry import CPUDispatcher as Dispatcher
from plugins.development import DiesInWorkers, Recorded, ThreadRecorded

from evolve.fitness import compiled as fitness_compiled
from evolve.fitness.registry import resolve_all
from evolve.model import graph_kernels, plan_arrays
from evolve.model.problem import Problem
from evolve.model.validate import validate
from evolve.problems import default_operators
from evolve.problems.synthetic import generate_problem
from evolve.run import checkpoint
from evolve.run.chores import Chore
from evolve.run.evaluator import Evaluator
from evolve.scheduling import compiled as scheduling_compiled
from evolve.scheduling import kernel as scheduling_kernel
from evolve.search import anneal_kernels, toolchoice_kernels
from evolve.search.develop import Development, InProcess, Work, develop
from evolve.search.loop import Search, child_rng
from evolve.search.operators import OperatorSet
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking

OBJECTIVES = ["validity", "completeness", "makespan", "minimality"]
OPTIONS = SearchOptions(population=6, keep=3, generations=3, seed=4)


@pytest.fixture(scope="module")
def problem() -> Problem:
    return generate_problem(150, 2)


def run(problem: Problem, operators: OperatorSet, *, jobs: int, backend: str = "loky",
        force_pool: bool = True) -> tuple[list[dict[str, Any]], Evaluator]:
    """The events of a search whose evaluator also develops its children (in threads when the
    operators are marked safe there)."""
    fitnesses = resolve_all(OBJECTIVES)
    events: list[dict[str, Any]] = []
    evaluator = Evaluator(problem, fitnesses, jobs=jobs, backend=backend,
                          min_parallel_seconds=0.0 if force_pool else 1.0,
                          pool_after_seconds=0.0 if force_pool else 60.0,
                          development=Development.of(operators))
    with evaluator:
        Search(problem, operators=operators, evaluator=evaluator, ranking=Ranking.of(fitnesses),
               options=OPTIONS, on_event=events.append, developer=evaluator).run()
    return events, evaluator


def baseline(problem: Problem, operators: OperatorSet) -> list[dict[str, Any]]:
    """The same search with development in its own process (the default developer)."""
    fitnesses = resolve_all(OBJECTIVES)
    events: list[dict[str, Any]] = []
    with Evaluator(problem, fitnesses, jobs=1) as evaluator:
        Search(problem, operators=operators, evaluator=evaluator, ranking=Ranking.of(fitnesses),
               options=OPTIONS, on_event=events.append).run()
    return events


def recorded(problem: Problem, folder: Path) -> OperatorSet:
    ops = default_operators(problem)
    assert ops.improve is not None  # a catalog problem: the tool-choice climb
    return replace(ops, initial=Recorded(ops.initial, str(folder)),
                   improve=Recorded(ops.improve, str(folder)))


def test_children_are_improved_in_the_workers_and_nothing_changes(problem: Problem, tmp_path: Path) -> None:
    ops = recorded(problem, tmp_path)
    expected = baseline(problem, ops)
    for pid in tmp_path.iterdir():
        pid.unlink()
    got, evaluator = run(problem, ops, jobs=2)
    assert got == expected
    pids = {int(p.name) for p in tmp_path.iterdir()}
    assert pids - {os.getpid()}, "no child was developed in a worker"
    assert evaluator.worker_failures == 0
    improved = [e for e in got if e.get("event") == "candidate" and "improve" in e["operator"]]
    assert improved  # the climb really ran and made children


def test_thread_safe_operators_are_developed_in_threads_and_nothing_changes(
        problem: Problem, tmp_path: Path) -> None:
    ops = default_operators(problem)
    assert ops.threads and ops.improve is not None  # the tool-choice search may run in threads
    traced = replace(ops, initial=ThreadRecorded(ops.initial, str(tmp_path)),
                     improve=ThreadRecorded(ops.improve, str(tmp_path)))
    expected = baseline(problem, traced)
    for mark in tmp_path.iterdir():
        mark.unlink()
    assert traced.threads
    got, evaluator = run(problem, traced, jobs=2)
    assert got == expected
    marks = {p.name for p in tmp_path.iterdir()}
    assert all(m.startswith(f"{os.getpid()}-evolve-develop") for m in marks), marks
    assert len(marks) == 3, "the children were not spread over the jobs + 1 threads"
    assert evaluator.parallel is None  # no worker process was started for them


def test_the_warm_up_runs_beside_threaded_children_and_changes_nothing(problem: Problem) -> None:
    """The tool-choice set's warm-up runs once, in a thread of its own, when children develop
    in threads (never at one job); what it makes never reaches the search, and a warm-up that
    fails costs the run nothing."""
    ops = default_operators(problem)
    assert ops.warm is not None
    made = ops.warm(problem)
    assert made is not None and validate(problem, made) == []  # a real development, smallest budget
    calls: list[str] = []

    def recorded(p: Problem) -> Any:
        calls.append(threading.current_thread().name)
        return ops.warm(p) if ops.warm is not None else None

    def failing(p: Problem) -> Any:
        calls.append("failing")
        raise RuntimeError("a warm-up that breaks")

    expected, _ = run(problem, replace(ops, warm=None), jobs=2)
    got, _ = run(problem, replace(ops, warm=recorded), jobs=2)
    assert got == expected and calls == ["evolve-warm"]
    calls.clear()
    assert run(problem, replace(ops, warm=failing), jobs=2)[0] == expected and calls == ["failing"]
    calls.clear()
    run(problem, replace(ops, warm=recorded), jobs=1)
    assert calls == []


def test_threads_that_meet_a_fresh_problem_build_its_indexes_once() -> None:
    """Development threads start together on a problem no one has compiled yet: each index is
    built once, the others wait for it (before, each built its own, one after the other)."""
    problem = generate_problem(60, 5)
    calls: list[int] = []
    barrier = threading.Barrier(4)

    def slow_index(p: Problem) -> object:
        calls.append(threading.get_ident())
        time.sleep(0.05)
        return object()

    def reader() -> object:
        barrier.wait()
        return problem.derived(slow_index)

    outs: list[object] = []
    threads = [threading.Thread(target=lambda: outs.append(reader())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    assert len(outs) == 4 and all(o is outs[0] for o in outs)


def test_only_operators_marked_thread_safe_run_in_threads(problem: Problem, tmp_path: Path) -> None:
    """A set is run in threads only when its own initializer and improver say they may be:
    replacing one with a function of one's own turns threads off, without anyone asking."""
    ops = default_operators(problem)
    assert ops.threads
    assert not replace(ops, improve=Recorded(ops.improve, str(tmp_path))).threads
    assert not replace(ops, initial=Recorded(ops.initial, str(tmp_path))).threads
    assert replace(ops, improve=None).threads  # the marked initializer alone
    assert not OperatorSet(mutations=()).threads  # the plain-Python constructor


@pytest.mark.parametrize("module", [toolchoice_kernels, anneal_kernels, fitness_compiled, scheduling_compiled,
                                    scheduling_kernel, plan_arrays, graph_kernels])
def test_the_kernels_a_development_runs_release_the_gil(module: Any) -> None:
    """Threads only spread the climbs (and the scoring of what they made) if the kernels they
    spend their time in let go of the GIL: a kernel losing ``nogil`` would silently serialise
    them again."""
    kernels = [v for v in vars(module).values() if isinstance(v, Dispatcher)]
    assert kernels
    for kernel in kernels:
        assert kernel.targetoptions.get("nogil") is True, f"{module.__name__}.{kernel.__name__}"


def test_development_stays_here_when_the_pool_does_not_pay(problem: Problem, tmp_path: Path) -> None:
    ops = recorded(problem, tmp_path)
    got, _ = run(problem, ops, jobs=2, force_pool=False)
    assert {int(p.name) for p in tmp_path.iterdir()} == {os.getpid()}
    assert got == baseline(problem, ops)


def test_a_worker_dying_while_developing_loses_nothing(problem: Problem) -> None:
    ops = default_operators(problem)
    assert ops.improve is not None
    dying = replace(ops, improve=DiesInWorkers(ops.improve))
    got, evaluator = run(problem, dying, jobs=2)
    assert evaluator.worker_failures > 0
    assert got == baseline(problem, dying)


def test_dask_cluster_develops_the_same_children(problem: Problem) -> None:
    pytest.importorskip("dask.distributed")
    ops = default_operators(problem)
    got, evaluator = run(problem, ops, jobs=2, backend="dask")
    assert evaluator.worker_failures == 0
    assert got == baseline(problem, ops)


def test_development_continues_the_childs_random_stream(problem: Problem, tmp_path: Path) -> None:
    """The stream comes back as the improver left it: drawing on after a development in a
    worker gives what drawing on after the same development here gives (the operators wrapped
    unmarked, so they go to the workers, not to threads)."""
    ops = default_operators(problem)
    assert ops.improve is not None
    development = Development(Recorded(ops.initial, str(tmp_path)), Recorded(ops.improve, str(tmp_path)))
    assert not development.threads
    plan = ops.initial(problem, child_rng(9, 0, 0))
    here = develop(problem, development, Work(child_rng(9, 1, 0), plan))
    fitnesses = resolve_all(OBJECTIVES)
    with Evaluator(problem, fitnesses, jobs=2, min_parallel_seconds=0.0, pool_after_seconds=0.0,
                   development=development) as ev:
        ev.develop([Work(child_rng(9, 1, 5), plan)])  # measured here first
        there = ev.develop([Work(child_rng(9, 1, 0), plan), Work(child_rng(9, 1, 1), plan)])[0]
    assert there.plan == here.plan
    assert there.rng.random() == here.rng.random()
    assert there.evaluation is not None  # trusted objectives: scored in the same trip
    assert InProcess(problem, development).develop([Work(child_rng(9, 1, 0), plan)])[0].plan == here.plan
    assert {int(p.name) for p in tmp_path.iterdir()} - {os.getpid()}, "nothing was developed in a worker"


def test_a_deferred_chore_runs_once_in_the_waiting_thread_while_children_develop(problem: Problem) -> None:
    """With development threads, a checkpoint's text is made by the search's own thread while it
    waits for them (it would only wait), once; with one job, in a thread of its own, at once."""
    ops = default_operators(problem)
    development = Development(ops.initial, ops.improve)
    fitnesses = resolve_all(["validity", "completeness", "makespan"])
    ran: list[str] = []
    with Evaluator(problem, fitnesses, jobs=2, development=development) as evaluator:
        assert evaluator.in_threads()
        chore = Chore(lambda: ran.append(threading.current_thread().name))
        evaluator.defer(chore)
        assert ran == []  # nothing waits yet: the chore waits for the next development
        evaluator.develop([Work(child_rng(0, 0, 0))])
        chore.run()  # whoever needs it done asks again: it ran already, so nothing happens
    assert ran == [threading.main_thread().name]
    finished = threading.Event()
    with Evaluator(problem, fitnesses, jobs=1, development=development) as evaluator:
        evaluator.defer(Chore(finished.set))
        assert finished.wait(10)  # no development threads to wait for: its own thread, now


def test_a_chore_runs_once_however_many_ask(tmp_path: Path) -> None:
    count: list[int] = []
    gate = threading.Event()

    def job() -> None:
        gate.wait(5)
        count.append(1)

    chore = Chore(job)
    threads = [threading.Thread(target=chore.run) for _ in range(4)]
    for thread in threads:
        thread.start()
    gate.set()
    for thread in threads:
        thread.join()
    chore.run()
    assert count == [1]


def test_a_checkpoint_nobody_ran_is_written_when_the_writer_waits(tmp_path: Path) -> None:
    """A runner may hold a checkpoint back (until the next development); waiting for it (the next
    checkpoint, the end of the run) writes it, so the newest one is never lost."""
    held: list[Chore] = []
    with checkpoint.Writer(tmp_path, {"problem": "p"}) as writer:
        writer.runner = held.append
        writer.save({"generation": 1}, 0, "0" * 64)  # the first is written before save returns
        assert checkpoint.checkpointed_generation(tmp_path) == 1
        writer.save({"generation": 2}, 0, "0" * 64)
        assert len(held) == 2 and checkpoint.checkpointed_generation(tmp_path) == 1
    assert checkpoint.checkpointed_generation(tmp_path) == 2


def test_a_child_forked_while_an_index_is_built_can_build_its_own() -> None:
    """The lock that makes threads build an index once is not inherited held: a process forked
    while a thread of its parent builds one can still build indexes (it would hang forever)."""
    problem = generate_problem(40, 1)
    started = threading.Event()

    def slow_index(p: Problem) -> int:
        started.set()
        time.sleep(0.5)
        return 1

    builder = threading.Thread(target=lambda: problem.derived(slow_index))
    builder.start()
    started.wait()
    pid = os.fork()
    if pid == 0:  # the child: build an index of another problem, then leave at once
        generate_problem(40, 2).derived(lambda p: 2)
        os._exit(0)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.05)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        raise AssertionError("the forked child hung on the parent's lock")
    builder.join()
    assert os.waitstatus_to_exitcode(status) == 0
