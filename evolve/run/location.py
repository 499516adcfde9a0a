"""Where run folders go: the folder a new run gets, made with a one-line error when it cannot be.

Apart from :mod:`evolve.run.folder` (which wires the whole engine) so that a command can
choose and make its run folder before the engine is imported.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from evolve.defaults import RUNS_DIR
from evolve.model.errors import UsageError

RUNS_DIR_VARIABLE = "EVOLVE_RUNS_DIR"
CHECKPOINT = "checkpoint.json"
LEGACY_CHECKPOINT = "checkpoint.pkl"
"""The checkpoint's file, and the one evolve wrote before it (read, never written)."""


def runs_root() -> str:
    """Where a new run folder goes when no folder is given: ``$EVOLVE_RUNS_DIR``, else ``runs/``
    in the working folder (the test suite points the variable at a temporary folder)."""
    return os.environ.get(RUNS_DIR_VARIABLE) or RUNS_DIR


def new_run_dir(root: str | Path = RUNS_DIR) -> Path:
    """A fresh folder under ``root`` named by the time, never reusing an existing one."""
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    base = Path(root)
    for n in range(1000):
        path = base / (stamp if n == 0 else f"{stamp}-{n}")
        if not path.exists():
            make_folder(path)
            return path
    raise UsageError(f"cannot create a new run folder under {base}: 1,000 exist for this second")


def make_folder(path: Path) -> None:
    """``mkdir -p``, with a one-line error naming the folder instead of a traceback."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"{path}: exists and is not a folder, so it cannot be a run folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{path}: cannot create the run folder ({exc.strerror or exc})") from None


RUN_FILES = ("events.jsonl", CHECKPOINT, LEGACY_CHECKPOINT, "summary.json",
             "best.json", "best.ipc", "problem.json", "report.html")
"""What a run writes into its folder: a folder holding any of them holds a run."""


def prepare_folder(path: Path, *, resume: bool, overwrite: bool) -> None:
    """Make the run folder; refuse to write over a run in it unless resuming or told to."""
    make_folder(path)
    held = [name for name in RUN_FILES if (path / name).exists()]
    if held and not resume:
        if not overwrite:
            raise UsageError(f"{path}: already holds a run ({', '.join(held)}); continue it with "
                             "--resume, choose another --out, or overwrite it with --force")
        for name in held:
            (path / name).unlink()


def replace_file(path: Path, text: str) -> None:
    """A temporary file renamed over ``path``: a process killed at any moment leaves the old
    file or the new one, whole. Not flushed to the disk (a checkpoint is): a search may replace
    its best plan many times a second, inside its ``--max-seconds``."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
