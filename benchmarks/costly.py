"""Objectives of a known cost, for the parallel benchmarks: they spin, they do not sleep,
so they really occupy a core the way a simulation-based fitness would."""

from __future__ import annotations

import time

from evolve.model.plan import Plan
from evolve.model.problem import Problem
from fitness import Context, fitness


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@fitness(direction="min", low=0)
def cheap(problem: Problem, plan: Plan, context: Context) -> float:
    """About 50 microseconds of work."""
    spin(50e-6)
    return float(len(plan.tasks))


@fitness(direction="min", low=0)
def expensive(problem: Problem, plan: Plan, context: Context) -> float:
    """About 10 milliseconds of work."""
    spin(10e-3)
    return float(len(plan.tasks))
