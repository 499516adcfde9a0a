"""Checkpoints: the whole search state after a generation, written so a crash never tears it.

Not after every generation: after the first, then after the first generation that ends at
least ``interval`` seconds (:data:`evolve.defaults.CHECKPOINT_SECONDS`) after the previous
checkpoint began. Encoding a state costs milliseconds to tens of milliseconds, which a fast
search (the RCPSP GA runs a generation in a few milliseconds) would otherwise spend mostly
on its own checkpoints; a resumed run replays the generations since the last checkpoint, and
since the search is deterministic it still ends exactly like one never stopped.

The file is written to a temporary name, flushed to disk and renamed over the
old one, so at any moment (SIGKILL included) the folder holds one complete
checkpoint. It records the problem, the result-changing options, and the length
and digest of ``events.jsonl`` at that point; resuming checks the events still
begin with those bytes and truncates them back to it, so a resumed run writes
exactly the events of a run that was never stopped.

The state is plain JSON (:mod:`evolve.run.state_codec`), never a pickle: a run
folder is data, and resuming one that someone else crafted runs nothing of theirs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evolve.model.errors import EvolveError
from evolve.run.chores import Chore, Runner, in_a_thread
from evolve.run.location import CHECKPOINT as CHECKPOINT  # the run's files are named there
from evolve.run.location import LEGACY_CHECKPOINT as LEGACY_CHECKPOINT
from evolve.run.state_codec import EncodeMemo, StateError, decode, encode

MAGIC = "evolve-checkpoint"
VERSION = 5
"""Bumped whenever a checkpointed state gains or loses a field (3: the RCPSP search keeps
recycled polishing passes; 4: it lost its experiments' state, and the file names its
generation; 5: plan and HTN searches are the one loop, whose state keeps genomes and the
representation's own part), so an older file is refused with a message, not half-restored."""
MAX_BYTES = 1 << 30
"""A checkpoint larger than this is refused unread (a real one is kilobytes to megabytes)."""


class CheckpointError(EvolveError):
    """A checkpoint that cannot be resumed: missing, corrupt, or from another run."""


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint: the search state and the events log prefix it matches."""

    state: dict[str, Any]
    events_bytes: int
    events_sha256: str


def encode_state(state: dict[str, Any], memo: EncodeMemo | None = None) -> Any:
    """The state as plain data: what the search may change later is copied into it now."""
    try:
        return encode(state, memo)
    except StateError as exc:
        raise CheckpointError(f"cannot checkpoint the search state: {exc}") from None


def serialize(body: Any, identity: dict[str, Any], events_bytes: int, events_sha256: str) -> bytes:
    """The checkpoint file's bytes around an encoded state (plain data, which nothing changes
    once encoded, so this may run in another thread while the search goes on)."""
    blob = {"magic": MAGIC, "version": VERSION, "identity": identity, "generation": body.get("generation"),
            "events_bytes": events_bytes, "events_sha256": events_sha256, "state": body}
    return dumps_in_pieces(blob, PIECE_DEPTH).encode()


PIECE_DEPTH = 4
"""How deep :func:`dumps_in_pieces` splits a checkpoint: down to each plan of the population."""


def dumps_in_pieces(value: Any, depth: int) -> str:
    """``json.dumps(value, separators=(",", ":"), allow_nan=True)``, the same text, made one item
    at a time down to ``depth`` levels of dicts and lists. One call of the C encoder holds the GIL
    until it is done (tens of milliseconds for a checkpoint of big plans), which would stall the
    development threads each time they come back from a kernel; between pieces they get it."""
    if depth > 0 and type(value) is dict and all(type(key) is str for key in value):
        return "{" + ",".join(f"{_dumps(key)}:{dumps_in_pieces(item, depth - 1)}"
                              for key, item in value.items()) + "}"
    if depth > 0 and type(value) is list:
        return "[" + ",".join(dumps_in_pieces(item, depth - 1) for item in value) + "]"
    return _dumps(value)


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), allow_nan=True)


def write_atomically(path: Path, data: bytes) -> None:
    """Temporary file, flushed to disk, renamed over ``path``: never a torn checkpoint."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("wb") as stream:
        stream.write(data)
        stream.flush()
        os.fsync(stream.fileno())
    os.replace(tmp, path)


