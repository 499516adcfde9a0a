"""The plugin's own tests: the one-line conformance check, and one figure worked by hand."""

from __future__ import annotations

from pathlib import Path

from evolve_budget import dollars

from evolve import Plan, Task, load_problem
from fitness import Context
from fitness.testing import check_fitness

REFUND = Path(__file__).resolve().parents[3] / "refund.yaml"


def test_dollars_keeps_the_fitness_contract() -> None:
    check_fitness(dollars)


def test_dollars_prices_fees_and_llm_calls() -> None:
    problem = load_problem(REFUND)
    plan = Plan(tasks=(
        Task(id="t1", tool="orders.get", inputs={"order_id": "$order_id"}),
        Task(id="t2", tool="llm.decide"),  # fee 0.006 and one LLM call at 0.01
    ))
    assert dollars(problem, plan, Context(problem, plan)) == 0.006 + 0.01
