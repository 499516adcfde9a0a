"""The execution report in a real browser: headless Chromium lays it out with no console error and
draws every attempt's bar (counted by the page's own self-check, as the search report's test does)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser import CHROMIUM, chromium, read_check
from click.testing import CliRunner

from evolve.cli.main import cli

pytest.importorskip("evolve.execute")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
def test_execution_report_lays_out_every_attempt(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    result = CliRunner().invoke(cli, [
        "execute", str(EXAMPLES / "refund_plan.yaml"), "--problem", str(EXAMPLES / "refund.yaml"),
        "--simulate", "--fail", "payments.issue_refund=1", "--fail", "orders.get=0.5", "--seed", "2",
        "--out", str(folder)])
    assert result.exit_code in (0, 1), result.output
    run = chromium(tmp_path, "--virtual-time-budget=2000", "--dump-dom", (folder / "report.html").as_uri())
    check = read_check(run.stdout)
    assert check.get("data-ready") == "1", run.stderr[-2000:]
    assert json.loads(check["data-errors"]) == []
    assert int(check["data-bars"]) == int(check["data-expected-bars"]) > 0
    assert not [line for line in run.stderr.splitlines() if "CONSOLE" in line]
