"""The planning problem: a catalog of tools and what a plan must achieve.

Every class here is a frozen dataclass: a problem is built once, pickled once and
shared by every worker; nothing in the engine changes it (the mappings inside are
plain dicts only so that they pickle under every joblib backend).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Risk = Literal["read", "write", "approval"]
RISKS: tuple[Risk, ...] = ("read", "write", "approval")


@dataclass(frozen=True)
class Tool:
    """One entry of the catalog: what a task running this tool needs, makes and costs."""

    name: str
    duration: float
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    scope: str | None = None
    risk: Risk = "read"
    cost: float = 0.0
    uses: Mapping[str, float] = field(default_factory=dict)
    llm_calls: int = 0
    description: str = ""

    def __hash__(self) -> int:
        return hash((self.name, self.duration, self.inputs, self.outputs, self.scope, self.risk))


@dataclass(frozen=True)
class Limits:
    """Run limits; ``None`` means unlimited."""

    max_parallel: int | None = None
    max_tasks: int | None = None


@dataclass(frozen=True)
class Policy:
    """Rules the validator enforces on top of the data contracts."""

    write_requires_approval: bool = False


@dataclass(frozen=True)
class Problem:
    """A planning problem. Build it with :func:`evolve.load_problem` or directly."""

    tools: Mapping[str, Tool]
    initial: tuple[str, ...] = ()
    criteria: tuple[str, ...] = ()
    scopes: tuple[str, ...] | None = None
    limits: Limits = Limits()
    resources: Mapping[str, float] = field(default_factory=dict)
    policy: Policy = Policy()
    template: object | None = None  # a Plan; typed loosely to avoid an import cycle
    name: str = "problem"
    objective: str = ""

    def __hash__(self) -> int:
        return hash((self.name, tuple(self.tools), self.initial, self.criteria))

    def scope_granted(self, scope: str | None) -> bool:
        """A tool without a scope needs no grant; ``scopes: None`` grants everything."""
        return scope is None or self.scopes is None or scope in self.scopes

    def producers(self, fact: str) -> list[Tool]:
        """Tools whose outputs include ``fact``, in catalog order."""
        return [tool for tool in self.tools.values() if fact in tool.outputs]
