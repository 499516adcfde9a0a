"""Crash and resume, the cases the other crash tests leave out: real processes killed with
SIGKILL at a chosen point, then resumed with the command line.

- ``evolve run`` killed after its first generation's events but before its first checkpoint
  was on disk: ``--resume`` used to refuse it ("no checkpoint") and tell the user to start it
  again without ``--resume``, which was refused too ("already holds a run"); it now starts the
  run from the beginning and ends exactly as the run never stopped.
- ``evolve run --jobs 2`` killed in the middle of a generation resumes at ``--jobs 2`` to the
  events, best plan and summary of the uninterrupted run.
- ``evolve execute`` killed while the plan search of a replan was running: ``--resume`` used to
  fail ("replans/r1: already holds a run"), each failed try adding its events, and a resumed
  session reported the false assumption that asked for the replan a second time.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.problems.synthetic import generate_document, save_document
from evolve.run.checkpoint import checkpointed_generation

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
ARGS = ["--generations", "6", "--population", "6", "--keep", "3", "--seed", "2", "--no-report"]
TIMEOUT = 120

MAIN = "from evolve.cli.main import main; main()"
NO_CHECKPOINT = (
    "import os, signal, evolve.run.checkpoint as c\n"
    "def killed(*args, **kwargs):\n"
    "    os.kill(os.getpid(), signal.SIGKILL)\n"
    "c.Writer.save = killed\n" + MAIN
)
"""The CLI killed where its first checkpoint would be written: generation 0's events are on
disk, no checkpoint is."""
MID_GENERATION = (
    "import os, signal, evolve.defaults as d, evolve.run.folder as f\n"
    "d.CHECKPOINT_SECONDS = 0.0\n"
    "writer = f.event_writer\n"
    "def killing(log, on_generation):\n"
    "    write = writer(log, on_generation)\n"
    "    def sink(event):\n"
    "        write(event)\n"
    "        if event.get('event') == 'candidate' and event.get('generation') == 3:\n"
    "            os.kill(os.getpid(), signal.SIGKILL)\n"
    "    return sink\n"
    "f.event_writer = killing\n" + MAIN
)
"""The CLI, checkpointing every generation, killed at generation 3's first candidate."""

VARYING = {"seconds", "session_seconds", "evaluations_per_second", "resumed"}
"""Summary fields a resumed run may differ in: timing, and whether it was resumed."""


def evolve_run(problem: Path, *args: str, main: str = MAIN) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", main, "run", str(problem), *ARGS, *args],
                          capture_output=True, text=True, timeout=TIMEOUT)


def summary(folder: Path) -> dict[str, Any]:
    data = json.loads((folder / "summary.json").read_text())
    data["options"].pop("jobs")  # workers may differ between a run and its resumption
    return {key: value for key, value in data.items() if key not in VARYING}


def same_as_never_stopped(folder: Path, uninterrupted: Path) -> None:
    for name in ("events.jsonl", "best.json"):
        assert (folder / name).read_bytes() == (uninterrupted / name).read_bytes(), name
    assert summary(folder) == summary(uninterrupted)


