"""What a run of a plan costs, in dollars: tool fees plus LLM calls at a price per call.

The built-ins ``cost`` and ``llm_calls`` are two objectives in two units; a team
that pays for both wants one number to minimise, priced its own way. This is
that number, packaged so that ``pip install`` is all it takes to offer it.
"""

from __future__ import annotations

from evolve import Plan, Problem
from fitness import Context, fitness

PRICE_PER_LLM_CALL = 0.01
"""Dollars per LLM call, on top of the tool's own ``cost`` (a module constant, not a setting
changed at run time: workers import this module afresh and must see the same price)."""


@fitness(direction="min", low=0)
def dollars(problem: Problem, plan: Plan, context: Context) -> float:
    """Dollars one run costs: tool fees plus a price per LLM call."""
    total = 0.0
    for task in plan.tasks:
        tool = problem.tools.get(task.tool)
        if tool is not None:
            total += tool.cost + PRICE_PER_LLM_CALL * tool.llm_calls
    return total
