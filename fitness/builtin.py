"""The built-in objectives. They use exactly the contract that plugins use."""

from __future__ import annotations

from evolve.analysis import contributing_tasks, covered_criteria
from evolve.plan import Plan
from evolve.problem import Problem
from fitness.base import Context, fitness


@fitness(direction="min", low=0)
def validity(problem: Problem, plan: Plan, context: Context) -> float:
    """Number of validator errors (0 means the plan may run)."""
    return float(len(context.errors))


@fitness(direction="max", low=0, high=1)
def completeness(problem: Problem, plan: Plan, context: Context) -> float:
    """Fraction of success criteria produced by sound tasks."""
    if not problem.criteria:
        return 1.0
    return len(covered_criteria(problem, plan, context.errors)) / len(problem.criteria)


@fitness(direction="max", low=0, high=1)
def minimality(problem: Problem, plan: Plan, context: Context) -> float:
    """Fraction of tasks that serve some criterion (1 for the empty plan)."""
    if not plan.tasks:
        return 1.0
    return len(contributing_tasks(problem, plan)) / len(plan.tasks)


@fitness(direction="min", low=0)
def makespan(problem: Problem, plan: Plan, context: Context) -> float:
    """Finish time of the last task in the simulated schedule."""
    return context.schedule.makespan


BUILTINS = (validity, completeness, minimality, makespan)
DEFAULT_OBJECTIVES = ("validity", "completeness", "makespan", "minimality")
