"""The text Gantt chart of ``evolve show``."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from evolve.cli.report import show
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Limits, Problem, Tool
from evolve.problems import load_problem
from evolve.report.terminal import CRITICAL, NORMAL, SLACK, text_gantt
from evolve.report.timeline import timeline_of
from evolve.run.folder import run_search
from evolve.search.options import SearchOptions

PROBLEM = Problem(
    tools={"fetch": Tool("fetch", 10.0), "scan": Tool("scan", 25.0), "sum": Tool("sum", 20.0),
           "log": Tool("log", 0.0)},
    criteria=("x",), limits=Limits(max_parallel=2))
PLAN = plan_from_dict({"tasks": [
    {"id": "a", "tool": "fetch"}, {"id": "b", "tool": "scan"},
    {"id": "c", "tool": "sum", "deps": ["a"]}, {"id": "d", "tool": "log", "deps": ["c"]}]})


def test_rows_scale_with_time_and_mark_the_critical_path() -> None:
    timeline = timeline_of(PROBLEM, PLAN)
    assert timeline.critical_path == ("a", "c")  # d takes no time: it ends the chain at 30 too
    text = text_gantt(timeline, width=70)
    lines = text.splitlines()
    rows = {line.split()[0]: line for line in lines[1:5]}
    assert set(rows) == {"a", "b", "c", "d"}
    bar = {tid: row[row.index("|") + 1: row.rindex("|")] for tid, row in rows.items()}
    assert len({len(b) for b in bar.values()}) == 1
    width = len(bar["b"])
    assert bar["b"].count(NORMAL) == round(width * 25 / 30)
    assert bar["b"].endswith(SLACK * (width - round(width * 25 / 30)))  # b may finish 5 later
    assert bar["a"].count(CRITICAL) == round(width / 3)
    assert bar["c"].count(CRITICAL) == width - round(width / 3)  # 10 to 30
    assert bar["a"].index(CRITICAL) == 0 and bar["c"].index(CRITICAL) == round(width / 3)
    assert "|" in bar["d"] and SLACK not in bar["a"]
    assert all(len(line) <= 70 for line in lines)
    assert bar["d"].index("|") == width - 1  # an instant at the very end stays inside the frame
    assert "makespan 30; critical path: a -> c" in text
    assert "tasks running: peak 2 (capacity 2)" in text


def test_show_reads_a_run_folder(tmp_path: Path, refund_path: Path) -> None:
    outcome = run_search(load_problem(refund_path), options=SearchOptions(generations=3, jobs=1),
                         out_dir=tmp_path / "run")
    done = CliRunner().invoke(show, [str(outcome.out_dir), "--width", "100", "--no-color"])
    assert done.exit_code == 0, done.output
    assert f"makespan {outcome.summary['best']['makespan']:g}" in done.output
    assert "\x1b[" not in done.output
    colored = CliRunner().invoke(show, [str(outcome.out_dir), "--color"], color=True)
    assert "\x1b[31m" in colored.output
