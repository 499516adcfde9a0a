"""A closed stdout is not an error: like ``git``, every command whose reader went away
(``evolve pending RUN | grep -q x``, ``evolve validate ... | head -1``) ends quietly with its own
exit status, and a search whose terminal went away (``evolve run ... 2>&1 | head -4``) still
finishes and writes its run folder. Real processes and real pipes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from evolve.cli.common import ClosedPipeSafe

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
EVOLVE = [sys.executable, "-m", "evolve"]
TOOLS = f"{EXAMPLES / 'refund_tools.py'}:NO_PRIOR_REFUND"


def env_for(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "EVOLVE_REFUND_LEDGER": str(tmp_path / "ledger.json"),
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def piped(command: str, tmp_path: Path) -> tuple[int, str]:
    """Run ``command`` (a shell pipeline whose first stage is evolve) in bash: the first stage's
    exit status (``PIPESTATUS[0]``) and what it wrote to stderr (kept in a file, not the pipe)."""
    errors = tmp_path / "stderr.txt"
    script = f"{command} 2>{errors}; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", script], env=env_for(tmp_path), cwd=tmp_path, timeout=300,
                          capture_output=True, text=True, check=False)
    return done.returncode, errors.read_text() if errors.exists() else ""


def quoted(*args: str | Path) -> str:
    return " ".join(f"'{a}'" for a in (*EVOLVE, *map(str, args)))


def test_validate_into_a_reader_that_left_ends_with_its_own_status(tmp_path: Path) -> None:
    # `true` exits at once: every line validate prints meets a pipe with no reader
    valid = quoted("validate", EXAMPLES / "refund_plan.yaml", "--problem", EXAMPLES / "refund.yaml")
    status, errors = piped(f"{valid} | true", tmp_path)
    assert (status, errors) == (0, "")
    broken = tmp_path / "broken.yaml"
    plan = (EXAMPLES / "refund_plan.yaml").read_text().replace("payments.issue_refund", "no.such_tool")
    broken.write_text(plan)
    status, errors = piped(f"{quoted('validate', broken, '--problem', EXAMPLES / 'refund.yaml')} | head -0",
                           tmp_path)
    assert (status, errors) == (1, "")  # the plan is not valid: the command's own answer


def test_pending_into_grep_q(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    started = subprocess.run([*EVOLVE, "execute", str(EXAMPLES / "refund_human_plan.yaml"), "--problem",
                              str(EXAMPLES / "refund.yaml"), "--tools", TOOLS, "--out", str(folder),
                              "--no-report"], env=env_for(tmp_path), capture_output=True, text=True,
                             timeout=300, check=False)
    assert started.returncode == 4, started.stderr
    # a reader that closes its end before evolve writes a byte
    proc = subprocess.Popen([*EVOLVE, "pending", str(folder)], env=env_for(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    errors = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert "Traceback" not in errors and "internal error" not in errors and errors == ""
    status, errors = piped(f"{quoted('pending', folder)} | grep -q t6", tmp_path)
    assert (status, errors) == (0, "")


def test_a_search_whose_terminal_went_away_writes_its_run_folder(tmp_path: Path) -> None:
    folder = tmp_path / "r"
    run = quoted("run", EXAMPLES / "refund.yaml", "--out", folder, "--generations", "12", "--jobs", "1")
    shown = tmp_path / "shown.txt"
    done = subprocess.run(["bash", "-c", f"{run} 2>&1 | head -4 >{shown}; exit ${{PIPESTATUS[0]}}"],
                          env=env_for(tmp_path), cwd=tmp_path, timeout=300, check=False)
    assert done.returncode == 0
    lines = shown.read_text().splitlines()
    assert len(lines) == 4 and all(line.startswith("gen ") for line in lines), lines
    # generation 0 loads the kernels: no rate that counts it, the later lines have one
    assert lines[0].endswith("(1 evals, warm-up)") and all(line.endswith("/s)") for line in lines[1:])
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["generations"] == 12 and summary["best"]["feasible"] is True
    assert json.loads((folder / "best.json").read_text())["tasks"]
    assert (folder / "report.html").exists()


def test_the_stream_drops_writes_once_the_reader_left(tmp_path: Path) -> None:
    read, write = os.pipe()
    stream = ClosedPipeSafe(os.fdopen(write, "w", encoding="utf-8"))
    stream.write("seen\n")
    stream.flush()
    assert os.read(read, 100) == b"seen\n"
    os.close(read)
    assert not stream.gone
    stream.write("x" * 10)
    stream.flush()  # EPIPE: dropped, not raised
    assert stream.gone
    assert stream.write("more") == 4
    stream.flush()
    stream._stream.close()  # the descriptor now points at the null device: closing flushes there
