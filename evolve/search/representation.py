"""What a problem family gives the one genetic loop (:class:`evolve.search.loop.Search`).

A *representation* is a family's genomes and what can be done with them, each
step returning plain values: the first population, a crossover of two genomes, a
mutation of one, and the decoding of a genome into a plan. A plan of a tool
catalog is its own genome (:class:`evolve.search.plans.Plans`); an HTN domain's
genome is the planner's method choices, decoded by a run of the planner
(:class:`evolve.problems.htn.algorithm.HtnChoices`). The loop does the rest for
every family alike: a random stream per child, parents drawn by rank, copies
retried, each distinct plan scored once, the best kept, checkpoints.

A representation whose genomes are plans may also ask for a local improvement
(``improves``): the loop hands each child's first variation to its developer (the
run's evaluator, which improves it in its workers; see :mod:`evolve.search.develop`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from evolve.fitness.evaluation import Evaluation
from evolve.model.plan import Plan
from evolve.search.algorithm import Candidate
from evolve.search.develop import Developed, Work

Genome = Any
"""What a representation varies: a :class:`~evolve.model.plan.Plan`, a tuple of choices, ..."""

Develop = Callable[[Sequence[Work]], list[Developed]]
"""The loop's developer, lent to a representation for its first population."""


@dataclass(frozen=True)
class Offspring:
    """A child before scoring. ``plan`` is ``None`` when a proposer could not make one; its
    ``meta`` (e.g. why an LLM patch was rejected) then rides on the fallback child's event.
    ``evaluation`` is the plan's verdict when whoever developed it scored it too; ``genome``
    what its children vary (``None``: the plan itself); ``detail`` what decoding made besides the
    plan, for the representation's own use (an HTN decomposition), never in an event or a
    checkpoint. A decoding the run's deadline cut short has no plan."""

    plan: Plan | None
    parents: tuple[str, ...] = ()
    operator: str = "construct"
    meta: dict[str, Any] = field(default_factory=dict)
    evaluation: Evaluation | None = None
    genome: Genome = None
    detail: Any = None


class Representation(Protocol):
    """A problem family's genomes, for :class:`evolve.search.loop.Search`; see the module
    docstring. ``crossover_rate`` is ``None`` when the family has no crossover (then no random
    number is drawn for one)."""

    crossover_rate: float | None
    improves: bool

    def first(self, size: int, seed: int, develop: Develop) -> list[Offspring]:
        """Generation 0: up to ``size`` children, each with its genome (or its plan as one)."""
    def crossover(self, a: Genome, b: Genome,
                  rng: np.random.Generator) -> tuple[Genome, str] | None:
        """A mix of two parents' genomes and the operator's name, or None if none was made."""
    def mutate(self, genome: Genome, rng: np.random.Generator) -> tuple[Genome, str] | None:
        """A changed genome and the operator's name, or None if nothing could change."""
    def decode(self, genome: Genome, rng: np.random.Generator, parents: tuple[str, ...],
               operator: str) -> Offspring:
        """The child of ``genome``: its plan (the genome itself, or what decoding made)."""
    def notes(self, digest: str, child: Offspring) -> dict[str, Any]:
        """What the event of the candidate ``child`` becomes (``digest``, its plan's hash) should
        also say (e.g. what a fallback was asked); the representation may keep what it needs
        of the child here."""
    def ranked(self, population: Sequence[Candidate]) -> None:
        """The population at a generation's end, best first (a representation may forget what
        it kept for plans no longer in it, or hand a better best plan on at once)."""
    def stop_at(self, deadline: float) -> None:
        """The :func:`time.perf_counter` time the run's ``max_seconds`` end at: a representation
        whose decoding can stop there does (then :meth:`out_of_time`); one that cannot ignores it."""
    def out_of_time(self) -> bool:
        """Whether the deadline has come for decoding: the loop drafts no more children."""
    def at_bound(self) -> str | None:
        """A bound of the family's own that the search reached, described; or None."""
    def state(self) -> Any:
        """The representation's own part of a checkpoint, as a snapshot."""
    def restore(self, state: Any) -> None: ...
    def summary(self) -> dict[str, Any]:
        """What a run's summary should also hold."""


def child_rng(seed: int, generation: int, index: int) -> np.random.Generator:
    """The random stream of one child, independent of every other child's."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(generation, index)))


def choose(weighted: Sequence[tuple[Any, float]], rng: np.random.Generator) -> Any:
    """One item of ``(item, weight)`` pairs, drawn with probability proportional to its weight."""
    weights = np.array([w for _, w in weighted], dtype=float)
    return weighted[int(rng.choice(len(weighted), p=weights / weights.sum()))][0]
