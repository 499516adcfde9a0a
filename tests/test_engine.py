"""The search loop: byte-identical results across --jobs, feasible plans, complete starting
populations on large problems, lineage on every candidate, and the evaluation cache."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evolve.fitness.base import Context, as_fitness, fitness
from evolve.fitness.registry import resolve_all
from evolve.model.patch import apply_patch
from evolve.model.plan import Plan, plan_hash
from evolve.model.plan_file import load_plan
from evolve.model.problem import Problem
from evolve.model.validate import validate
from evolve.problems import load_problem
from evolve.problems.synthetic import generate_problem
from evolve.run.evaluator import Evaluator
from evolve.run.folder import run_search
from evolve.search.algorithm import Candidate
from evolve.search.chaining import construct
from evolve.search.loop import Offspring, Search
from evolve.search.operators import STRUCTURAL
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking

OBJECTIVES = ("validity", "completeness", "makespan", "minimality")
OPERATOR_NAMES = {fn.__name__ for fn, _ in STRUCTURAL.mutations} | {
    fn.__name__ for fn, _ in STRUCTURAL.crossovers}


@fitness(direction="min", low=0)
def task_count(problem: Problem, plan: Plan, context: Context) -> float:
    """A plugin objective: plugins are always evaluated in worker processes when jobs > 1."""
    return float(len(plan.tasks))


def read_events(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("plugin", [False, True], ids=["builtins", "with-plugin"])
def test_same_seed_gives_byte_identical_results_for_any_jobs(refund: Problem, tmp_path: Path,
                                                             plugin: bool) -> None:
    fitnesses = resolve_all(OBJECTIVES)
    if plugin:  # forces the pool to do the work, not the in-process fast path
        fitnesses.append(as_fitness(task_count, source="tests.test_engine:task_count"))
    outs = []
    for jobs in (1, 2):
        options = SearchOptions(population=10, keep=4, generations=6, seed=11, jobs=jobs)
        outcome = run_search(refund, options=options, fitnesses=fitnesses, out_dir=tmp_path / f"j{jobs}")
        assert outcome.summary["options"]["jobs"] == jobs
        outs.append(outcome.out_dir)
    for name in ("best.json", "events.jsonl"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    assert len(read_events(outs[0] / "events.jsonl")) > 6 * 6


def test_different_seeds_explore_differently(refund: Problem, tmp_path: Path) -> None:
    runs = []
    for seed in (1, 2):
        options = SearchOptions(population=8, keep=3, generations=4, seed=seed, jobs=1)
        runs.append(run_search(refund, options=options, out_dir=tmp_path / str(seed)).out_dir)
    assert (runs[0] / "events.jsonl").read_bytes() != (runs[1] / "events.jsonl").read_bytes()


def test_refund_search_finds_a_feasible_plan(refund: Problem, run_dir: Path) -> None:
    outcome = run_search(refund, options=SearchOptions(generations=12, jobs=1), out_dir=run_dir)
    best = outcome.summary["best"]
    assert best["feasible"] is True
    assert best["values"]["validity"] == 0 and best["values"]["completeness"] == 1
    plan = load_plan(run_dir / "best.json")
    assert validate(refund, plan) == []
    written = json.loads((run_dir / "best.json").read_text())
    assert set(written["schedule"]) == set(plan.ids())
    assert max(s["finish"] for s in written["schedule"].values()) == best["makespan"]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["evaluations"] == outcome.result.evaluations > 0
    assert summary["options"]["generations"] == 12


def test_pipeline_example_search_finds_a_feasible_plan(pipeline_path: Path, run_dir: Path) -> None:
    """What the README promises for the larger example: `evolve run examples/pipeline.yaml
    --generations 12` ends with a feasible plan."""
    problem = load_problem(pipeline_path)
    outcome = run_search(problem, options=SearchOptions(generations=12, jobs=1), out_dir=run_dir)
    assert outcome.summary["best"]["feasible"] is True
    assert validate(problem, load_plan(run_dir / "best.json")) == []


def test_search_improves_makespan_on_refund(refund: Problem, run_dir: Path) -> None:
    """The search has something real to find: its best beats the first population's best."""
    outcome = run_search(refund, options=SearchOptions(population=12, keep=4, generations=15,
                                                       seed=3, jobs=1), out_dir=run_dir)
    history = outcome.result.history
    first = history[0]["objectives"]["makespan"]["best"]
    assert outcome.result.best.evaluation.feasible
    assert outcome.result.best.evaluation.values["makespan"] <= first
    # the best is never lost: the best key is monotone over generations
    ranking = Ranking.of(resolve_all(OBJECTIVES))
    assert ranking.key(outcome.result.best.evaluation) <= ranking.key(
        outcome.result.population[-1].evaluation)


def test_large_generated_problem_starts_from_complete_plans(tmp_path: Path) -> None:
    problem = generate_problem(200, seed=5)
    options = SearchOptions(population=8, keep=3, generations=0, seed=0, jobs=1)
    outcome = run_search(problem, options=options, out_dir=tmp_path / "run")
    population = outcome.result.population
    assert len(population) == 8
    for candidate in population:
        assert candidate.operator == "greedy_initial"
        assert candidate.evaluation.feasible, candidate.evaluation.errors
        assert candidate.evaluation.values["completeness"] == 1
    assert len({c.hash for c in population}) > 1  # randomised, not eight copies


def test_large_generated_problem_search_runs(tmp_path: Path) -> None:
    problem = generate_problem(120, seed=9)
    outcome = run_search(problem, options=SearchOptions(population=10, keep=4, generations=5,
                                                        jobs=1), out_dir=tmp_path / "run")
    assert outcome.result.best.evaluation.feasible


