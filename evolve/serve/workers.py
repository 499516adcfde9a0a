"""``--resume-on-decision``: the server resumes a run a person decided on, in a worker it owns.

A worker is a subprocess, ``evolve execute --resume RUN`` (the same command a person would type),
so a resumed run is exactly a resumed run: its own process, its own journal transactions, a
crash that kills it and not the server. One worker per run at a time: a decision taken while the
run's worker is going on resumes the run once more when it ends. At shutdown the workers get a
grace period, then are stopped; a stopped run is resumable like any killed run.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evolve import defaults


@dataclass(frozen=True)
class Ended:
    """How a run's last worker ended: its exit status (0 done, 4 waiting again, ...) and the tail
    of what it printed."""

    run: str
    status: int | None
    at: float
    tail: str


def resume_command(folder: Path) -> list[str]:
    return [sys.executable, "-m", "evolve", "execute", "--resume", str(folder)]


class Workers:
    """The resume workers of one server, run by its event loop."""

    def __init__(self, command: Sequence[str] | None = None) -> None:
        self.prefix = list(command) if command is not None else None
        self.procs: dict[str, asyncio.subprocess.Process] = {}
        self.again: set[str] = set()
        self.tasks: set[asyncio.Task[None]] = set()
        self.ended: dict[str, Ended] = {}

    def running(self) -> list[str]:
        return list(self.procs)

    def command(self, folder: Path) -> list[str]:
        return [*self.prefix, str(folder)] if self.prefix is not None else resume_command(folder)

    def resume(self, run: str, folder: Path) -> None:
        """Resume ``run`` now, or once more after its worker ends."""
        if run in self.procs:
            self.again.add(run)
            return
        task = asyncio.get_running_loop().create_task(self.work(run, folder))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def work(self, run: str, folder: Path) -> None:
        while True:
            proc = await asyncio.create_subprocess_exec(
                *self.command(folder), stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            )
            self.procs[run] = proc
            try:
                out, _ = await proc.communicate()
            finally:
                self.procs.pop(run, None)
            text = out.decode("utf-8", "replace") if out else ""
            self.ended[run] = Ended(run, proc.returncode, time.time(), text[-2000:])
            if run not in self.again:
                return
            self.again.discard(run)

    async def close(self, grace: float = defaults.SERVE_SHUTDOWN_GRACE) -> None:
        """Let the workers finish for ``grace`` seconds, then stop them."""
        self.again.clear()
        if self.tasks:
            _, late = await asyncio.wait(set(self.tasks), timeout=grace)
            if late:
                for proc in list(self.procs.values()):
                    if proc.returncode is None:
                        proc.terminate()
                await asyncio.wait(late, timeout=grace)
