"""Checkpoints: a run killed at any moment and resumed ends exactly like one never stopped."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve import SearchOptions, load_problem, run_search
from evolve.cli.main import cli
from evolve.run.checkpoint import Writer, checkpointed_generation

REFUND = Path(__file__).resolve().parent.parent / "examples" / "refund.yaml"
ARGS = ["--generations", "70", "--population", "16", "--keep", "6", "--seed", "11", "--jobs", "1"]


MAIN = "from evolve.cli.main import main; main()"
EVERY_GENERATION = "import evolve.defaults as d; d.CHECKPOINT_SECONDS = 0.0; " + MAIN
"""The CLI with a checkpoint after every generation (the default interval is a second)."""


def evolve_cmd(*args: str, main: str = MAIN) -> list[str]:
    return [sys.executable, "-c", main, "run", str(REFUND), *args]


def generations_done(folder: Path) -> int:
    path = folder / "events.jsonl"
    if not path.exists():
        return 0
    return path.read_text(errors="replace").count('"generation_end"')


def resumes_as_never_stopped(folder: Path, uninterrupted: Path) -> None:
    """Resume ``folder`` with the same command: it must end with the events and best plan of
    the run that was never stopped."""
    subprocess.run(evolve_cmd(*ARGS, "--resume", str(folder)), check=True, capture_output=True)
    assert (folder / "events.jsonl").read_bytes() == (uninterrupted / "events.jsonl").read_bytes()
    assert (folder / "best.json").read_bytes() == (uninterrupted / "best.json").read_bytes()


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("whole")
    subprocess.run(evolve_cmd(*ARGS, "--out", str(folder)), check=True, capture_output=True)
    return folder


@pytest.mark.parametrize(("after", "main"), [(3, MAIN), (40, EVERY_GENERATION)],
                         ids=["early-default-interval", "late-every-generation"])
def test_sigkill_then_resume_is_identical(uninterrupted: Path, tmp_path: Path, after: int, main: str) -> None:
    folder = tmp_path / "run"
    proc = subprocess.Popen(evolve_cmd(*ARGS, "--out", str(folder), main=main),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while generations_done(folder) < after and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    assert not (folder / "best.json").exists()
    if main == EVERY_GENERATION and after == 40:
        # killed long after generation 0: the resume starts from a checkpoint in mid-run
        assert (checkpointed_generation(folder) or 0) > 30
    resumes_as_never_stopped(folder, uninterrupted)
    assert json.loads((folder / "summary.json").read_text())["resumed"] is True


def test_resume_refuses_another_runs_checkpoint(uninterrupted: Path) -> None:
    result = CliRunner().invoke(cli, ["run", str(REFUND), *ARGS[:-2], "--seed", "12",
                                      "--resume", str(uninterrupted)])
    assert result.exit_code == 2
    assert "checkpoint belongs to another run (different options)" in result.output


def test_resume_refuses_a_corrupt_checkpoint(tmp_path: Path) -> None:
    (tmp_path / "checkpoint.json").write_bytes(b"\x80\x04garbage")
    result = CliRunner().invoke(cli, ["run", str(REFUND), "--resume", str(tmp_path)])
    assert result.exit_code == 2
    assert "corrupt checkpoint" in result.output
    assert "Traceback" not in result.output


def test_resume_without_a_checkpoint_is_an_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", str(REFUND), "--resume", str(tmp_path)])
    assert result.exit_code == 2
    assert "no checkpoint to resume from" in result.output


def stopped_by_ctrl_c(folder: Path) -> int:
    """The generation a first Ctrl-C ended the run at: the checkpoint, the summary and the
    events log's stop all hold it."""
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["stop_reason"] == "interrupted: Ctrl-C"
    stop = json.loads((folder / "events.jsonl").read_text().splitlines()[-1])
    assert stop["event"] == "stop" and stop["generation"] == summary["generations"]
    assert checkpointed_generation(folder) == summary["generations"]
    return int(summary["generations"])


