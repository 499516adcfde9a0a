"""Conformance: every algorithm of the engine keeps the same promises (in the spirit of Optuna's
sampler tests). Same results for any number of workers, a resumed run equals an uninterrupted
one, budgets are respected, and the events follow one schema."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from evolve import SearchOptions, load_problem, run_search
from evolve.fitness.registry import resolve_all
from evolve.model.errors import UsageError
from evolve.model.plan import Plan, plan_hash
from evolve.model.problem import Problem
from evolve.problems import default_operators, family_of
from evolve.problems.htn import HtnChoices, HtnProblem
from evolve.problems.rcpsp.instance import load_instance, psplib_dir
from evolve.problems.rcpsp.operators import ACTIVITY_LIST
from evolve.problems.rcpsp.problem import is_integer_rcpsp
from evolve.problems.rcpsp.search import solve
from evolve.problems.synthetic import generate_problem
from evolve.run import checkpoint
from evolve.run.evaluator import Evaluator
from evolve.run.state_codec import decode
from evolve.search.develop import Development, InProcess, Undeveloped
from evolve.search.family import Request
from evolve.search.loop import Search
from evolve.search.plans import Plans
from evolve.search.ranking import Ranking
from evolve.search.representation import child_rng

ROOT = Path(__file__).resolve().parents[1]
J30 = psplib_dir() / "j30" / "j301_1.sm"
needs_psplib = pytest.mark.skipif(not J30.exists(), reason=f"PSPLIB data not found at {J30}")


def plan_problem() -> Problem:
    return generate_problem(80, seed=4)


def rcpsp_problem() -> Problem:
    return load_problem(J30)


def htn_problem() -> Problem:
    return load_problem(ROOT / "examples" / "htn" / "ladder.yaml")


CASES = [
    pytest.param(plan_problem, {"population": 6, "keep": 3}, id="plan-ga"),
    pytest.param(rcpsp_problem, {"max_evaluations": 3000}, id="activity-list-ga", marks=needs_psplib),
    pytest.param(htn_problem, {"population": 6, "keep": 3}, id="htn-decompositions"),
]


def run(problem: Problem, out: Path, resume: bool = False, **options: Any) -> dict[str, Any]:
    run_search(problem, options=SearchOptions(seed=3, **options), out_dir=out, resume=resume)
    return {name: (out / name).read_bytes() for name in ("best.json", "events.jsonl")}


EVENT_KEYS = {
    "generation_start": {"generation"},
    "candidate": {"id", "generation", "parents", "operator", "hash", "patch", "values", "feasible"},
    "generation_end": {"generation", "best", "evaluations", "best_values", "population"},
    "stop": {"generation", "reason"},
}


@pytest.mark.parametrize(("make", "options"), CASES)
def test_same_results_for_any_number_of_workers(make: Any, options: dict[str, Any], tmp_path: Path) -> None:
    problem = make()
    one = run(problem, tmp_path / "one", jobs=1, generations=4, **options)
    two = run(problem, tmp_path / "two", jobs=2, generations=4, **options)
    assert one == two


@pytest.mark.parametrize(("make", "options"), CASES)
def test_resume_equals_an_uninterrupted_run(make: Any, options: dict[str, Any], tmp_path: Path) -> None:
    problem = make()
    whole = run(problem, tmp_path / "whole", jobs=1, generations=6, **options)
    run(problem, tmp_path / "parts", jobs=1, generations=2, **options)
    resumed = run(problem, tmp_path / "parts", resume=True, jobs=1, generations=6, **options)
    assert resumed == whole


@pytest.mark.parametrize(("make", "options"), CASES)
def test_a_stop_request_ends_the_run_resumably(make: Any, options: dict[str, Any], tmp_path: Path) -> None:
    """``run_search(stop=...)`` (what a first Ctrl-C uses) ends every algorithm at the end of the
    generation it is asked after, checkpointed there, and resuming it ends as never stopped."""
    problem = make()
    whole = run(problem, tmp_path / "whole", jobs=1, generations=6, **options)
    asked: list[int] = []

    def stop() -> str | None:
        asked.append(len(asked))
        return "asked to stop" if len(asked) == 3 else None

    outcome = run_search(problem, options=SearchOptions(seed=3, jobs=1, generations=6, **options),
                         out_dir=tmp_path / "parts", stop=stop)
    assert outcome.summary["stop_reason"] == "asked to stop"
    assert outcome.summary["generations"] == 2 == checkpoint.checkpointed_generation(tmp_path / "parts")
    resumed = run(problem, tmp_path / "parts", resume=True, jobs=1, generations=6, **options)
    assert resumed == whole


@pytest.mark.parametrize(("make", "options"), CASES)
def test_events_follow_the_schema(make: Any, options: dict[str, Any], tmp_path: Path) -> None:
    problem = make()
    run(problem, tmp_path / "run", jobs=1, generations=3, **options)
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    for event in events:
        assert EVENT_KEYS[event["event"]] <= set(event), event
    ends = [e["generation"] for e in events if e["event"] == "generation_end"]
    assert ends == list(range(len(ends))) and len(ends) >= 2
    assert events[-1]["event"] == "stop"
    ids = {e["id"] for e in events if e["event"] == "candidate"}
    assert all(e["best"] in ids for e in events if e["event"] == "generation_end")


def test_plan_ga_respects_an_evaluation_budget(tmp_path: Path) -> None:
    outcome = run_search(plan_problem(), options=SearchOptions(seed=1, jobs=1, generations=10_000,
                                                               max_evaluations=30),
                         out_dir=tmp_path / "run")
    assert outcome.summary["stop_reason"].startswith("max-evaluations")
    assert 30 <= outcome.summary["evaluations"] < 30 + 6  # checked at whole generations


@needs_psplib
def test_activity_list_ga_is_the_rcpsp_ga_at_the_same_schedule_budget(tmp_path: Path) -> None:
    problem = rcpsp_problem()
    assert is_integer_rcpsp(problem)
    outcome = run_search(problem, options=SearchOptions(seed=5, jobs=1, generations=10_000,
                                                        max_evaluations=2500), out_dir=tmp_path / "run")
    direct = solve(load_instance(J30), schedules=2500, seed=5)
    assert outcome.summary["evaluations"] == direct.schedules_used <= 2500
    assert outcome.result.best.evaluation.values["makespan"] == direct.makespan
    best = json.loads((tmp_path / "run" / "best.json").read_text())
    assert max(v["finish"] for v in best["schedule"].values()) == direct.makespan


@needs_psplib
def test_activity_list_ga_stops_at_its_own_bound(tmp_path: Path) -> None:
    # j301_7's optimum is its critical-path bound (60): the GA reaches it and stops by itself
    outcome = run_search(load_problem(J30.with_name("j301_7.sm")),
                         options=SearchOptions(seed=0, jobs=1, generations=10_000), out_dir=tmp_path / "run")
    assert outcome.summary["stop_reason"].startswith("bound:")
    assert outcome.result.best.evaluation.values["makespan"] == 60


@pytest.mark.parametrize(("make", "options"), CASES)
def test_the_state_a_checkpoint_gets_is_a_snapshot(make: Any, options: dict[str, Any], tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint encodes an algorithm's state in a chore while the search goes on, so the
    state must be a snapshot the next generations leave alone: every state checkpointed in a run
    encodes, at the run's end, to what it encoded to when it was handed over. Fails for an
    algorithm whose ``state()`` hands over containers or arrays it changes in place (checked by
    removing each algorithm's copies)."""
    handed: list[tuple[dict[str, Any], Any]] = []
    save = checkpoint.Writer.save

    def recording(self: checkpoint.Writer, state: dict[str, Any], *args: Any) -> None:
        handed.append((state, checkpoint.encode_state(state)))
        save(self, state, *args)

    monkeypatch.setattr(checkpoint.Writer, "save", recording)
    run_search(make(), options=SearchOptions(seed=3, jobs=1, generations=6, **options),
               out_dir=tmp_path / "run", checkpoint_seconds=0)
    assert len(handed) >= 6
    for state, at_once in handed:
        assert checkpoint.encode_state(state) == at_once


