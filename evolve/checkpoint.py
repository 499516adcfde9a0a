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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evolve.errors import EvolveError

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


def save(folder: Path, state: dict[str, Any], identity: dict[str, Any], events_bytes: int) -> Path:
    """Atomically replace ``folder/checkpoint.pkl``."""
    path = folder / CHECKPOINT
    tmp = folder / f".{CHECKPOINT}.tmp"
    blob = {"magic": MAGIC, "version": VERSION, "identity": identity,
            "events_bytes": events_bytes, "state": state}
    with tmp.open("wb") as stream:
        pickle.dump(blob, stream, protocol=pickle.HIGHEST_PROTOCOL)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)
    return path


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
