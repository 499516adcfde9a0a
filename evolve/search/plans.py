"""Plans of a tool catalog as a representation of the one genetic loop.

A plan is its own genome: the structural operators (or any :class:`OperatorSet`)
vary it, the operators' improver climbs it (in the developer's workers), and
decoding it is the identity. The first population is the problem's template,
then the seeds (plans drafted elsewhere, e.g. by a model), then plans built by
the operators' initializer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from evolve.model.plan import Plan, plan_hash
from evolve.model.problem import Problem
from evolve.search.algorithm import Candidate
from evolve.search.develop import Work
from evolve.search.operators import OperatorSet, operator_name
from evolve.search.representation import Develop, Genome, Offspring, child_rng, choose


class Plans:
    """The :class:`~evolve.search.representation.Representation` of plans of a catalog."""

    def __init__(self, problem: Problem, operators: OperatorSet, seeds: Sequence[Plan] = ()) -> None:
        self.problem = problem
        self.operators = operators
        self.seeds = tuple(seeds)
        self.crossover_rate = operators.crossover_rate if operators.crossovers else None
        self.improves = operators.improve is not None

    def first(self, size: int, seed: int, develop: Develop) -> list[Offspring]:
        """The template (when given), the seeds (being in the first population, the best plan
        found is never worse than theirs), then plans made by the operators' initializer
        (randomised backward chaining by default), distinct while distinct ones can be found."""
        plans: list[Offspring] = []
        seen: set[str] = set()
        if isinstance(self.problem.template, Plan):
            plans.append(Offspring(self.problem.template, (), "template"))
            seen.add(plan_hash(self.problem.template))
        for given in self.seeds:
            if plan_hash(given) not in seen and len(plans) < size:
                plans.append(Offspring(given, (), "seed"))
                seen.add(plan_hash(given))
        attempts = 0
        while len(plans) < size:
            # as many first plans as are missing, developed at once; a surplus is dropped unseen
            batch = [Work(child_rng(seed, 0, attempts + i)) for i in range(size - len(plans))]
            for made in develop(batch):
                attempts += 1
                plan = made.plan if made.plan is not None else Plan()
                digest = plan_hash(plan)
                if digest not in seen or attempts > 2 * size:
                    seen.add(digest)
                    plans.append(Offspring(plan, (), operator_name(self.operators.initial),
                                           evaluation=made.evaluation))
                    if len(plans) == size:
                        break
        return plans

    def crossover(self, a: Genome, b: Genome, rng: np.random.Generator) -> tuple[Genome, str] | None:
        cross = choose(self.operators.crossovers, rng)
        mixed = cross(self.problem, a, b, rng)
        return None if mixed is None else (mixed, operator_name(cross))

    def mutate(self, genome: Genome, rng: np.random.Generator) -> tuple[Genome, str] | None:
        mutation = choose(self.operators.mutations, rng)
        mutated = mutation(self.problem, genome, rng)
        return None if mutated is None else (mutated, operator_name(mutation))

    def decode(self, genome: Genome, rng: np.random.Generator, parents: tuple[str, ...],
               operator: str) -> Offspring:
        return Offspring(genome, parents, operator)

    def notes(self, digest: str, child: Offspring) -> dict[str, Any]:
        return {}

    def ranked(self, population: Sequence[Candidate]) -> None:
        pass  # the run writes the best plan at its end

    def stop_at(self, deadline: float) -> None:
        pass  # a generation of plans is made whole; the budget ends the run between generations

    def out_of_time(self) -> bool:
        return False

    def at_bound(self) -> str | None:
        return None  # no bound of the default ranking is computed here

    def state(self) -> None:
        return None  # everything it holds is given anew on resume

    def restore(self, state: Any) -> None:
        pass

    def summary(self) -> dict[str, Any]:
        return {}
