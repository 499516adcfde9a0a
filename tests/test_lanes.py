"""Placing children in lanes: the sharing model against a step-by-step simulation, the
placements it leads to, a real thread pool running them in that order, and a search whose
children are chained in lanes making the same events as one that develops them one by one."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.fitness.registry import resolve_all
from evolve.model.problem import Problem
from evolve.problems import default_operators
from evolve.problems.synthetic import generate_problem
from evolve.run import evaluator as evaluator_module
from evolve.run.evaluator import Evaluator
from evolve.run.lanes import Lanes, Track, shared_finish
from evolve.search.develop import Development
from evolve.search.loop import Search
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking
from evolve.search.toolchoice import ToolChoice

OBJECTIVES = ["validity", "completeness", "makespan", "minimality"]


def simulated_finish(work: list[float], cores: int, step: float = 1e-3) -> float:
    """Processor sharing stepped in small slices of time: the oracle of :func:`shared_finish`."""
    left = [w for w in work if w > 0]
    clock = 0.0
    while left:
        rate = min(1.0, cores / len(left))
        slice_ = min(step, min(left) / rate)
        clock += slice_
        left = [w - slice_ * rate for w in left]
        left = [w for w in left if w > 1e-12]
    return clock


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.01, 1.0), min_size=1, max_size=6), st.integers(1, 4))
def test_shared_finish_is_the_step_by_step_simulation(work: list[float], cores: int) -> None:
    assert shared_finish(work, cores) == pytest.approx(simulated_finish(work, cores), abs=2e-3)


def test_three_children_on_two_cores_finish_in_the_longest_plus_half_the_shortest() -> None:
    assert shared_finish([0.16, 0.06, 0.06], 2) == pytest.approx(0.16 + 0.03)
    assert shared_finish([0.16, 0.06], 2) == pytest.approx(0.16)


def lanes_with(*remaining: float | None) -> Lanes:
    """Lanes whose tracks have these seconds of work left (``None``: not known), none started."""
    lanes = Lanes(ThreadPoolExecutor(1), 2, {})
    lanes.lanes = [[Track(left)] for left in remaining]
    return lanes


def test_a_short_child_waits_behind_the_short_one_when_a_long_one_runs() -> None:
    assert lanes_with(0.16, 0.06).lane_for(0.06, 0.0) == 1


def test_a_long_child_shares_the_cores_rather_than_wait() -> None:
    assert lanes_with(0.06, 0.06).lane_for(0.16, 0.0) is None
    assert lanes_with(0.16, 0.16).lane_for(0.16, 0.0) is None


def test_a_child_gets_a_lane_of_its_own_when_a_core_is_free_or_a_length_is_unknown() -> None:
    assert lanes_with(0.16).lane_for(0.06, 0.0) is None
    assert lanes_with(0.16, None).lane_for(0.06, 0.0) is None
    assert lanes_with(0.16, 0.06).lane_for(None, 0.0) is None


def test_a_near_tie_keeps_the_child_in_a_lane_of_its_own() -> None:
    # behind the 0.1: 0.16 either way against 0.16 + 0.05 shared: a clear gain, taken;
    # with a margin larger than the gain (0.05 of 0.1 seconds), not
    assert lanes_with(0.16, 0.06).lane_for(0.1, 0.0) == 1
    lanes = lanes_with(0.16, 0.06)
    lanes.margin = 0.6
    assert lanes.lane_for(0.1, 0.0) is None


def test_lanes_run_the_long_child_alone_and_the_short_ones_in_turn_whatever_the_order() -> None:
    """In a real pool of three threads (one per child, as the evaluator has for two jobs),
    with the lengths known: the long child drafted second or third still gets a core of its
    own, and the second short child starts only when the first has ended."""
    seconds = {"short": 0.05, "long": 0.3}

    def child(i: int, kind: str, spans: dict[int, tuple[float, float]]) -> Any:
        def task() -> int:
            began = time.perf_counter()
            time.sleep(seconds[kind])
            spans[i] = (began, time.perf_counter())
            return i
        return task

    for kinds in (["short", "long", "short"], ["short", "short", "long"], ["long", "short", "short"]):
        spans: dict[int, tuple[float, float]] = {}
        with ThreadPoolExecutor(3) as pool:
            futures = Lanes(pool, 2, dict(seconds)).run(
                (child(i, kind, spans), kind) for i, kind in enumerate(kinds))
            assert [future.result() for future in futures] == [0, 1, 2]
        short = sorted((spans[i] for i, kind in enumerate(kinds) if kind == "short"))
        assert short[1][0] >= short[0][1], kinds  # the second short child waited for the first
        long_ = next(spans[i] for i, kind in enumerate(kinds) if kind == "long")
        assert long_[0] < short[0][1], kinds  # the long child did not wait


def test_a_child_whose_length_is_not_known_starts_as_it_comes() -> None:
    """Only children whose length is known are held until all are drafted: the others (the
    first population, the first children of a kind) start as soon as they are drafted."""
    started = threading.Event()

    def children() -> Iterator[tuple[Callable[[], object], str]]:
        yield (lambda: None), "short"
        yield started.set, "new"
        assert started.wait(5), "the child of a kind not measured yet was held back"
        yield (lambda: None), "short"

    with ThreadPoolExecutor(3) as pool:
        for future in Lanes(pool, 2, {"short": 0.05}).run(children()):
            future.result()


def test_lanes_learn_each_kinds_cpu_seconds() -> None:
    seconds: dict[str, float] = {}

    def spin() -> None:
        end = time.thread_time() + 0.02
        while time.thread_time() < end:
            pass

    with ThreadPoolExecutor(2) as pool:
        for future in Lanes(pool, 2, seconds).run([(spin, "busy"), (lambda: time.sleep(0.05), "idle")]):
            future.result()
    assert seconds["busy"] >= 0.02
    assert seconds["idle"] < 0.02  # asleep costs no CPU: it is the work that is measured


@pytest.fixture(scope="module")
def annealed() -> tuple[Problem, ToolChoice]:
    """A problem big enough that improvement anneals half its children."""
    problem = generate_problem(600, 1)
    choice = ToolChoice(problem)
    assert choice.anneal_evals > 0
    return problem, choice


def test_a_childs_kind_is_what_its_improvement_does_and_leaves_its_stream_alone(
        annealed: tuple[Problem, ToolChoice]) -> None:
    problem, choice = annealed
    plan = choice.greedy_initial(problem, np.random.default_rng(0))
    done: list[str] = []
    anneal, climb = choice.anneal, choice.climb

    def annealing(*args: Any, **kwargs: Any) -> Any:
        done.append("anneal")
        return anneal(*args, **kwargs)

    def climbing(*args: Any, **kwargs: Any) -> Any:
        done.append("climb")
        return climb(*args, **kwargs)

    instance = copy.copy(choice)
    instance.anneal, instance.climb = annealing, climbing  # type: ignore[method-assign]
    kinds = []
    for seed in range(12):
        rng = np.random.default_rng(seed)
        before = copy.deepcopy(rng.bit_generator.state)
        kinds.append(instance.kind(problem, plan, rng))
        assert rng.bit_generator.state == before
        ToolChoice.improve(instance, problem, plan, rng)
    assert kinds == done
    assert {"anneal", "climb"} <= set(kinds)
    assert instance.kind(problem, None, np.random.default_rng(0)) == "initial"


def test_children_chained_in_lanes_make_the_same_events(annealed: tuple[Problem, ToolChoice],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Lengths seeded so that lanes chain children from the first batch on: the events equal
    those of one job (each child developed in turn, in this thread)."""
    problem, _ = annealed
    operators = default_operators(problem)
    options = SearchOptions(population=6, keep=3, generations=3, seed=2)
    chained: list[int] = []

    class Recording(Lanes):
        def lane_for(self, estimate: float | None, now: float) -> int | None:
            lane = super().lane_for(estimate, now)
            if lane is not None:
                chained.append(lane)
            return lane

    def events(jobs: int) -> list[dict[str, Any]]:
        fitnesses = resolve_all(OBJECTIVES)
        seen: list[dict[str, Any]] = []
        evaluator = Evaluator(problem, fitnesses, jobs=jobs, backend="loky",
                              min_parallel_seconds=1.0, pool_after_seconds=60.0,
                              development=Development.of(operators))
        evaluator.seconds.update({"initial": 10.0, "climb": 10.0, "anneal": 0.1})
        with evaluator:
            Search(problem, operators=operators, evaluator=evaluator,
                   ranking=Ranking.of(fitnesses), options=options, on_event=seen.append,
                   developer=evaluator).run()
        return [{k: v for k, v in e.items() if k not in ("elapsed", "evals_per_sec")} for e in seen]

    monkeypatch.setattr(evaluator_module, "Lanes", Recording)
    threaded = events(2)
    assert chained, "no child was chained: the test did not exercise the lanes"
    assert threaded == events(1)
