"""Reading a real run folder: lineage, the replayed final population and the best plan's timeline."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from evolve.fitness.registry import resolve_all
from evolve.model.problem import Problem
from evolve.report.data import RunError, load_run
from evolve.report.history import describe_patch, final_population, lineage, ranking_from
from evolve.report.timeline import usage_steps
from evolve.run.folder import RunOutcome, run_search
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking


@pytest.fixture(scope="module")
def outcome(refund: Problem, tmp_path_factory: pytest.TempPathFactory) -> RunOutcome:
    folder = tmp_path_factory.mktemp("report-data") / "run"
    return run_search(refund, options=SearchOptions(generations=12, seed=3, jobs=1), out_dir=folder)


def test_reads_the_folder_and_its_problem_copy(outcome: RunOutcome) -> None:
    run = load_run(outcome.out_dir)
    assert run.problem is not None and run.problem.name == "refund-8472"
    assert run.best_id == outcome.result.best.id
    assert [g.generation for g in run.generations] == list(range(13))
    assert run.objectives == ["validity", "completeness", "makespan", "minimality"]
    assert len(run.candidates) == outcome.result.evaluations + outcome.result.cache_hits


def test_lineage_runs_from_generation_zero_to_the_best(outcome: RunOutcome) -> None:
    run = load_run(outcome.out_dir)
    chain = lineage(run)
    assert chain[-1].id == outcome.result.best.id
    assert chain[0].parents == () and chain[0].generation == 0
    for parent, child in pairwise(chain):
        assert child.parents[0] == parent.id
        assert child.generation > parent.generation


def test_replayed_population_is_the_engines(outcome: RunOutcome) -> None:
    population = final_population(load_run(outcome.out_dir))
    assert population.verified
    assert [c.id for c in population.members] == [c.id for c in outcome.result.population]


def test_a_logged_population_wins_over_the_replay(outcome: RunOutcome, tmp_path: Path) -> None:
    copy = tmp_path / "run"
    copy.mkdir()
    for name in ("best.json", "summary.json", "problem.json"):
        (copy / name).write_bytes((outcome.out_dir / name).read_bytes())
    lines = (outcome.out_dir / "events.jsonl").read_text().splitlines()
    chosen = [c.id for c in outcome.result.population][::-1]
    last = max(i for i, line in enumerate(lines) if '"generation_end"' in line)
    event = json.loads(lines[last])
    lines[last] = json.dumps({**event, "population": chosen})
    (copy / "events.jsonl").write_text("\n".join(lines) + "\n")
    assert [c.id for c in final_population(load_run(copy)).members] == chosen


def test_timeline_matches_the_stored_schedule(outcome: RunOutcome, tmp_path: Path) -> None:
    run = load_run(outcome.out_dir)
    timeline = run.timeline()
    stored = json.loads((outcome.out_dir / "best.json").read_text())["schedule"]
    assert {b.id: (b.start, b.finish) for b in timeline.bars} == {
        tid: (s["start"], s["finish"]) for tid, s in stored.items()}
    assert [b.start for b in timeline.bars] == sorted(b.start for b in timeline.bars)
    for usage in timeline.usage:
        if usage.limit is not None:
            assert usage.peak <= usage.limit
    # Without the problem the stored times are drawn, and only running tasks can be counted.
    (tmp_path / "bare").mkdir()
    for name in ("best.json", "summary.json", "events.jsonl"):
        (tmp_path / "bare" / name).write_bytes((outcome.out_dir / name).read_bytes())
    bare = load_run(tmp_path / "bare")
    assert bare.problem is None
    plain = bare.timeline()
    assert [(b.id, b.start, b.finish, b.critical) for b in plain.bars] == [
        (b.id, b.start, b.finish, b.critical) for b in timeline.bars]
    assert [u.name for u in plain.usage] == ["slots"]
    assert plain.usage[0].steps == timeline.usage[0].steps


def test_usage_steps_count_what_runs() -> None:
    spans = {"a": (0.0, 10.0), "b": (5.0, 15.0), "c": (10.0, 10.0), "d": (15.0, 20.0)}
    steps = usage_steps(spans, {"a": 1.0, "b": 2.0, "c": 5.0, "d": 1.0})
    assert steps == ((0.0, 1.0), (5.0, 3.0), (10.0, 2.0), (15.0, 1.0), (20.0, 0.0))


@pytest.mark.parametrize("weights", [None, [1.0, -2.0, 0.001, 3.5]])
def test_ranking_round_trips_through_its_description(weights: list[float] | None) -> None:
    ranking = Ranking.of(resolve_all(["validity", "completeness", "makespan", "minimality"]), weights)
    assert ranking_from(ranking.describe()) == ranking
    assert ranking_from("something else") is None


def test_patches_read_as_short_lines() -> None:
    patch = {"remove": ["t4"], "add": [{"id": "t9", "tool": "x.y", "deps": ["t1", "t2"]}],
             "update": [{"id": "t3", "tool": "z", "when": None}], "priority": ["t1", "t9"]}
    assert describe_patch(patch) == ["+ t9 x.y after t1, t2", "- t4", "~ t3 tool=z when=(removed)",
                                     "priority t1 t9"]


def test_not_a_run_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(RunError, match=r"summary\.json: missing"):
        load_run(tmp_path)
    with pytest.raises(RunError, match="no such directory"):
        load_run(tmp_path / "nope")
