"""The costly part of making a child, as a unit of work that can run anywhere.

A child is drafted in the search's own process (parents drawn, a crossover, a
mutation: microseconds) and then *developed*: hill-climbed by the operators'
improver, or, for the first population, built by the initializer. Development is
where the time goes (a tool-choice climb decodes and schedules a plan about
1,650 times), so it runs wherever the evaluator puts it (threads of the search's
own process when the operators allow it, the workers of a pool or cluster
otherwise), together with the evaluation of what it made; only plans, random
streams and verdicts cross a process boundary.

Development is a pure function of (problem, operators, plan, random stream), and
the stream comes back in the state the improver left it in, so the search
continues a child's attempts exactly as if it had climbed it itself: the result
is the same for any number of workers and any backend.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from evolve.fitness.base import Fitness
from evolve.fitness.evaluation import Evaluation, evaluate_plan
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.search.operators import Improver, Initializer, Kind, OperatorSet, Warmer, runs_in_threads


@dataclass(frozen=True)
class Development:
    """What a worker needs to develop children: sent once per worker, with the problem.
    ``warm`` loads what developing calls before the children need it, and ``kind`` names the
    development a child will get (see :attr:`~evolve.search.operators.OperatorSet.warm` and
    :attr:`~evolve.search.operators.OperatorSet.kind`)."""

    initial: Initializer
    improve: Improver | None
    warm: Warmer | None = None
    kind: Kind | None = None

    @classmethod
    def of(cls, operators: OperatorSet) -> Development:
        """The development of an operator set."""
        return cls(operators.initial, operators.improve, operators.warm, operators.kind)

    def kind_of(self, problem: Problem, work: Work) -> str | None:
        """The kind of development ``work`` will get, if the operators name it."""
        return None if self.kind is None else self.kind(problem, work.plan, work.rng)

    @property
    def threads(self) -> bool:
        """Whether the operators may run in threads side by side (see
        :func:`~evolve.search.operators.runs_in_threads`)."""
        return runs_in_threads(self.initial, self.improve)


@dataclass(frozen=True)
class Work:
    """One child to develop: ``plan`` improved with ``rng``, or, without a plan, a first plan
    made by the initializer from ``rng``."""

    rng: np.random.Generator
    plan: Plan | None = None


@dataclass(frozen=True)
class Developed:
    """What development made (``None``: the improver found no plan), the random stream as it
    left it, and the made plan's evaluation when it was asked for."""

    plan: Plan | None
    rng: np.random.Generator
    evaluation: Evaluation | None = None


def develop(problem: Problem, development: Development, work: Work,
            fitnesses: Sequence[Fitness] | None = None, timeout: float | None = None) -> Developed:
    """Develop one child; with ``fitnesses``, score what it made too (one trip for both)."""
    if work.plan is None:
        made: Plan | None = development.initial(problem, work.rng)
    elif development.improve is not None:
        made = development.improve(problem, work.plan, work.rng)
    else:
        made = work.plan
    evaluation = (evaluate_plan(problem, made, fitnesses, timeout)
                  if made is not None and fitnesses is not None else None)
    return Developed(made, work.rng, evaluation)


class Developer(Protocol):
    """Develops children, in order: the search's seam to wherever the work runs. The run's
    :class:`evolve.run.evaluator.Evaluator` is one (it also scores what it made, in the same
    trip); :class:`InProcess` is the default.

    ``work`` may be a generator that drafts each child as it is taken: a developer with threads
    starts developing the first while the search drafts the next."""

    def develop(self, work: Iterable[Work]) -> list[Developed]: ...


@dataclass(frozen=True)
class InProcess:
    """Development in this process, leaving the scoring to the search's evaluator."""

    problem: Problem
    development: Development

    def develop(self, work: Iterable[Work]) -> list[Developed]:
        return [develop(self.problem, self.development, item) for item in work]


class Undeveloped:
    """The developer of a representation that develops nothing (its children are made whole
    where they are drafted): asked for work, it refuses."""

    def develop(self, work: Iterable[Work]) -> list[Developed]:
        for _ in work:
            raise RuntimeError("this search's representation asks for no development")
        return []
