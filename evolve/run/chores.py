"""Background work that must happen exactly once, wherever it ends up running.

A checkpoint's JSON text and write need not hold up the search, but they hold the GIL while
they encode: in a thread of their own they slow whatever Python the search's thread runs next.
A :class:`Chore` lets whoever has a core to spare run it (a thread, or the search's own thread
while it waits for its development threads), and whoever needs it finished run it or wait for it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

Runner = Callable[["Chore"], None]
"""Takes a chore to run some time later (it must be run at most once: :meth:`Chore.run` sees to it)."""


class Chore:
    """A job run once: by the first :meth:`run`, which later calls wait for."""

    def __init__(self, job: Callable[[], None]) -> None:
        self.job = job
        self.lock = threading.Lock()
        self.done = False

    def run(self) -> None:
        with self.lock:
            if not self.done:
                self.done = True
                self.job()


def in_a_thread(chore: Chore) -> None:
    """The default runner: a daemon thread of its own, started now."""
    threading.Thread(target=chore.run, name="chore", daemon=True).start()
