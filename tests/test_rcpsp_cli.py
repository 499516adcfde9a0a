"""``evolve bench psplib``: table, JSON shape, clean errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve.cli.bench import bench
from evolve.problems.rcpsp.bench import PUBLISHED, instance_seed, run_psplib_benchmark, run_psplib_grid
from evolve.problems.rcpsp.check import schedule_violations
from evolve.problems.rcpsp.instance import load_instance, lower_bound, psplib_dir
from evolve.problems.rcpsp.search import solve

DATA = psplib_dir()
needs_data = pytest.mark.skipif(not (DATA / "j30").is_dir(), reason=f"PSPLIB data not found at {DATA}")


def bench_args(jobs: int, json_path: Path) -> list[str]:
    """``bench psplib`` on the first 3 j30 instances, 200 schedules, seed 3."""
    return [
        "psplib",
        "--set",
        "j30",
        "--schedules",
        "200",
        "--instances",
        "3",
        "--jobs",
        str(jobs),
        "--seed",
        "3",
        "--json",
        str(json_path),
    ]


@needs_data
def test_json_output_shape(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    res = CliRunner().invoke(bench, bench_args(jobs=1, json_path=out))
    assert res.exit_code == 0, res.output
    assert "| j30 | 3 | 3 evenly spread | 200 |" in res.output
    assert "seeds 3;" in res.output and "optimum" in res.output
    doc = json.loads(out.read_text())
    records = doc["records"]
    assert [r["instance"] for r in records] == ["j301_1", "j3025_1", "j3048_10"]
    for r in records:
        assert {"instance", "makespan", "starts", "schedules", "seconds", "seed", "budget"} <= r.keys()
        inst = load_instance(DATA / "j30" / f"{r['instance']}.sm")
        assert len(r["starts"]) == inst.n == 32
        assert schedule_violations(inst, r["starts"]) == []
        assert r["makespan"] == max(s + int(d) for s, d in zip(r["starts"], inst.durations))
        assert r["schedules"] <= 200 and r["seed"] == 3 and r["budget"] == 200
    again = tmp_path / "again.json"
    assert CliRunner().invoke(bench, bench_args(jobs=2, json_path=again)).exit_code == 0
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in records]
    twice = json.loads(again.read_text())["records"]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in twice]


@needs_data
def test_budgets_and_seeds_give_one_row_each_with_the_mean(tmp_path: Path) -> None:
    out = tmp_path / "grid.json"
    res = CliRunner().invoke(bench, ["psplib", "--set", "j30,j60", "--schedules", "60,150",
                                     "--schedules", "150", "--seeds", "0,1", "--every", "240",
                                     "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert [(r["set_name"], r["schedules"]) for r in doc["rows"]] == [
        ("j30", 60), ("j30", 150), ("j60", 60), ("j60", 150)]
    assert len(doc["runs"]) == 8 and len(doc["records"]) == 16  # 2 instances x 2 budgets x 2 seeds x 2 sets
    for row in doc["rows"]:
        assert row["seeds"] == [0, 1] and row["sample"] == "every 240th" and row["instances"] == 2
        assert row["deviation_pct"] == pytest.approx(sum(row["per_seed_pct"]) / 2)
        assert row["min_pct"] <= row["deviation_pct"] <= row["max_pct"]
    # the grid's seed-0 figures are the single run's figures
    single = run_psplib_grid(["j60"], budgets=[150], seeds=[0], every=240).runs[0]
    assert doc["rows"][3]["per_seed_pct"][0] == pytest.approx(single.deviation_pct)
    _, first = run_psplib_benchmark("j60", schedules=150, seed=0, instances=1)
    assert first.instances == 1 and first.seed == 0
    for r in doc["records"]:
        assert r["schedules"] <= r["budget"]
        # the search stops early only at the bound it computed itself, never at the table's value
        inst = load_instance(DATA / r["set_name"] / f"{r['instance']}.sm")
        assert r["stop_bound"] == lower_bound(inst)
        if r["schedules"] < r["budget"]:
            assert r["makespan"] <= r["stop_bound"]
    # the issue's table: one line per set, one column per budget
    assert "| j30 | 2 (every 240th) | 0,1 |" in res.output
    assert "published (Debels & Vanhoucke 2007)" in res.output


def test_bad_lists_and_conflicting_options_are_usage_errors() -> None:
    for args in (["--schedules", "1000,x"], ["--schedules", "0"], ["--seed", "1", "--seeds", "1,2"],
                 ["--instances", "3", "--every", "4"], ["--set", "j30,j31"]):
        res = CliRunner().invoke(bench, ["psplib", *args])
        assert res.exit_code == 2, (args, res.output)
        assert "Traceback" not in res.output


def test_published_figures_are_the_issue_s() -> None:
    assert PUBLISHED[("j120", 1000)] == 33.55 and PUBLISHED[("j60", 50000)] == 10.68
    assert PUBLISHED[("j30", 5000)] == 0.04


def test_unknown_set_is_a_usage_error() -> None:
    res = CliRunner().invoke(bench, ["psplib", "--set", "j31"])
    assert res.exit_code == 2
    assert "unknown set 'j31'" in res.output
    assert "Traceback" not in res.output


def test_missing_data_dir_is_a_clean_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOLVE_PSPLIB_DIR", str(tmp_path / "nowhere"))
    res = CliRunner().invoke(bench, ["psplib", "--set", "j30", "--instances", "1"])
    assert res.exit_code == 1
    assert "PSPLIB data not found" in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)


@needs_data
def test_json_holds_the_settings_and_the_default_search_result(tmp_path: Path) -> None:
    out = tmp_path / "run.json"
    res = CliRunner().invoke(bench, ["psplib", "--set", "j60", "--schedules", "120", "--instances", "1",
                                     "--json", str(out)])
    assert res.exit_code == 0, res.output
    assert "default settings" in res.output
    doc = json.loads(out.read_text())
    assert doc["params"]["crossover"] == "block"
    inst = load_instance(DATA / "j60" / "j601_1.sm")
    same = solve(inst, schedules=120, seed=instance_seed(0, "j601_1"))
    assert doc["records"][0]["makespan"] == same.makespan and doc["records"][0]["starts"] == list(same.starts)


@needs_data
def test_the_bench_audits_every_schedule_before_counting_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """A search that lies about its schedule stops the benchmark with the instance's name."""
    import evolve.problems.rcpsp.bench as bench_mod

    inst = load_instance(DATA / "j30" / "j301_1.sm")
    honest = solve(inst, schedules=100, seed=0)
    bench_mod.audit_schedule(inst, honest.starts, honest.makespan)  # the real result passes
    with pytest.raises(bench_mod.InfeasibleSchedule, match="reported makespan"):
        bench_mod.audit_schedule(inst, honest.starts, honest.makespan - 1)
    squeezed = honest.starts.copy()
    squeezed[1:] = 0  # everything at time 0: precedence and capacity broken
    with pytest.raises(bench_mod.InfeasibleSchedule, match=r"j301_1.*before predecessor"):
        bench_mod.audit_schedule(inst, squeezed, int((squeezed + inst.durations).max()))

    real_solve = solve

    def lying_solve(*args: object, **kwargs: object) -> object:
        res = real_solve(*args, **kwargs)  # type: ignore[arg-type]
        return dataclasses.replace(res, makespan=res.makespan - 1)

    monkeypatch.setattr(bench_mod, "solve", lying_solve)
    with pytest.raises(bench_mod.InfeasibleSchedule, match="reported makespan"):
        run_psplib_grid(["j30"], budgets=[50], seeds=[0], instances=1, jobs=1)
