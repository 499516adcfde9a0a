"""``evolve serve`` in a real browser: a real server (the CLI, a subprocess, uvicorn on a free
loopback port) and a headless Chromium driven by Playwright.

Two refund runs wait for the manager. In the inbox the test approves one and rejects the other
by clicking; the server (``--resume-on-decision``) resumes both in its workers. Then it checks
the journals (who, note, the action hash the page showed), that the approved refund ran once
and the rejected one never, and that screenshots of the run page and the inbox are not blank.
Skipped when Chromium or Playwright is absent (Playwright's own browsers are never downloaded:
Debian's ``/usr/bin/chromium`` is launched by its path).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytest.importorskip("starlette")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TOOLS = f"{EXAMPLES / 'refund_tools.py'}:NO_PRIOR_REFUND"
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run"]


def env(ledger: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "EVOLVE_REFUND_LEDGER": str(ledger)}


MAKER = """
import sys
from evolve.cli.main import cli
for out in sys.argv[1:]:
    try:
        cli.main(["execute", "{plan}", "--problem", "{problem}", "--tools", "{tools}", "--out", out,
                  "--no-report"])
    except SystemExit as stop:
        assert stop.code == 4, stop.code  # waiting for a person
"""


def waiting_refunds(folders: list[Path], ledger: Path) -> None:
    """The refund runs, each stopped waiting for the manager (made in one process: one start-up)."""
    script = MAKER.format(plan=EXAMPLES / "refund_human_plan.yaml", problem=EXAMPLES / "refund.yaml",
                          tools=TOOLS)
    done = subprocess.run([sys.executable, "-c", script, *map(str, folders)], env=env(ledger),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, Path]]:
    """Two waiting runs and ``evolve serve --resume-on-decision`` over them: (address, runs, ledger)."""
    runs, ledger = tmp_path / "runs", tmp_path / "ledger.json"
    waiting_refunds([runs / "refund-a", runs / "refund-b"], ledger)
    server = subprocess.Popen(
        [sys.executable, "-m", "evolve", "serve", str(runs), "--port", "0", "--as", "asha",
         "--resume-on-decision"],
        env=env(ledger), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:\d+/\?token=\S+)", line)
        assert found, line
        yield found.group(1), runs, ledger
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def api(address: str, path: str) -> Any:
    base, token = address.split("/?token=")
    request = urllib.request.Request(base + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


def asks(folder: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(folder / "journal.sqlite")
    try:
        return db.execute("SELECT task_id, verdict, decided_by, note, decided_hash FROM asks").fetchall()
    finally:
        db.close()


def not_blank(png: Path) -> None:
    """A screenshot with something drawn on it: many colours, and far from one flat tone."""
    image = pytest.importorskip("PIL.Image").open(png).convert("RGB").resize((200, 200))
    pixels = np.asarray(image).reshape(-1, 3)
    colours = len(np.unique(pixels, axis=0))
    variance = float(np.asarray(image.convert("L"), dtype=float).var())
    assert colours > 50 and variance > 100, (png, colours, variance)


def test_approve_and_reject_by_clicking_then_the_runs_resume(served: tuple[str, Path, Path],
                                                             tmp_path: Path) -> None:
    address, runs, ledger = served
    base = address.split("/?token=")[0]
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=BROWSER_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1200, "height": 900})
            page = context.new_page()
            problems: list[str] = []
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(address)
            assert page.url == base + "/"  # the token left the address; a cookie carries the session
            page.wait_for_selector('tr[data-run="refund-a"][data-status="waiting"]')
            assert page.locator('tr[data-run="refund-b"][data-status="waiting"]').count() == 1

            watcher = context.new_page()  # a second tab on the runs page, never reloaded
            watcher.goto(base + "/")  # (the same context: the session cookie is shared)
            watcher.evaluate("window.__loadedOnce = 1")

            page.goto(base + "/inbox")
            shown = {key: page.get_attribute(f'article[data-key="{key}"]', "data-action")
                     for key in ("refund-a/t6", "refund-b/t6")}
            assert all(shown.values()) and "approves t7 payments.issue_refund" in page.inner_text("main")
            page.screenshot(path=str(tmp_path / "inbox.png"), full_page=True)

            a = page.locator('article[data-key="refund-a/t6"]')
            a.locator("form.approve input[name=note]").fill("duplicate capture, refund once")
            a.locator("button.approve").click()
            page.wait_for_selector("p.flash.ok")
            assert "refund-a: t6 approved by asha" in page.inner_text("p.flash.ok")

            b = page.locator('article[data-key="refund-b/t6"]')
            b.locator("button.reject").click()  # no note: the browser keeps the form (required)
            assert asks(runs / "refund-b")[0][1] is None
            b.locator("form.reject input[name=note]").fill("the customer asked for store credit")
            b.locator("button.reject").click()
            page.wait_for_selector("p.flash.ok >> text=refund-b: t6 rejected by asha")

            deadline = time.monotonic() + 180
            while time.monotonic() < deadline:
                status = {r["name"]: r["status"] for r in api(address, "/api/runs")}
                if status == {"refund-a": "completed", "refund-b": "completed"}:
                    break
                time.sleep(0.5)
            workers = [api(address, f"/api/runs/{name}")["worker"] for name in ("refund-a", "refund-b")]
            assert status == {"refund-a": "completed", "refund-b": "completed"}, (status, workers)

            # the runs page followed the runs without a reload
            for name in ("refund-a", "refund-b"):
                watcher.wait_for_selector(f'tr[data-run="{name}"][data-status="completed"]')
            assert watcher.evaluate("window.__loadedOnce") == 1

            # the run page, after the run: the report's drawings and the live timeline
            page.goto(base + "/runs/refund-a")
            # polled from here: wait_for_function evals its predicate, which the page's CSP forbids
            count = "Number(document.getElementById('events').dataset.count || 0)"
            deadline = time.monotonic() + 30
            while page.evaluate(count) <= 20 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert page.evaluate(count) > 20
            assert page.locator("svg").count() >= 2
            assert "person.approved" in page.inner_text("#timeline")
            page.screenshot(path=str(tmp_path / "run.png"), full_page=True)
            assert problems == []
        finally:
            browser.close()

    a_journal, b_journal = asks(runs / "refund-a"), asks(runs / "refund-b")
    assert a_journal[0] == ("t6", "approved", "asha", "duplicate capture, refund once", shown["refund-a/t6"])
    why = "the customer asked for store credit"
    assert b_journal[0] == ("t6", "rejected", "asha", why, shown["refund-b/t6"])
    entries = json.loads(ledger.read_text())
    refunds = [e for e in entries.values() if e["tool"] == "payments.issue_refund"]
    assert len(refunds) == 1 and refunds[0]["outputs"]["receipt"]["amount_inr"] == 1499
    outcome_a = json.loads((runs / "refund-a" / "outcome.json").read_text())
    outcome_b = json.loads((runs / "refund-b" / "outcome.json").read_text())
    assert outcome_a["calls_by_risk"]["write"] == 1 and outcome_a["reason"] == "goal_met"  # ran once
    assert outcome_b["calls_by_risk"]["write"] == 0 and outcome_b["tasks"]["t6"]["status"] == "failed"
    for png in ("inbox.png", "run.png"):
        not_blank(tmp_path / png)
