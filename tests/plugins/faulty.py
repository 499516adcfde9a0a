"""Objectives that misbehave on purpose, for the fault-tolerance tests.

Which plans they pick on is decided by the plan's hash, so the same candidates
fail whatever worker evaluates them.
"""

from __future__ import annotations

import os
import time

from evolve.model.plan import Plan, plan_hash
from evolve.model.problem import Problem
from fitness import Context, fitness


def unlucky(plan: Plan) -> bool:
    """Roughly one plan in four."""
    return int(plan_hash(plan)[:8], 16) % 4 == 0


@fitness(direction="min", low=0)
def raises(problem: Problem, plan: Plan, context: Context) -> float:
    if unlucky(plan):
        raise RuntimeError("this objective fails on purpose")
    return float(len(plan.tasks))


@fitness(direction="min", low=0)
def hangs(problem: Problem, plan: Plan, context: Context) -> float:
    if unlucky(plan):
        time.sleep(600)
    return float(len(plan.tasks))


@fitness(direction="min", low=0)
def exits(problem: Problem, plan: Plan, context: Context) -> float:
    if unlucky(plan):
        os._exit(1)
    return float(len(plan.tasks))


@fitness(direction="min", low=0)
def tasks(problem: Problem, plan: Plan, context: Context) -> float:
    return float(len(plan.tasks))


@fitness(direction="min", low=0)
def always_raises(problem: Problem, plan: Plan, context: Context) -> float:
    raise RuntimeError("this objective always fails")