class Writer:
    """Writes checkpoints off the search's path, so their text and disk time overlap the next
    generation.

    The state is encoded synchronously (into plain data the search no longer touches), unless
    the caller hands over a snapshot it owns no more (see :meth:`save`); the encoding of such
    a one, the JSON text, the write, fsync and rename are a :class:`~evolve.run.chores.Chore` for
    :attr:`runner` (a thread of its own by default; the run's evaluator runs it while it waits
    for its development threads, whose kernels release the GIL). A new checkpoint waits for the
    previous one, and leaving the ``with`` block waits for the last, so the newest complete checkpoint is
    always on disk or coming.
    :meth:`due` says whether the next generation's state is to be written (the first
    always, then one each ``interval`` seconds); the first is written before :meth:`save`
    returns.
    """

    def __init__(self, folder: Path, identity: dict[str, Any], interval: float = 0.0) -> None:
        self.path = folder / CHECKPOINT
        self.identity = identity
        self.interval = interval
        self.last: float | None = None  #: when the last checkpoint began (monotonic)
        self.generation: object = None  #: the generation it holds
        self.pending: Chore | None = None
        #: what runs a checkpoint's text and write: a thread of its own unless the search has a
        #: better moment (see :meth:`evolve.run.evaluator.Evaluator.defer`)
        self.runner: Runner = in_a_thread
        self.error: BaseException | None = None
        self.memo = EncodeMemo()  #: encodings of the tasks and plans the last checkpoint held

    def due(self) -> bool:
        """Whether a checkpoint is due now: none yet, or ``interval`` seconds since the last began."""
        return self.last is None or time.monotonic() - self.last >= self.interval

    def save(self, state: dict[str, Any], events_bytes: int, events_sha256: str) -> None:
        """Checkpoint ``state``, a snapshot the caller never changes again (see
        :meth:`evolve.search.algorithm.Algorithm.state`): its encoding (tens of milliseconds of
        Python for a population of big plans) joins the chore that writes it, off the search's
        path."""
        first = self.last is None
        self.last = time.monotonic()
        self.generation = state.get("generation")
        self.wait()  # the memo is the previous chore's until it is done
        job = functools.partial(self.encode_and_write, state, events_bytes, events_sha256)
        # pending before it is handed on: wait() then always finds it, and runs it itself if
        # nobody else has yet (it runs once)
        self.pending = Chore(job)
        self.runner(self.pending)
        if first:
            # the first is on disk before the next generation starts: with checkpoints a second
            # apart, nothing else would make a run killed after its first generation resumable
            self.wait()

    def encode(self, state: dict[str, Any]) -> Any:
        """``state`` encoded, reusing what the last checkpoint encoded of the same objects."""
        body = encode_state(state, self.memo)
        self.memo.rotate()
        return body

    def encode_and_write(self, state: dict[str, Any], events_bytes: int, events_sha256: str) -> None:
        try:
            body = self.encode(state)
            write_atomically(self.path, serialize(body, self.identity, events_bytes, events_sha256))
        except BaseException as exc:  # reported by wait(), in the search's thread
            self.error = exc

    def wait(self) -> None:
        """The last checkpoint on disk: written now, unless it was written or is being written."""
        if self.pending is not None:
            self.pending.run()
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
        if (folder / LEGACY_CHECKPOINT).exists():
            raise CheckpointError(
                f"{folder / LEGACY_CHECKPOINT}: a checkpoint in the old pickle format, which is "
                "never loaded (a pickle can run code); start a new run folder")
        raise CheckpointError(f"{path}: no checkpoint to resume from (the run stopped before its "
                              "first generation ended); start it again without --resume")
    try:
        if path.stat().st_size > MAX_BYTES:
            raise CheckpointError(f"{path}: larger than {MAX_BYTES >> 20} MiB, not a checkpoint")
        blob = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint ({type(exc).__name__})") from None
    if not isinstance(blob, dict) or blob.get("magic") != MAGIC:
        raise CheckpointError(f"{path}: not an evolve checkpoint")
    if blob.get("version") != VERSION:
        raise CheckpointError(f"{path}: checkpoint version {blob.get('version')}, expected {VERSION}")
    theirs = blob.get("identity", {})
    if not isinstance(theirs, dict):
        raise CheckpointError(f"{path}: not an evolve checkpoint (identity)")
    differs = sorted(k for k in set(identity) | set(theirs) if identity.get(k) != theirs.get(k))
    if differs:
        raise CheckpointError(
            f"{path}: checkpoint belongs to another run (different {', '.join(differs)}); "
            "resume with the same problem and options, or start a new run folder")
    size, digest = blob.get("events_bytes"), blob.get("events_sha256")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0 or not isinstance(digest, str):
        raise CheckpointError(f"{path}: not an evolve checkpoint (events)")
    try:
        state = decode(blob.get("state"))
    except (StateError, RecursionError, ValueError, TypeError) as exc:
        raise CheckpointError(f"{path}: corrupt checkpoint state ({exc})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: corrupt checkpoint state (not a mapping)")
    return Checkpoint(state=state, events_bytes=size, events_sha256=digest)


def checkpointed_generation(folder: Path) -> int | None:
    """The generation ``folder``'s checkpoint holds (None: no readable checkpoint), for messages."""
    try:
        generation = json.loads((folder / CHECKPOINT).read_bytes()).get("generation")
    except (OSError, ValueError, AttributeError):
        return None
    return generation if isinstance(generation, int) and not isinstance(generation, bool) else None


def check_events(path: Path, restored: Checkpoint) -> hashlib._Hash:
    """Refuse to resume onto an events log that no longer begins with what the checkpoint saw
    (emptied, deleted, cut or edited), and return the digest to go on from."""
    if not path.is_file():
        raise CheckpointError(f"{path}: missing; the checkpoint needs the events log it was "
                              "written with, so this run cannot be resumed")
    digest = hashlib.sha256()
    remaining = restored.events_bytes
    with path.open("rb") as stream:
        while remaining > 0:
            chunk = stream.read(min(remaining, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            remaining -= len(chunk)
    if remaining > 0 or digest.hexdigest() != restored.events_sha256:
        raise CheckpointError(f"{path}: changed since the last checkpoint (emptied, cut or "
                              "edited), so this run cannot be resumed; start a new run folder")
    return digest