@pytest.fixture(scope="module")
def problem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated plan problem (its children are developed in threads at --jobs 2)."""
    path = tmp_path_factory.mktemp("problem") / "g40.yaml"
    save_document(generate_document(40, seed=3), path)
    return path


@pytest.fixture(scope="module")
def uninterrupted(problem: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("whole") / "run"
    done = evolve_run(problem, "--jobs", "1", "--out", str(folder))
    assert done.returncode == 0, done.stderr[-2000:]
    return folder


def test_a_run_killed_before_its_first_checkpoint_resumes_from_the_beginning(
        problem: Path, uninterrupted: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    killed = evolve_run(problem, "--jobs", "1", "--out", str(folder), main=NO_CHECKPOINT)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert b'"generation_end"' in (folder / "events.jsonl").read_bytes()
    assert not (folder / "checkpoint.json").exists()
    resumed = evolve_run(problem, "--jobs", "1", "--resume", str(folder))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "starting it from the beginning" in resumed.stderr and "Traceback" not in resumed.stderr
    same_as_never_stopped(folder, uninterrupted)


def test_a_folder_with_no_run_is_still_no_checkpoint(problem: Path, tmp_path: Path) -> None:
    """Starting again is for a run that began; a folder that holds none is refused as before."""
    result = CliRunner().invoke(cli, ["run", str(problem), *ARGS, "--resume", str(tmp_path)])
    assert result.exit_code == 2 and "no checkpoint to resume from" in result.output


def test_a_run_killed_mid_generation_at_two_jobs_resumes_as_never_stopped(
        problem: Path, uninterrupted: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    killed = evolve_run(problem, "--jobs", "2", "--out", str(folder), main=MID_GENERATION)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert (checkpointed_generation(folder) or 0) >= 1  # resumed from a checkpoint in mid-run
    resumed = evolve_run(problem, "--jobs", "2", "--resume", str(folder))
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    same_as_never_stopped(folder, uninterrupted)
    assert json.loads((folder / "summary.json").read_text())["resumed"] is True


REPLANNING = (
    "import os, signal, evolve.execute.replan as r\n"
    "search = r.run_search\n"
    "def killed_at_generation_2(*args, **kwargs):\n"
    "    def hook(event):\n"
    "        if event['generation'] == 2:\n"
    "            os.kill(os.getpid(), signal.SIGKILL)\n"
    "    return search(*args, on_generation=hook, **kwargs)\n"
    "r.run_search = killed_at_generation_2\n" + MAIN
)
"""``evolve execute`` killed in the replan's plan search, at its generation 2."""


def execute(folder: Path, ledger: Path, main: str = MAIN,
            resume: bool = False) -> subprocess.CompletedProcess[str]:
    """The refund plan with the example's tools: the lookup shows a refund already issued, so
    the refund's assumption is false and the run replans through the search."""
    run = (["--resume", str(folder)] if resume else
           [str(EXAMPLES / "refund_plan.yaml"), "--problem", str(EXAMPLES / "refund.yaml"),
            "--tools", f"{EXAMPLES / 'refund_tools.py'}:TOOLS", "--out", str(folder)])
    return subprocess.run([sys.executable, "-c", main, "execute", *run, "--json", "--no-report"],
                          env={**os.environ, "EVOLVE_REFUND_LEDGER": str(ledger)},
                          capture_output=True, text=True, timeout=TIMEOUT)


def events(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


def test_an_execution_killed_while_replanning_resumes(tmp_path: Path) -> None:
    whole = execute(tmp_path / "whole", tmp_path / "whole.json")
    assert whole.returncode == 0, whole.stderr[-2000:]
    folder, ledger = tmp_path / "run", tmp_path / "ledger.json"
    killed = execute(folder, ledger, main=REPLANNING)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert (folder / "replans" / "r1" / "events.jsonl").exists()  # the search was under way
    assert not (folder / "outcome.json").exists()
    resumed = execute(folder, ledger, resume=True)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    outcome, expected = json.loads(resumed.stdout), json.loads(whole.stdout)
    assert (outcome["status"], outcome["reason"]) == ("completed", "goal_met")
    assert outcome["plan"] == expected["plan"]  # the same replan: same seed, same search
    assert outcome["calls_by_risk"]["write"] == 0  # a refund was issued already: none is made
    ran = events(folder)
    assert [e["seq"] for e in ran] == list(range(1, len(ran) + 1))
    false = [e for e in ran if e["event"] == "step.error" and e.get("kind") == "assumption"]
    assert [e["task"] for e in false] == ["t7"]  # reported once, not again by the resumed session
    names = [e["event"] for e in ran]
    assert names.count("session.resume") == 1 and names.count("plan.commit") == 2
