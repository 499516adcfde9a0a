"""``evolve plot`` with matplotlib, and the clear error when matplotlib is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from evolve.cli.report import plot
from evolve.model.problem import Problem
from evolve.report.data import load_run
from evolve.report.plots import CRITICAL, NORMAL, PlotError, convergence_figure, gantt_figure, save_plot
from evolve.run.folder import RunOutcome, run_search
from evolve.search.options import SearchOptions


@pytest.fixture(scope="module")
def outcome(refund: Problem, tmp_path_factory: pytest.TempPathFactory) -> RunOutcome:
    folder = tmp_path_factory.mktemp("report-plots") / "run"
    return run_search(refund, options=SearchOptions(generations=8, seed=4, jobs=1), out_dir=folder)


def test_gantt_has_a_bar_per_task_and_a_strip_per_capacity(outcome: RunOutcome) -> None:
    pytest.importorskip("matplotlib")
    from matplotlib.colors import to_hex

    run = load_run(outcome.out_dir)
    figure = gantt_figure(run.timeline())
    chart, *strips = figure.axes
    colours = [to_hex(p.get_facecolor()) for p in chart.patches]
    assert colours.count(CRITICAL) == len(outcome.summary["best"]["critical_path"])
    assert colours.count(CRITICAL) + colours.count(NORMAL) == len(run.plan.tasks)
    assert len(strips) == 2  # slots and llm_api


def test_convergence_has_a_point_per_generation(outcome: RunOutcome) -> None:
    pytest.importorskip("matplotlib")
    figure = convergence_figure(load_run(outcome.out_dir))
    visible = [ax for ax in figure.axes if ax.get_visible()]
    assert len(visible) == 4
    for ax in visible:
        best = [line for line in ax.get_lines() if line.get_label() == "best"]
        assert len(best) == 1 and np.asarray(best[0].get_xdata()).tolist() == list(range(9))


@pytest.mark.parametrize(("kind", "suffix", "magic"), [
    ("gantt", ".png", b"\x89PNG"), ("convergence", ".svg", b"<?xml"), ("gantt", ".svg", b"<?xml")])
def test_plot_command_writes_the_file(outcome: RunOutcome, tmp_path: Path, kind: str, suffix: str,
                                      magic: bytes) -> None:
    pytest.importorskip("matplotlib")
    out = tmp_path / f"picture{suffix}"
    done = CliRunner().invoke(plot, [str(outcome.out_dir), "--kind", kind, "--out", str(out)])
    assert done.exit_code == 0, done.output
    assert out.read_bytes().startswith(magic)


def test_wrong_suffix_is_refused(outcome: RunOutcome, tmp_path: Path) -> None:
    with pytest.raises(PlotError, match=r"\.png or \.svg"):
        save_plot(load_run(outcome.out_dir), "gantt", tmp_path / "x.jpg")


def test_missing_matplotlib_says_how_to_install_it(outcome: RunOutcome, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # makes the import fail
    done = CliRunner().invoke(plot, [str(outcome.out_dir), "--kind", "gantt",
                                     "--out", str(tmp_path / "g.png")])
    assert done.exit_code == 2
    assert "pip install 'evolve[plot]'" in done.output
    assert not (tmp_path / "g.png").exists()
