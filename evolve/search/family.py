"""Problem families: which algorithm searches a problem, and what a run needs to know of it.

A run (:func:`evolve.run.folder.run_search`) asks the registered families in
turn (:func:`evolve.problems.family_of`) which one claims the problem and the
caller's request; the family then names itself in the checkpoint's identity,
says what the run's workers must be able to develop, and builds the algorithm.
Nothing in the run asks what kind of problem it holds: a new family is a new
entry in the registry, not a new branch in the runner.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evolve.fitness.base import Fitness
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.search.algorithm import Algorithm, EventSink
from evolve.search.develop import Developer, Development
from evolve.search.loop import Evaluator, Proposer
from evolve.search.operators import OperatorSet
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking


@dataclass(frozen=True)
class Request:
    """What the caller of a run asked for beyond the options: the problem, and optionally
    the operators, a proposer with its share of the children, seed plans, and a fallback
    for an HTN domain's undecomposable tasks (its type is that family's)."""

    problem: Problem
    operators: OperatorSet | None = None
    proposer: Proposer | None = None
    proposer_share: float = 0.0
    seeds: tuple[Plan, ...] = ()
    fallback: Any = None
    steps: tuple[str, ...] = ()
    """An HTN problem's plan found before its search (its actions' names, in order), which the
    search's first plan follows when its domain decomposes to it."""


BestSink = Callable[[Plan, str | None], object]
"""Hears each better plan as soon as a search finds it, with, for an HDDL problem, the plan in
the competition's format (what its verifiers read); the run writes it to its folder at once."""


class Workers(Evaluator, Developer, Protocol):
    """The run's evaluator: scores plans and develops children
    (see :class:`evolve.run.evaluator.Evaluator`)."""


class Family(Protocol):
    """One problem family's answers to a run."""

    name: str

    def claims(self, request: Request) -> bool:
        """Whether this family searches ``request``'s problem; raises
        :class:`~evolve.model.errors.UsageError` for a request it owns but cannot honour."""
    def resolve(self, request: Request) -> Request:
        """``request`` with the family's defaults filled in (e.g. the operators), once."""
    def identity(self, request: Request) -> str:
        """The algorithm and its settings as text, part of a checkpoint's identity."""
    def development(self, request: Request) -> Development | None:
        """What the run's workers develop for it (None: nothing)."""
    def prepare(self, request: Request, fitnesses: Sequence[Fitness]) -> None:
        """Compile what the search would compile on first use (kernels, seconds that no deadline
        can cut), before a ``max_seconds`` clock starts."""
    def build(self, request: Request, workers: Workers, ranking: Ranking, options: SearchOptions,
              emit: EventSink, on_best: BestSink) -> Algorithm:
        """The algorithm, ready to :func:`~evolve.search.algorithm.minimize`; one that finds
        better plans as it goes may hand them to ``on_best`` at once (an anytime search)."""
