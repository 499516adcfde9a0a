"""`evolve run` on real PSPLIB files: jobs are fixed, the activity list evolves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from evolve import SearchOptions, load_problem, run_search, schedule, validate
from evolve.cli.main import cli
from evolve.problems import default_operators
from evolve.problems.rcpsp.check import schedule_violations
from evolve.problems.rcpsp.decode import serial_sgs
from evolve.problems.rcpsp.instance import load_best_known, load_instance, psplib_dir
from evolve.problems.rcpsp.operators import ACTIVITY_LIST, activity_list, sample_list
from evolve.problems.rcpsp.problem import instance_of

DATA = psplib_dir()
pytestmark = pytest.mark.skipif(not (DATA / "j30").is_dir(), reason="PSPLIB data not found")
INSTANCES = ["j301_1", "j3010_3", "j6011_2"]


def path_of(name: str) -> Path:
    """``j3010_3`` lives in ``j30/``; ``j1201_1`` in ``j120/``."""
    folder = "j120" if name.startswith("j120") else name[:3]
    return DATA / folder / f"{name}.sm"


@pytest.mark.parametrize("name", INSTANCES)
def test_problem_keeps_every_job_and_its_precedence(name: str) -> None:
    problem = load_problem(path_of(name))
    inst = load_instance(path_of(name))
    assert default_operators(problem) is ACTIVITY_LIST
    assert problem.template is not None and len(problem.template.tasks) == inst.n
    assert validate(problem, problem.template) == []
    rebuilt = instance_of(problem)
    assert np.array_equal(rebuilt.durations, inst.durations)
    assert np.array_equal(rebuilt.demands, inst.demands)
    assert np.array_equal(rebuilt.succ_idx, inst.succ_idx)


@pytest.mark.parametrize("name", INSTANCES)
def test_engine_schedule_equals_the_fast_decoder_and_is_feasible(name: str) -> None:
    problem = load_problem(path_of(name))
    inst = instance_of(problem)
    for seed in range(5):
        plan = sample_list(problem, np.random.default_rng(seed))
        sched = schedule(problem, plan)
        starts = np.array([round(sched.start[t.id]) for t in plan.tasks], dtype=np.int64)
        assert schedule_violations(inst, starts) == []
        assert sched.makespan == max(sched.finish.values())
        assert np.array_equal(starts, serial_sgs(inst, activity_list(problem, plan)))


def test_evolve_run_on_a_psplib_file_reaches_the_optimum(tmp_path: Path) -> None:
    name = "j301_1"
    result = CliRunner().invoke(
        cli,
        [
            "run",
            str(path_of(name)),
            "--generations",
            "30",
            "--population",
            "20",
            "--keep",
            "10",
            "--jobs",
            "1",
            "--out",
            str(tmp_path),
            "--no-report",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    best = json.loads((tmp_path / "best.json").read_text())
    inst = load_instance(path_of(name))
    starts = np.array([best["schedule"][f"j{j + 1}"]["start"] for j in range(inst.n)])
    starts = starts.round().astype(np.int64)
    assert schedule_violations(inst, starts) == []
    makespan = max(v["finish"] for v in best["schedule"].values())
    assert makespan == json.loads(result.output)["best"]["values"]["makespan"]
    assert makespan == load_best_known("j30")[name].best_known == 43


def test_run_is_deterministic_on_psplib(tmp_path: Path) -> None:
    problem = load_problem(path_of("j6011_2"))
    outs = []
    for jobs in (1, 2):
        options = SearchOptions(population=10, keep=5, generations=5, seed=4, jobs=jobs)
        run_search(problem, options=options, out_dir=tmp_path / str(jobs))
        outs.append((tmp_path / str(jobs) / "events.jsonl").read_bytes())
    assert outs[0] == outs[1]


def test_a_bad_instance_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.sm"
    bad.write_text("not a psplib file\n")
    result = CliRunner().invoke(cli, ["run", str(bad)])
    assert result.exit_code == 2
    assert "broken.sm: not a readable RCPSP instance" in result.output
