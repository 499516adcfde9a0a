"""Wrappers around a search's initializer or improver, for the tests of where children are
developed: picklable (module-level classes), so a worker process can run them."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any


class Recorded:
    """Runs ``fn`` and leaves a file named by the pid of the process it ran in."""

    def __init__(self, fn: Any, folder: str) -> None:
        self.fn, self.folder = fn, folder
        self.name = getattr(fn, "__name__", "recorded")

    def __call__(self, *args: Any) -> Any:
        Path(self.folder, str(os.getpid())).touch()
        return self.fn(*args)


class DiesInWorkers:
    """Runs ``fn`` in the process that made it, and kills any other process it is run in."""

    def __init__(self, fn: Any) -> None:
        self.fn, self.home = fn, os.getpid()
        self.name = getattr(fn, "__name__", "dies")

    def __call__(self, *args: Any) -> Any:
        if os.getpid() != self.home:
            os._exit(3)
        return self.fn(*args)


class ThreadRecorded:
    """Runs ``fn`` and leaves a file named by the process id and the thread it ran in; as
    safe in threads as ``fn`` (each call touches a file of its own name), so marked so."""

    thread_safe = True

    def __init__(self, fn: Any, folder: str) -> None:
        self.fn, self.folder = fn, folder
        self.name = getattr(fn, "__name__", "thread-recorded")

    def __call__(self, *args: Any) -> Any:
        Path(self.folder, f"{os.getpid()}-{threading.current_thread().name}").touch()
        return self.fn(*args)
