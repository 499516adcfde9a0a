"""Scale-out through joblib's backends gives the same result as the local pool."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evolve import SearchOptions, load_problem, run_search
from fitness import resolve_all

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

REFUND = HERE.parent / "examples" / "refund.yaml"
# A plugin objective keeps every evaluation in the workers (isolation), so the backend is really used.
OBJECTIVES = ["validity", "completeness", "makespan", "plugins.faulty:tasks"]


def run(backend: str, tmp: Path, address: str | None = None) -> tuple[bytes, bytes, dict[str, object]]:
    options = SearchOptions(population=8, keep=4, generations=4, seed=5, jobs=2, backend=backend,
                            scheduler_address=address)
    outcome = run_search(load_problem(REFUND), options=options, fitnesses=resolve_all(OBJECTIVES),
                         out_dir=tmp / backend)
    folder = tmp / backend
    return (folder / "events.jsonl").read_bytes(), (folder / "best.json").read_bytes(), outcome.summary


def test_dask_local_cluster_matches_loky(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    loky_events, loky_best, _ = run("loky", tmp_path)
    dask_events, dask_best, summary = run("dask", tmp_path)
    assert dask_events == loky_events
    assert dask_best == loky_best
    assert summary["options"]["backend"] == "dask"  # type: ignore[index]


def test_dask_scheduler_address(tmp_path: Path) -> None:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        events, best, _ = run("dask", tmp_path, address=cluster.scheduler_address)
    loky_events, loky_best, _ = run("loky", tmp_path)
    assert events == loky_events and best == loky_best


def test_threading_matches_loky(tmp_path: Path) -> None:
    assert run("threading", tmp_path)[:2] == run("loky", tmp_path)[:2]


def test_ray_matches_loky(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    assert run("ray", tmp_path)[:2] == run("loky", tmp_path)[:2]


def test_unknown_backend_is_a_clear_error(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from evolve.cli.main import cli

    result = CliRunner().invoke(cli, ["run", str(REFUND), "--backend", "dask", "--scheduler-address",
                                      "tcp://127.0.0.1:1", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert "Traceback" not in result.output
