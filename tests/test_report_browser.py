"""The HTML report in a real browser: headless Chromium loads it, lays it out and screenshots it.

Two independent witnesses of "no console errors": Chromium's own log of console
messages (``--enable-logging=stderr`` prints every one as a ``CONSOLE`` line) and
the page's recorder, which also catches blocked network fetches. The counts of
bars and points come from elements the browser actually laid out with a size,
read back from ``#report-check`` with ``--dump-dom``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from browser import CHROMIUM, chromium, read_check

from evolve.model.problem import Problem
from evolve.report import write_report
from evolve.report.assets import ERRORS_JS
from evolve.run.folder import run_search
from evolve.search.options import SearchOptions

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")


def test_report_loads_cleanly_and_shows_every_bar_and_point(refund: Problem, tmp_path: Path) -> None:
    outcome = run_search(refund, options=SearchOptions(generations=15, seed=1, jobs=1),
                         out_dir=tmp_path / "run")
    report = write_report(outcome.out_dir)
    url = report.resolve().as_uri()
    tasks = len(json.loads((outcome.out_dir / "best.json").read_text())["tasks"])
    events = [json.loads(line) for line in (outcome.out_dir / "events.jsonl").read_text().splitlines()]
    generations = sum(1 for e in events if e["event"] == "generation_end")
    assert generations == 16

    dumped = chromium(tmp_path, "--window-size=1280,900", "--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    console = [line for line in dumped.stderr.splitlines() if re.search(r":CONSOLE[:(]", line)]
    assert console == []
    check = read_check(dumped.stdout)
    assert check.get("data-ready") == "1", "the page's script did not run to the end"
    assert json.loads(check["data-errors"]) == []
    assert int(check["data-bars"]) == tasks
    assert int(check["data-nodes"]) == tasks
    points = json.loads(check["data-points"])
    assert set(points) == {"validity", "completeness", "makespan", "minimality"}
    assert all(count == generations for count in points.values()), points

    height = int(check["data-height"])
    shot = tmp_path / "report.png"
    taken = chromium(tmp_path, f"--window-size=1280,{height}", f"--screenshot={shot}", url)
    assert taken.returncode == 0, taken.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, tall = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (width, tall) == (1280, height)


def test_a_script_error_would_be_seen(tmp_path: Path) -> None:
    """The witnesses are not blind: a page that throws is caught by both."""
    page = tmp_path / "broken.html"
    page.write_text(throwing_page())
    dumped = chromium(tmp_path, "--dump-dom", page.resolve().as_uri())
    assert any(":CONSOLE" in line for line in dumped.stderr.splitlines())
    assert "nope is not defined" in read_check(dumped.stdout)["data-errors"]


def throwing_page() -> str:
    """A page with the report's error recorder and a script that throws."""
    return (f"<!DOCTYPE html><html><head><script>{ERRORS_JS}</script></head><body>"
            '<div id="report-check"></div><script>nope();</script><script>'
            "document.getElementById('report-check').setAttribute('data-errors',"
            " JSON.stringify(window.__reportErrors));</script></body></html>")
