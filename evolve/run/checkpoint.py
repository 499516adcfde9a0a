"""Checkpoints: the whole search state after a generation, written so a crash never tears it.

The file is written to a temporary name, flushed to disk and renamed over the
old one, so at any moment (SIGKILL included) the folder holds one complete
checkpoint. It records the problem, the result-changing options and the length
of ``events.jsonl`` at that point; resuming truncates the events back to it, so
a resumed run writes exactly the events of a run that was never stopped.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evolve.model.errors import EvolveError

CHECKPOINT = "checkpoint.pkl"
MAGIC = "evolve-checkpoint"
VERSION = 1


class CheckpointError(EvolveError):
    """A checkpoint that cannot be resumed: missing, corrupt, or from another run."""


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint: the search state and the length of the events log it matches."""

    state: dict[str, Any]
    events_bytes: int


def fingerprint(data: object) -> str:
    """A stable digest of JSON-able data (a problem document, the options that matter)."""
    text = json.dumps(data, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def snapshot(state: dict[str, Any], identity: dict[str, Any], events_bytes: int) -> bytes:
    """The checkpoint's bytes: taken at once, so the search may go on changing its state."""
    blob = {"magic": MAGIC, "version": VERSION, "identity": identity,
            "events_bytes": events_bytes, "state": state}
    return pickle.dumps(blob, protocol=pickle.HIGHEST_PROTOCOL)


def write_atomically(path: Path, data: bytes) -> None:
    """Temporary file, flushed to disk, renamed over ``path``: never a torn checkpoint."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)


class Writer:
    """Writes checkpoints in a background thread, so disk time overlaps the next generation.

    The snapshot is pickled synchronously; only the write, fsync and rename run
    behind. A new checkpoint waits for the previous one, and :meth:`close` waits
    for the last, so the newest complete checkpoint is always on disk or coming.
    """

    def __init__(self, folder: Path, identity: dict[str, Any]) -> None:
        self.path = folder / CHECKPOINT
        self.identity = identity
        self.pending: threading.Thread | None = None
        self.error: BaseException | None = None

    def save(self, state: dict[str, Any], events_bytes: int) -> None:
        data = snapshot(state, self.identity, events_bytes)
        self.wait()
        thread = threading.Thread(target=self.write, args=(data,), name="checkpoint", daemon=True)
        thread.start()
        # assigned only once started: a Ctrl-C between the two must not leave an unstarted
        # thread for wait() to join (the write itself is atomic, so an unjoined one is harmless)
        self.pending = thread

    def write(self, data: bytes) -> None:
        try:
            write_atomically(self.path, data)
        except BaseException as exc:  # reported by wait(), in the search's thread
            self.error = exc

    def wait(self) -> None:
        if self.pending is not None:
            self.pending.join()
            self.pending = None
        if self.error is not None:
            error, self.error = self.error, None
            raise CheckpointError(f"{self.path}: cannot write the checkpoint ({error})")

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.wait()


def load(folder: Path, identity: dict[str, Any]) -> Checkpoint:
    """Read ``folder``'s checkpoint, refusing one that was made for another problem or options."""
    path = folder / CHECKPOINT
    if not path.exists():
        raise CheckpointError(f"{path}: no checkpoint to resume from")
    try:
        with path.open("rb") as stream:
            blob = pickle.load(stream)
    except Exception as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint ({type(exc).__name__}: {exc})") from None
    if not isinstance(blob, dict) or blob.get("magic") != MAGIC:
        raise CheckpointError(f"{path}: not an evolve checkpoint")
    if blob.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint version {blob.get('version')}, expected {VERSION}")
    theirs = blob.get("identity", {})
    differs = sorted(k for k in set(identity) | set(theirs) if identity.get(k) != theirs.get(k))
    if differs:
        raise CheckpointError(
            f"{path}: checkpoint belongs to another run (different {', '.join(differs)}); "
            "resume with the same problem and options, or start a new run folder")
    return Checkpoint(state=blob["state"], events_bytes=int(blob["events_bytes"]))
