"""A task's status in a run: one set of names for the executor, its journal, the condition
language's ``failed($t9)`` and ``status($t9)``, and every report that shows a run.

Declared here, in the lowest layer that reads a status (the condition evaluator), so that no
layer spells the set again. A :class:`~enum.StrEnum` member *is* its text: it is written to
the journal, JSON and the terminal as ``"done"``, compares equal to ``"done"`` (a status read
back from the journal or typed in a condition) and hashes as it does.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final


class TaskStatus(StrEnum):
    """A task's state in the journal."""

    PENDING = "pending"
    DISPATCHED = "dispatched"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    UNKNOWN = "unknown"
    """A write whose fate no one can tell (its call was cut off and its tool has no
    ``reconcile``)."""
    INVALIDATED = "invalidated"
    """A revision took it out of the plan."""
    WAITING = "waiting"
    """A task a person owns (``by: human``) waits for their decision or answer."""


TASK_STATUSES: Final[tuple[TaskStatus, ...]] = tuple(TaskStatus)
SATISFIED: Final[frozenset[TaskStatus]] = frozenset({TaskStatus.DONE, TaskStatus.SKIPPED})
"""Statuses a dependent may go on from (a skipped task's outputs read as never made)."""
ENDED_WITHOUT_OUTPUTS: Final[frozenset[TaskStatus]] = frozenset({TaskStatus.FAILED, TaskStatus.UNKNOWN})
"""The statuses ``failed($t9)`` is true of: the task ended without its outputs."""
ENDED: Final[frozenset[TaskStatus]] = SATISFIED | ENDED_WITHOUT_OUTPUTS
"""Statuses a task keeps whatever a revision of the plan says: they happened."""
