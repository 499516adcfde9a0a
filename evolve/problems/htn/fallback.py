"""The seam for a decomposition fallback (ChatHTN): who to ask when no method applies.

The planner owns structure and ordering; a fallback only proposes a list of
subtasks for one compound task in one state. The planner then judges the
proposal itself (every name known, every precondition true in order from the
current state, the task's ``achieves`` true at the end), so a fallback may be
as untrusted as a language model: :mod:`evolve.llm.htn` implements this
protocol with one, and the command line wires it in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from evolve.problems.htn.domain import CompoundTask, Operator, Value

REJECTIONS = ("unknown-operator", "precondition", "not-achieved", "no-subtasks")
"""Why the planner refuses a well-formed proposal; a fallback adds its own reasons for replies
it could not read (``parse``, ``schema``, ``empty``) or calls that failed (``timeout``, ...)."""


@dataclass(frozen=True)
class FallbackReply:
    """A proposed decomposition, or why there is none (``error``: one short word)."""

    subtasks: tuple[str, ...] | None
    reason: str = ""
    error: str | None = None
    detail: str = ""
    meta: Mapping[str, Any] = field(default_factory=dict)


class DecompositionFallback(Protocol):
    """Proposes subtasks for ``task`` in ``state`` from the known ``operators`` and ``tasks``."""

    name: str

    def decompose(self, task: str, state: Mapping[str, Value], operators: Mapping[str, Operator],
                  tasks: Mapping[str, CompoundTask]) -> FallbackReply: ...
