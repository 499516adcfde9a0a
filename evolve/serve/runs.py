"""The folder ``evolve serve`` shows: its run folders, what each is doing, what they wait for.

Only the direct children of RUNS_DIR are runs, each reached by its own name (one path segment,
never ``..``, never a symlink leading out of RUNS_DIR): :func:`run_folder` is the one way from
a name in a URL to a folder on disk. A run's status is read from the files its process writes
(``outcome.json`` and ``events.jsonl`` of an execution, ``summary.json`` of a search) and kept
until one of them changes, so a page over 1,000 runs stats files instead of parsing them.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.execute.inbox import pending_in
from evolve.execute.outcome import RunStatus
from evolve.execute.session import JOURNAL
from evolve.model.errors import EvolveError
from evolve.report.execution_data import EVENTS, OUTCOME

SUMMARY = "summary.json"
PROBLEM = "problem.json"
FORBIDDEN = ("", ".", "..")


@dataclass(frozen=True)
class RunInfo:
    """One run folder as the runs page lists it."""

    name: str
    kind: str
    """``execution`` (``evolve execute``) or ``search`` (``evolve run``)."""
    status: str
    """``running``, ``waiting``, ``completed`` or ``failed`` (an execution's own status otherwise)."""
    goal: str
    reason: str
    message: str
    updated: float
    """When one of its files last changed (seconds since the epoch): the runs sort newest first."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def run_folder(root: Path, name: str) -> Path | None:
    """The run folder ``name`` of ``root``, or ``None``: one path segment naming a folder whose
    real path is directly inside ``root``'s (so no ``..``, no absolute path, no symlink out)."""
    if name in FORBIDDEN or "/" in name or "\\" in name or "\x00" in name:
        return None
    folder = root / name
    try:
        real = folder.resolve(strict=True)
    except (OSError, RuntimeError):
        return None
    if real.parent != root.resolve() or not real.is_dir():
        return None
    return folder


def stamp(path: Path) -> tuple[int, int] | None:
    """A file's (modification time, size), or ``None`` when it is missing."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def read_object(path: Path) -> Mapping[str, Any]:
    """A JSON object from a run's file, or an empty one (a run being written is not an error)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        return {}
    return data if isinstance(data, Mapping) else {}


def goal_of(folder: Path, fallback: object) -> str:
    problem = read_object(folder / PROBLEM)
    objective = problem.get("objective") or problem.get("name") or fallback
    return "" if objective is None else str(objective)


def execution_info(name: str, folder: Path, events: tuple[int, int] | None,
                   outcome: tuple[int, int] | None) -> RunInfo:
    """An execution: its outcome's status, unless events were written after it (a session is
    going on: a resume), or there is no outcome yet (the first session has not ended)."""
    doc = read_object(folder / OUTCOME) if outcome is not None else {}
    going = not doc or (events is not None and outcome is not None and events[0] > outcome[0])
    status = RunStatus.RUNNING if going else str(doc.get("status", RunStatus.RUNNING))
    updated = max((s[0] for s in (events, outcome) if s is not None), default=0) / 1e9
    reason = "" if going else str(doc.get("reason", ""))
    message = "" if going else str(doc.get("message") or "")
    return RunInfo(name, "execution", status, goal_of(folder, doc.get("problem")), reason, message, updated)


def search_info(name: str, folder: Path, events: tuple[int, int] | None,
                summary: tuple[int, int] | None) -> RunInfo:
    """A search: completed once its summary is written, running before."""
    doc = read_object(folder / SUMMARY) if summary is not None else {}
    status = RunStatus.COMPLETED if doc else RunStatus.RUNNING
    updated = max(s[0] for s in (events, summary) if s is not None) / 1e9
    return RunInfo(name, "search", status, goal_of(folder, doc.get("problem") or name),
                   str(doc.get("stop_reason", "")), "", updated)


class Runs:
    """The runs of one RUNS_DIR, each read again only when its files change.

    ``running`` names the runs a worker of the server is resuming: they are running even before
    their first new event."""

    def __init__(self, root: Path, running: Callable[[], Iterable[str]] = tuple,
                 ttl: float = defaults.SERVE_SCAN_TTL) -> None:
        self.root = root
        self.running = running
        self.ttl = ttl
        self.scans: dict[str, tuple[float, Any]] = {}
        """The last scan of each kind (``all``, ``pending``) and when it was made."""
        self.lock = threading.Lock()
        self.infos: dict[str, tuple[tuple[Any, ...], RunInfo]] = {}
        self.pendings: dict[str, tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}
        self.errors: dict[str, str] = {}

    def names(self) -> list[str]:
        """The run folders' names: the folders directly in RUNS_DIR (read from the directory
        listing, no stat each), and the symlinks whose target is one of them too."""
        try:
            entries = list(os.scandir(self.root))
        except OSError:
            return []
        names = []
        for entry in entries:
            if entry.name in FORBIDDEN or entry.name.startswith("."):
                continue
            if entry.is_symlink():
                if run_folder(self.root, entry.name) is not None:
                    names.append(entry.name)
            elif entry.is_dir(follow_symlinks=False):
                names.append(entry.name)
        return sorted(names)

    def info(self, name: str) -> RunInfo | None:
        """Run ``name``'s line, read again only when its files changed (an execution's
        ``events.jsonl`` and ``outcome.json``, a search's and its ``summary.json``: two stats)."""
        folder = self.root / name
        with self.lock:
            cached = self.infos.get(name)
        kind = cached[1].kind if cached is not None else None
        events = stamp(folder / EVENTS)
        if kind == "execution":
            key: tuple[Any, ...] = (kind, events, stamp(folder / OUTCOME))
        elif kind == "search":
            key = (kind, events, stamp(folder / SUMMARY))
        else:
            key = ()
        if cached is not None and cached[0] == key:
            return cached[1]
        outcome, summary, journal = stamp(folder / OUTCOME), stamp(folder / SUMMARY), stamp(folder / JOURNAL)
        if journal is not None:
            info = execution_info(name, folder, events, outcome)
            key = ("execution", events, outcome)
        elif events is not None or summary is not None:
            info = search_info(name, folder, events, summary)
            key = ("search", events, summary)
        else:
            return None  # not a run folder (yet): not listed
        with self.lock:
            self.infos[name] = (key, info)
        return info

    def recent(self, kind: str, scan: Callable[[], Any]) -> Any:
        """``scan()``, or its result from less than ``ttl`` seconds ago (many pages and clients
        polling a folder of 1,000 runs cost one scan a second, not one each)."""
        now = time.monotonic()
        with self.lock:
            last = self.scans.get(kind)
        if last is not None and now - last[0] < self.ttl:
            return last[1]
        result = scan()
        with self.lock:
            self.scans[kind] = (now, result)
        return result

    def forget(self) -> None:
        """Scan again at the next request (a decision was just made)."""
        with self.lock:
            self.scans.clear()

    def all(self) -> list[RunInfo]:
        """Every run, newest first; a run a worker of this server resumes is ``running``."""
        runs: list[RunInfo] = self.recent("all", self.scan)
        busy = set(self.running())
        return [r if r.name not in busy or r.status == RunStatus.RUNNING
                else RunInfo(r.name, r.kind, RunStatus.RUNNING, r.goal, "", "", r.updated) for r in runs]

    def scan(self) -> list[RunInfo]:
        found = (self.info(name) for name in self.names())
        return sorted((info for info in found if info is not None), key=lambda r: (-r.updated, r.name))

    def pending_of(self, name: str) -> list[dict[str, Any]]:
        """What run ``name`` waits for (``evolve pending --json``'s items, each with its ``run``),
        read from its journal again only when the journal changed."""
        folder = self.root / name
        wal = stamp(folder / f"{JOURNAL}-wal")
        # an empty write-ahead log is no change: a reader (this one) may create one
        key = (stamp(folder / JOURNAL), wal if wal is not None and wal[1] > 0 else None)
        with self.lock:
            cached = self.pendings.get(name)
        if cached is not None and cached[0] == key:
            return cached[1]
        try:
            items = [{"run": name, **item} for item in pending_in(folder)]
            error = None
        except EvolveError as exc:
            items, error = [], str(exc)
        with self.lock:
            self.pendings[name] = (key, items)
            if error is None:
                self.errors.pop(name, None)
            else:
                self.errors[name] = error
        return items

    def pending(self) -> list[dict[str, Any]]:
        """Every open approval and question across the runs, oldest first. Only the runs that
        may wait (``waiting``, or ``running``: a session under ``--wait``) have their journals read."""
        found: list[dict[str, Any]] = self.recent("pending", self.scan_pending)
        return found

    def scan_pending(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for info in self.all():
            if info.kind == "execution" and info.status in (RunStatus.WAITING, RunStatus.RUNNING):
                items.extend(self.pending_of(info.name))
        return sorted(items, key=lambda i: (str(i.get("since") or ""), i["run"], int(i["ask"])))
