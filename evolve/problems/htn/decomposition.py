"""What the HTN planner makes and reads back: its genome, the plan it decomposes to, or why none.

A :class:`Decomposition` is the primitive steps in order with the :class:`Choice` genome that
made them; a :class:`NoPlan` says which limit ended the search or that there is no plan. Kept
apart from the search (:mod:`evolve.problems.htn.planner`) because everything downstream (the
evolutionary search, the task graph, the HDDL plan writer, the validator) reads these values
and needs none of the search; :func:`replay` is the check of a decomposition's soundness that
shares nothing with the planner either.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from evolve.problems.htn.domain import Domain, State, Value, first_failing, holds, show

ChoiceValue = int | tuple[int, ...]


@dataclass(frozen=True)
class Choice:
    """One decision: ``value`` is a method index (of ``options`` methods) or an order of
    ``options`` subtasks. Keys: ``<path>`` for methods, ``<path>>method`` for orders."""

    key: str
    value: ChoiceValue
    options: int


Genome = tuple[Choice, ...]
"""Choices sorted by key: hashable, comparable, and what a candidate's event shows."""


@dataclass(frozen=True)
class Step:
    """One primitive task of the plan. ``trail`` is its place in the tree: for every method
    above it, the method occurrence's key, whether its subtasks are ordered, and which subtask."""

    operator: str
    path: str
    trail: tuple[tuple[str, bool, int], ...] = ()


@dataclass(frozen=True)
class Decomposition:
    """A plan: the primitive steps in order, the choices that made it and the final state.
    ``methods`` is every method applied, in order, as (path of its task, task, method): the
    decomposition tree, empty methods included."""

    steps: tuple[Step, ...]
    genome: Genome
    state: Mapping[str, Value]
    nodes: int
    methods: tuple[tuple[str, str, str], ...] = ()
    limit: int = 0
    """The depth limit of the round that found it."""


@dataclass(frozen=True)
class NoPlan:
    """No plan: ``reason`` is ``no-plan`` (the space is exhausted: there is none), ``depth``
    (none within max_depth, which cut the search), ``budget`` (max_nodes ran out first) or
    ``seconds`` (the planner's deadline, a run's ``--max-seconds``, came first), ``memory``
    (the machine's free memory ran low: :mod:`~evolve.problems.htn.memory`);
    ``blocked`` names what stopped the deepest attempt and ``limit`` the limit's value."""

    reason: str
    blocked: str
    nodes: int
    limit: int = 0

    def __str__(self) -> str:
        if self.reason == "budget":
            return (f"no plan within max_nodes {self.limit} (the node budget ran out; raise "
                    f"--max-nodes); deepest attempt: {self.blocked}")
        if self.reason == "seconds":
            return (f"no plan within max-seconds (the time ran out after {self.nodes} nodes; raise "
                    f"--max-seconds); deepest attempt: {self.blocked}")
        if self.reason == "memory":
            return (f"no plan before the memory ran out (after {self.nodes} nodes, {self.blocked}); "
                    "a problem this size needs a machine with more memory")
        if self.reason == "depth":
            return (f"no plan within max_depth {self.limit} (the depth limit cut the search; raise "
                    f"--max-depth); deepest attempt: {self.blocked}")
        return f"no plan: {self.blocked}"

    @property
    def stopped(self) -> bool:
        """Whether the search was stopped from outside (time, memory): not a property of what
        it searched."""
        return self.reason in ("seconds", "memory")

    @property
    def exhausted(self) -> bool:
        """Whether a limit ended the search (so a plan may still exist)."""
        return self.reason != "no-plan"


Outcome = Decomposition | NoPlan


class Chooser(Protocol):
    """Decides the choice points a genome leaves open (e.g. at random, for new individuals)."""

    def method(self, key: str, options: int) -> int: ...
    def order(self, key: str, size: int) -> tuple[int, ...]: ...


def replay(domain: Domain, steps: Sequence[Step], state: State | None = None) -> list[str]:
    """Every precondition that fails when ``steps`` are applied in order (empty: the plan is
    sound). The test oracle of soundness, and what ``validate-domain`` trusts."""
    current: dict[str, Value] = dict(domain.state if state is None else state)
    faults = []
    for i, step in enumerate(steps):
        operator = domain.operators[step.operator]
        if not holds(operator.pre, current):
            failing = first_failing(operator.pre, current)
            faults.append(f"step {i + 1} ({operator.name}) needs {show(failing or operator.pre)}")
        current = operator.effects.apply(current)
    return faults
