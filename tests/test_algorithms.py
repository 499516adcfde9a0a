"""Conformance: every algorithm of the engine keeps the same promises (in the spirit of Optuna's
sampler tests). Same results for any number of workers, a resumed run equals an uninterrupted
one, budgets are respected, and the events follow one schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evolve import SearchOptions, load_problem, run_search
from evolve.model.problem import Problem
from evolve.problems.rcpsp.instance import load_instance, psplib_dir
from evolve.problems.rcpsp.problem import is_integer_rcpsp
from evolve.problems.rcpsp.search import solve
from evolve.problems.synthetic import generate_problem
from evolve.run import checkpoint

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
