"""``evolve bench psplib``: table, JSON shape, clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve.cli.bench import bench
from evolve.problems.rcpsp.check import schedule_violations
from evolve.problems.rcpsp.instance import load_instance, psplib_dir

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
    assert "| j30 | 3 | 200 |" in res.output
    assert "optimum" in res.output
    records = json.loads(out.read_text())
    assert [r["instance"] for r in records] == ["j301_1", "j3025_1", "j3048_10"]
    for r in records:
        assert {"instance", "makespan", "starts", "schedules", "seconds"} <= r.keys()
        inst = load_instance(DATA / "j30" / f"{r['instance']}.sm")
        assert len(r["starts"]) == inst.n == 32
        assert schedule_violations(inst, r["starts"]) == []
        assert r["makespan"] == max(s + int(d) for s, d in zip(r["starts"], inst.durations))
        assert r["schedules"] <= 200
    again = tmp_path / "again.json"
    CliRunner().invoke(bench, bench_args(jobs=2, json_path=again))
    strip = [{k: v for k, v in r.items() if k != "seconds"} for r in records]
    assert strip == [{k: v for k, v in r.items() if k != "seconds"} for r in json.loads(again.read_text())]


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
