"""Python's cyclic garbage collector: held back while a big document becomes objects, and
tuned for a command that runs one search (:func:`settle_for_one_search`).

Reading a problem of thousands of facts allocates hundreds of thousands of containers and frees
almost none of them. The collector counts allocations, not garbage, so it runs full passes over
everything built so far again and again and finds nothing: at 3,000 facts loading took twice
as long with it running (0.95-1.07 s against 0.44 s, measured). Reference counting still frees
whatever is dropped meanwhile; only cycles wait for the collector's next pass.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from evolve import defaults


class Pauses:
    """The holds on the collector across threads: the first hold switches it off (remembering
    whether it ran), the last one out switches it back on if it did. Per-call state would not
    do: a thread that paused second and finished last would leave it off for good."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holds = 0
        self.resume = False

    @contextmanager
    def paused(self) -> Iterator[None]:
        with self.lock:
            if self.holds == 0:
                self.resume = gc.isenabled()
                gc.disable()
            self.holds += 1
        try:
            yield
        finally:
            with self.lock:
                self.holds -= 1
                if self.holds == 0 and self.resume:
                    gc.enable()


PAUSES = Pauses()
"""The process's one record of holds (the collector is one per process too)."""


def collector_paused() -> AbstractContextManager[None]:
    """Hold the cyclic collector back for the block, from any thread; once no block holds it,
    it runs again if it ran before the first (a caller that switched it off keeps it off)."""
    return PAUSES.paused()


def settle_for_one_search(young: int = defaults.GC_YOUNG_THRESHOLD) -> None:
    """Tune the collector for a command that loads one problem and then searches it.

    Every object alive now moves out of the collector's sight for the rest of the process
    (the loaded problem lives to the end): the search's full passes then go over what the
    search made only (at 3,000 facts 0.04-0.06 s each instead of 0.08-0.13 s). And the youngest
    generation is collected every ``young`` allocations instead of every 700, which makes full
    passes rare: a search allocates plans by the thousand and keeps most, so frequent passes
    find little, and each holds the interpreter lock against the development threads' Python.
    Measured at 3,000 facts, two jobs, five runs each in turns (same events): freezing 5.00 s
    against 5.22 s, the threshold then 4.79 s against 4.97 s; one job unchanged by either.

    For a process that loads one problem and ends after its search (a command, a script), not
    for a long-lived one that loads many: a frozen cycle that later becomes garbage is never
    collected."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(young, middle, old)
