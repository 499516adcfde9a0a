"""The HTN planner's search nodes: a state, the tasks still to do, and what was done to get there.

Both of :class:`~evolve.problems.htn.planner.Planner`'s searches (depth-first and best-first)
expand these and keep millions of them on large grounded domains, so they share structure: the
pending tasks, the steps taken, the choices made and the methods applied are linked lists (a
child pushes onto its parent's in O(1): as tuples, a plan of n steps cost n^2 / 2 copied entries
on its way, and a node of a long plan held its own copy), and a node is turned into a plan only
once nothing is pending (:func:`finished`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from evolve.problems.htn.decomposition import Choice, Decomposition, Step
from evolve.problems.htn.domain import Value


@dataclass(frozen=True)
class Pending:
    """A task still to do (a linked list: pushing subtasks shares the rest)."""

    name: str
    path: str
    depth: int
    trail: tuple[tuple[str, bool, int], ...]
    rest: Pending | None

    @functools.cached_property
    def network(self) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """The names and depths of this task and all after it (made once per task, from the
        first one after it already made: no recursion, however long the list)."""
        fresh: list[Pending] = []
        task: Pending | None = self
        while task is not None and "network" not in task.__dict__:
            fresh.append(task)
            task = task.rest
        names, depths = task.network if task is not None else ((), ())
        for item in reversed(fresh):
            names, depths = (item.name, *names), (item.depth, *depths)
            item.__dict__["network"] = (names, depths)
        return names, depths


Applied = tuple[tuple[str, str, str], "Applied"] | None
"""The methods applied so far, newest first (a linked list, so a node extends it in O(1))."""
Steps = tuple[Step, "Steps"] | None
"""The steps taken so far, newest first."""
Choices = tuple[Choice, "Choices"] | None
"""The choices made so far, newest first."""

T = TypeVar("T")


@dataclass(frozen=True)
class Node:
    pending: Pending | None
    state: Mapping[str, Value]
    steps: Steps = None
    choices: Choices = None
    applied: Applied = None
    recent: frozenset[str] = frozenset()
    """The compound tasks decomposed since the last primitive step on this branch (the state
    has not changed since): one of them met again is a recursion that made no progress."""
    length: int = 0
    """How many steps ``steps`` holds."""


def network_key(node: Node) -> tuple[tuple[object, tuple[str, ...]], tuple[int, ...]]:
    """What a node is for pruning (its state and remaining tasks) and its tasks' depths."""
    names, depths = node.pending.network if node.pending is not None else ((), ())
    return (frozenset(node.state.items()), names), depths


SHORT_PATH = 6
"""Segments of a task's path a message shows in full: a longer one (a recursion hundreds of
decompositions deep is tens of kilobytes) shows its first two and its last three."""


def short_path(path: str) -> str:
    """``path`` for a message: ``a/b/... 412 more .../x/y/z`` when it is long."""
    parts = path.split("/")
    if len(parts) <= SHORT_PATH:
        return path
    return "/".join((*parts[:2], f"... {len(parts) - 5} more ...", *parts[-3:]))


def unlink(linked: tuple[T, Any] | None) -> tuple[T, ...]:
    """A linked list (newest first) as a tuple, oldest first."""
    out = []
    while linked is not None:
        out.append(linked[0])
        linked = linked[1]
    return tuple(reversed(out))


def finished(node: Node, nodes: int) -> Decomposition:
    """The plan of a node with nothing pending, found at the search's ``nodes``-th node: its
    choices deduplicated by key (the last made wins) and sorted, as a
    :data:`~evolve.problems.htn.decomposition.Genome` is."""
    genome = tuple(sorted({c.key: c for c in unlink(node.choices)}.values(), key=lambda c: c.key))
    return Decomposition(unlink(node.steps), genome, node.state, nodes, unlink(node.applied))