class Recording(Search):
    """The real engine, keeping every candidate it scores so lineage can be checked."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.all: list[Candidate] = []

    def score(self, made: Any, generation: int) -> list[Candidate]:
        out = super().score(made, generation)
        self.all.extend(out)
        return out


def make_search(problem: Problem, options: SearchOptions, events: list[dict[str, Any]] | None = None,
                cls: type[Search] = Search) -> tuple[Search, Evaluator]:
    fitnesses = resolve_all(OBJECTIVES)
    evaluator = Evaluator(problem, fitnesses, jobs=1)
    sink = events.append if events is not None else None
    search = cls(problem, operators=STRUCTURAL, evaluator=evaluator, ranking=Ranking.of(fitnesses),
                 options=options, on_event=sink)
    return search, evaluator


def run_recording(problem: Problem, events: list[dict[str, Any]] | None = None) -> Recording:
    """A finished 8-generation search (population 10, seed 2) that kept every candidate."""
    search, evaluator = make_search(problem, SearchOptions(population=10, keep=4, generations=8,
                                                           seed=2, jobs=1), events, Recording)
    with evaluator:
        search.run()
    assert isinstance(search, Recording)
    return search


def test_every_candidate_records_parents_operator_and_patch(refund: Problem) -> None:
    events: list[dict[str, Any]] = []
    search = run_recording(refund, events)
    by_id = {c.id: c for c in search.all}
    seen: set[str] = set()
    for candidate in search.all:
        if candidate.generation == 0:
            assert candidate.parents == () and candidate.operator == "construct"
            assert apply_patch(Plan(), candidate.patch).by_id() == candidate.plan.by_id()
        else:
            assert 1 <= len(candidate.parents) <= 2
            assert set(candidate.parents) <= seen  # parents are earlier candidates
            names = candidate.operator.split("+")
            assert set(names) <= OPERATOR_NAMES | {"copy"}, candidate.operator
            assert ("crossover" in names) == (len(candidate.parents) == 2)
            parent = by_id[candidate.parents[0]]
            rebuilt = apply_patch(parent.plan, candidate.patch)
            assert rebuilt.by_id() == candidate.plan.by_id(), candidate.operator
            if candidate.plan.priority is not None:
                assert rebuilt.priority == candidate.plan.priority
        assert candidate.hash == plan_hash(candidate.plan)
        seen.add(candidate.id)
    # The event stream says the same, one line per candidate.
    cand_events = [e for e in events if e["event"] == "candidate"]
    assert [e["id"] for e in cand_events] == [c.id for c in search.all]
    for event, candidate in zip(cand_events, search.all):
        assert event["parents"] == list(candidate.parents)
        assert event["operator"] == candidate.operator and event["patch"] == candidate.patch
        assert event["values"] == candidate.evaluation.values
    assert sum(e["event"] == "generation_end" for e in events) == 9


def test_patch_rebuilds_the_exact_candidate(refund: Problem) -> None:
    search = run_recording(refund)
    by_id = {c.id: c for c in search.all}
    for candidate in search.all:
        if candidate.parents:
            rebuilt = apply_patch(by_id[candidate.parents[0]].plan, candidate.patch)
            assert plan_hash(rebuilt) == candidate.hash, candidate.operator


def test_identical_candidates_are_evaluated_once(refund: Problem) -> None:
    search, evaluator = make_search(refund, SearchOptions(jobs=1))
    plan = construct(refund, np.random.default_rng(0))
    other = construct(refund, np.random.default_rng(1))
    assert plan_hash(plan) != plan_hash(other)
    with evaluator:
        first = search.score([Offspring(plan), Offspring(plan), Offspring(other)], generation=0)
        assert evaluator.evaluations == 2 and search.cache_hits == 1
        again = search.score([Offspring(Plan(tasks=plan.tasks, priority=plan.priority))], generation=1)
        assert evaluator.evaluations == 2 and search.cache_hits == 2
    assert first[0].evaluation == first[1].evaluation == again[0].evaluation
    assert [c.id for c in (*first, *again)] == ["c0", "c1", "c2", "c3"]


def test_cache_counts_in_a_run_match_the_events(refund: Problem, run_dir: Path) -> None:
    options = SearchOptions(population=12, keep=4, generations=10, seed=4, jobs=1)
    outcome = run_search(refund, options=options, out_dir=run_dir)
    events = [e for e in read_events(run_dir / "events.jsonl") if e["event"] == "candidate"]
    distinct = Counter(e["hash"] for e in events)
    assert outcome.result.evaluations == len(distinct)
    assert outcome.result.cache_hits == sum(e["cached"] for e in events) == len(events) - len(distinct)
    # the first time a hash appears it is evaluated, never later
    first_seen: set[str] = set()
    for event in events:
        assert event["cached"] == (event["hash"] in first_seen)
        first_seen.add(event["hash"])


def test_population_size_and_survivors(refund: Problem) -> None:
    events: list[dict[str, Any]] = []
    search, evaluator = make_search(refund, SearchOptions(population=7, keep=2, generations=3,
                                                          seed=1, jobs=1), events)
    with evaluator:
        result = search.run()
    per_gen = Counter(e["generation"] for e in events if e["event"] == "candidate")
    assert per_gen == {0: 7, 1: 5, 2: 5, 3: 5}
    assert len(result.population) == 7
    ranking = Ranking.of(resolve_all(OBJECTIVES))
    keys = [ranking.key(c.evaluation) for c in result.population]
    assert keys == sorted(keys)