def plan_representation() -> tuple[Any, Any]:
    problem = plan_problem()
    operators = default_operators(problem)
    return Plans(problem, operators), InProcess(problem, Development.of(operators)).develop


def activity_list_representation() -> tuple[Any, Any]:
    problem = rcpsp_problem()
    return Plans(problem, ACTIVITY_LIST), InProcess(problem, Development.of(ACTIVITY_LIST)).develop


def htn_representation() -> tuple[Any, Any]:
    problem = htn_problem()
    assert isinstance(problem, HtnProblem)
    return HtnChoices(problem), Undeveloped().develop


REPRESENTATIONS = [
    pytest.param(plan_representation, id="plans"),
    pytest.param(activity_list_representation, id="activity-lists", marks=needs_psplib),
    pytest.param(htn_representation, id="htn-method-choices"),
]


@pytest.mark.parametrize("make", REPRESENTATIONS)
def test_every_representation_keeps_the_protocol(make: Any) -> None:
    """What the one loop asks of a representation, each step a plain value: a first population
    of plans, variations that name their operator, a decoding that makes a plan, the same for
    the same random stream, and a state that survives a checkpoint's encoding."""
    rep, develop = make()
    first = rep.first(4, 3, develop)
    assert 1 <= len(first) <= 4 and all(isinstance(child.plan, Plan) for child in first)
    genomes = [child.genome if child.genome is not None else child.plan for child in first]
    rng = child_rng(3, 1, 0)
    changed = rep.mutate(genomes[0], rng)
    assert changed is None or isinstance(changed[1], str)
    if rep.crossover_rate is not None and len(genomes) > 1:
        mixed = rep.crossover(genomes[0], genomes[1], rng)
        assert mixed is None or isinstance(mixed[1], str)
    genome = changed[0] if changed is not None else genomes[0]
    one = rep.decode(genome, child_rng(3, 1, 1), ("c0",), "test")
    two = rep.decode(genome, child_rng(3, 1, 1), ("c0",), "test")
    assert isinstance(one.plan, Plan) and one.parents == ("c0",) and one.operator == "test"
    assert plan_hash(one.plan) == plan_hash(two.plan)
    state = checkpoint.encode_state({"representation": rep.state()})
    rep.restore(decode(state)["representation"])
    assert checkpoint.encode_state({"representation": rep.state()}) == state
    # past its deadline, a representation that honours one (HTN) says so and decodes no plan;
    # one that does not (plans) goes on as before
    rep.stop_at(time.perf_counter() - 1.0)
    late = rep.decode(genome, child_rng(3, 1, 1), ("c0",), "test")
    assert rep.out_of_time() == isinstance(rep, HtnChoices) == (late.plan is None)


