"""``evolve report RUN`` and ``evolve show RUN`` take an ``evolve execute`` run folder as well as
an ``evolve run`` one: the report is the execution report, the terminal chart is what ran (each
task's attempts, its status and times, the revisions)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from evolve.cli.main import cli
from evolve.report.terminal import FAILED, PASSED, RAN

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def evolve(*args: str | Path) -> Result:
    here = os.getcwd()
    os.chdir(ROOT)  # the tools are found as examples.refund_tools
    try:
        return CliRunner().invoke(cli, [str(a) for a in args])
    finally:
        os.chdir(here)


@pytest.fixture(scope="module")
def replanned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The refund example with real tools: the prior refund makes it replan (revision 1)."""
    folder = tmp_path_factory.mktemp("exec") / "run"
    done = evolve("execute", EXAMPLES / "refund_plan.yaml", "--problem", EXAMPLES / "refund.yaml",
                  "--tools", "examples.refund_tools:TOOLS", "--out", folder, "--no-report")
    assert done.exit_code == 0, done.output
    return folder


def test_report_writes_the_execution_report(replanned: Path) -> None:
    assert not (replanned / "report.html").exists()
    done = evolve("report", replanned)
    assert done.exit_code == 0, done.output
    page = (replanned / "report.html").read_text()
    assert done.output.strip() == str(replanned / "report.html")
    assert "evolve execution: refund-8472" in page and "Planned against actual" in page
    again = evolve("report", replanned, "--out", replanned / "again.html")  # rewrites, anywhere
    assert again.exit_code == 0 and (replanned / "again.html").read_text() == page


def test_show_draws_what_ran(replanned: Path) -> None:
    done = evolve("show", replanned, "--width", "100", "--no-color")
    assert done.exit_code == 0, done.output
    lines = done.output.splitlines()
    assert lines[0].startswith("refund-8472: completed, goal_met")
    rows = {line.split()[0]: line for line in lines if line[:1] == "t" and "|" in line}
    assert RAN in rows["t1"] and " done " in rows["t1"]
    # the refund's assumption was checked and found false: a mark, not a run, and invalidated
    assert rows["t7"].split("|")[1].strip() == PASSED and "invalidated" in rows["t7"]
    assert rows["t9"].split("|")[1].strip() == "" and "invalidated" in rows["t9"]  # never reached
    assert any(line.startswith("revision 1 ") and "removed" in line for line in lines)
    assert len(rows) > 9  # the tasks the revision added are rows too


def test_show_marks_a_failed_attempt(tmp_path: Path) -> None:
    (tmp_path / "problem.yaml").write_text(
        "name: tiny\ninitial: [x]\ncriteria: [b]\ntools:\n"
        "  one: {duration: 5, inputs: [x], outputs: [b]}\n")
    (tmp_path / "plan.yaml").write_text(
        "tasks:\n  - {id: t1, tool: one, inputs: {x: $x}}\n")
    (tmp_path / "tools.py").write_text(
        "from evolve import ToolFailure\n\n"
        "def one(inputs, call):\n    raise ToolFailure('down', retryable=False)\n\n"
        "TOOLS = {'one': one}\n")
    run = tmp_path / "run"
    done = evolve("execute", tmp_path / "plan.yaml", "--problem", tmp_path / "problem.yaml",
                  "--tools", f"{tmp_path / 'tools.py'}:TOOLS", "--out", run, "--no-report")
    assert done.exit_code == 1, done.output
    shown = evolve("show", run, "--width", "80", "--no-color")
    assert shown.exit_code == 0, shown.output
    [row] = [line for line in shown.output.splitlines() if line.startswith("t1 one")]
    assert FAILED in row.split("|")[1] and "failed" in row.split("|")[2]
    assert shown.output.splitlines()[0].startswith("tiny: failed")