def test_ctrl_c_stops_cleanly_with_a_checkpoint(uninterrupted: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    proc = subprocess.Popen(evolve_cmd(*ARGS, "--out", str(folder)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while generations_done(folder) < 5 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "--resume" in err and "Traceback" not in err
    assert 5 <= stopped_by_ctrl_c(folder) < 70
    resumes_as_never_stopped(folder, uninterrupted)


def interrupted(folder: Path, main: str) -> str:
    """Run with ``main``, which sends the run a SIGINT: it must end with 130, cleanly, and say
    how to resume; what it said."""
    proc = subprocess.run(evolve_cmd(*ARGS, "--out", str(folder), main=main),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 130, proc.stderr[-2000:]
    assert "--resume" in proc.stderr and "Traceback" not in proc.stderr
    return proc.stderr


IN_THE_FIRST_GENERATION = (
    "import os, signal, evolve.search.loop as loop\n"
    "start = loop.Search.start\n"
    "def started(self):\n"
    "    os.kill(os.getpid(), signal.SIGINT)\n"
    "    start(self)\n"
    "loop.Search.start = started\n" + MAIN
)


def test_ctrl_c_in_the_first_generation_leaves_it_resumable(uninterrupted: Path, tmp_path: Path) -> None:
    """A first Ctrl-C before generation 0 has ended still ends the run at its end, with that
    generation checkpointed (it used to leave no checkpoint: "start the run again"), and the
    resumed run ends exactly as the one never stopped."""
    folder = tmp_path / "run"
    assert "generation 0 is checkpointed" in interrupted(folder, IN_THE_FIRST_GENERATION)
    assert stopped_by_ctrl_c(folder) == 0
    resumes_as_never_stopped(folder, uninterrupted)


SWALLOWED = (
    "import os, signal, evolve.search.loop as loop\n"
    "step = loop.Search.step\n"
    "class Finalizer:\n"
    "    def __del__(self):\n"
    "        os.kill(os.getpid(), signal.SIGINT)\n"
    "        sum(range(1000))\n"
    "def stepped(self):\n"
    "    step(self)\n"
    "    if self.generation == 3:\n"
    "        Finalizer()\n"
    "loop.Search.step = stepped\n" + MAIN
)


def test_ctrl_c_that_lands_in_a_finalizer_still_stops_the_run(tmp_path: Path) -> None:
    """An interrupt that Python cannot raise where it lands (here inside a ``__del__``, as
    happens in a collection or a ctypes callback) is swallowed; the run still stops at the end
    of that generation, exit 130 with a checkpoint, rather than run its 70 generations out
    (which it did: seen as a flaky Ctrl-C test exiting 0)."""
    folder = tmp_path / "run"
    interrupted(folder, SWALLOWED)
    assert stopped_by_ctrl_c(folder) == 3


def test_budgets_stop_the_run(tmp_path: Path) -> None:
    runner = CliRunner()
    out = tmp_path / "a"
    result = runner.invoke(cli, ["run", str(REFUND), "--generations", "500", "--patience", "3",
                                 "--out", str(out), "--jobs", "1", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["stop_reason"].startswith("patience")
    out = tmp_path / "b"
    result = runner.invoke(cli, ["run", str(REFUND), "--generations", "500", "--max-evaluations", "20",
                                 "--out", str(out), "--jobs", "1", "--json"])
    summary = json.loads(result.output)
    assert summary["stop_reason"].startswith("max-evaluations") and summary["evaluations"] >= 20
    out = tmp_path / "c"
    result = runner.invoke(cli, ["run", str(REFUND), "--generations", "500", "--population", "12",
                                 "--target", "makespan=3000", "--out", str(out), "--jobs", "1", "--json"])
    summary = json.loads(result.output)
    assert summary["stop_reason"].startswith("target")
    assert summary["best"]["values"]["makespan"] <= 3000 and summary["best"]["feasible"]
    result = runner.invoke(cli, ["run", str(REFUND), "--target", "speed=1"])
    assert result.exit_code == 2 and "not among the objectives" in result.output


def test_checkpoints_are_written_on_an_interval_not_every_generation(tmp_path: Path) -> None:
    writer = Writer(tmp_path, {}, interval=3600.0)
    assert writer.due()
    writer.save({"generation": 0}, 0, "")
    assert not writer.due()
    writer.wait()
    assert checkpointed_generation(tmp_path) == 0
    assert Writer(tmp_path, {}, interval=0.0).due()


def test_a_finished_run_checkpoints_its_last_generation(tmp_path: Path) -> None:
    """However long the interval, the last generation is checkpointed (before the stop event),
    so a finished run continues with a larger budget from where it ended."""
    run_search(load_problem(REFUND), options=SearchOptions(generations=7, seed=2, jobs=1),
               out_dir=tmp_path, checkpoint_seconds=3600.0)
    assert checkpointed_generation(tmp_path) == 7