def test_each_problem_goes_to_its_family() -> None:
    """run_search asks the registry, not the problem's type: HTN domains to their method choices,
    integer projects to the activity-list GA unless operators are asked for, the rest to plans."""
    assert family_of(Request(htn_problem())).name == "htn"
    assert family_of(Request(plan_problem())).name == "plans"
    with pytest.raises(UsageError, match="seed plans"):
        family_of(Request(htn_problem(), seeds=(Plan(),)))
    if J30.exists():
        assert family_of(Request(rcpsp_problem())).name == "activity-list"
        assert family_of(Request(rcpsp_problem(), operators=ACTIVITY_LIST)).name == "plans"


class Hurried(Plans):
    """Plans whose deadline comes once ``allowed`` children of a generation have been drafted."""

    def __init__(self, problem: Problem, allowed: int) -> None:
        super().__init__(problem, default_operators(problem))
        self.allowed = allowed
        self.asked = 0
        self.deadlines: list[float] = []

    def stop_at(self, deadline: float) -> None:
        self.deadlines.append(deadline)

    def out_of_time(self) -> bool:
        self.asked += 1
        return self.asked > self.allowed


def test_the_loop_drafts_no_more_children_once_the_representation_is_out_of_time() -> None:
    """The loop gives the representation the run's deadline once, when the search's clock starts,
    and asks before drafting each child whether it has come: the children drafted before it make
    the generation (survivors and 2 children here, of 6), the rest are never drafted."""
    problem = plan_problem()
    rep = Hurried(problem, allowed=2)
    fitnesses = resolve_all(["validity", "completeness", "makespan", "minimality"])
    events: list[dict[str, Any]] = []
    options = SearchOptions(population=6, keep=3, seed=3, max_seconds=3600)
    with Evaluator(problem, fitnesses, jobs=1) as evaluator:
        search = Search(problem, representation=rep, operators=rep.operators, evaluator=evaluator,
                        ranking=Ranking.of(fitnesses), options=options, on_event=events.append)
        began = time.perf_counter()
        search.start()
        search.step()
    assert len(rep.deadlines) == 1 and began + 3599 < rep.deadlines[0] < time.perf_counter() + 3600
    children = [e for e in events if e["event"] == "candidate" and e["generation"] == 1]
    assert len(children) == 2 and rep.asked == 3
    assert len(search.population) == 3 + 2
