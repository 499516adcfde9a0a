"""The execution report in a real browser: headless Chromium lays it out with no console error and
draws every attempt's bar (counted by the page's own self-check, as the search report's test does)."""

from __future__ import annotations

import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve.cli.main import cli

pytest.importorskip("evolve.execute")
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0"]


class CheckReader(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if values.get("id") == "report-check":
            self.found = values


def test_execution_report_lays_out_every_attempt(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    result = CliRunner().invoke(cli, [
        "execute", str(EXAMPLES / "refund_plan.yaml"), "--problem", str(EXAMPLES / "refund.yaml"),
        "--simulate", "--fail", "payments.issue_refund=1", "--fail", "orders.get=0.5", "--seed", "2",
        "--out", str(folder)])
    assert result.exit_code in (0, 1), result.output
    assert CHROMIUM is not None
    run = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                          "--virtual-time-budget=2000", "--dump-dom", (folder / "report.html").as_uri()],
                         capture_output=True, text=True, timeout=120, check=False)
    reader = CheckReader()
    reader.feed(run.stdout)
    check = reader.found
    assert check.get("data-ready") == "1", run.stderr[-2000:]
    assert json.loads(check["data-errors"]) == []
    assert int(check["data-bars"]) == int(check["data-expected-bars"]) > 0
    assert not [line for line in run.stderr.splitlines() if "CONSOLE" in line]
