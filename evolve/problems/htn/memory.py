"""Whether the machine is running out of memory, so that a search stops and says so.

A search that keeps its frontier (the first plan's best-first search keeps every open node and
its state) can grow by hundreds of megabytes a second; left alone, the kernel's OOM killer ends
the process with no word (AssemblyHierarchical depth19: 12 GB in 52 s, exit -9). The guard reads
the free memory the kernel reports (``MemAvailable`` in ``/proc/meminfo``, and a cgroup v2
limit's headroom when there is one), at most once every
:data:`~evolve.defaults.MEMORY_CHECK_SECONDS`, and trips for good once it is below
:data:`~evolve.defaults.MEMORY_FLOOR_SHARE` of the memory there is. Free memory, not this
process's size, is watched: runs side by side share the machine, and whichever grows into the
floor stops first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from evolve import defaults

MEMINFO = Path("/proc/meminfo")
CGROUP = Path("/sys/fs/cgroup")


def free_memory() -> tuple[int, int] | None:
    """(bytes free, bytes in all) as the kernel sees them, the tighter of the machine's and
    this process's cgroup's; None where neither can be read (not Linux)."""
    machine = meminfo()
    group = cgroup()
    if machine is None:
        return group
    if group is None:
        return machine
    return min(machine, group)


def meminfo() -> tuple[int, int] | None:
    try:
        fields = dict(line.split(":", 1) for line in MEMINFO.read_text().splitlines() if ":" in line)
        return int(fields["MemAvailable"].split()[0]) * 1024, int(fields["MemTotal"].split()[0]) * 1024
    except (OSError, KeyError, ValueError, IndexError):
        return None


def cgroup() -> tuple[int, int] | None:
    try:
        limit = (CGROUP / "memory.max").read_text().strip()
        if limit == "max":
            return None
        used = int((CGROUP / "memory.current").read_text())
        return max(0, int(limit) - used), int(limit)
    except (OSError, ValueError):
        return None


class MemoryGuard:
    """Trips, for good, once the free memory (``read``: bytes free and in all) falls below
    ``floor`` of it; reads at most every ``every`` seconds. Never trips where ``read`` says
    nothing."""

    def __init__(self, floor: float = defaults.MEMORY_FLOOR_SHARE,
                 every: float = defaults.MEMORY_CHECK_SECONDS,
                 read: Callable[[], tuple[int, int] | None] = free_memory) -> None:
        self.floor = floor
        self.every = every
        self.read = read
        self.next = 0.0
        self.tripped: tuple[int, int] | None = None
        """(bytes free, bytes in all) when it tripped."""

    def low(self) -> bool:
        if self.tripped is not None:
            return True
        now = time.perf_counter()
        if now < self.next:
            return False
        self.next = now + self.every
        seen = self.read()
        if seen is not None and seen[0] < self.floor * seen[1]:
            self.tripped = seen
        return self.tripped is not None

    def describe(self) -> str:
        """What tripped it, for a message."""
        free, total = self.tripped or (0, 0)
        return (f"the machine's free memory fell to {free / 2**30:.1f} GB of {total / 2**30:.1f} GB "
                f"(below {self.floor:.0%})")
