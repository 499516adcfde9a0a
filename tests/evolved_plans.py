"""Plans as the search loop's parents look: constructed, then randomly mutated."""

from __future__ import annotations

import numpy as np

from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.search.chaining import construct
from evolve.search.loop import choose
from evolve.search.operators import STRUCTURAL


def evolved(problem: Problem, rng: np.random.Generator | int, steps: int) -> Plan:
    """A constructed plan after ``steps`` random structural mutations, drawn from ``rng`` (or a
    fresh generator of that seed)."""
    rng = np.random.default_rng(rng) if isinstance(rng, int) else rng
    plan = construct(problem, rng)
    for _ in range(steps):
        child = choose(STRUCTURAL.mutations, rng)(problem, plan, rng)
        if child is not None:
            plan = child
    return plan
