"""Best-of-N: what a model does alone, with no evolution, at the same number of calls.

A run with the LLM operator can look good because evolution did the work. The
yardstick that says whether the model earns its calls on its own is to ask it
``n`` times for a patch of one plan (the best of the first population, say),
score every child, and keep the best. The other yardstick, a random pick of the
same menus, is recorded inside every menu-mode run (see :mod:`evolve.llm.menu`).
"""

from __future__ import annotations

from dataclasses import dataclass

from evolve.fitness.evaluation import Evaluation
from evolve.llm.operator import LLMOperator
from evolve.model.errors import UsageError
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.search.algorithm import Candidate
from evolve.search.loop import ProposalContext


@dataclass(frozen=True)
class BestOfN:
    """The outcome: the best plan (the start itself when no child beats it) and what it cost."""

    plan: Plan
    evaluation: Evaluation
    calls: int
    accepted: int
    improvements: int
    tokens: int


def best_of_n(operator: LLMOperator, problem: Problem, start: Candidate, n: int,
              context: ProposalContext, seed: int) -> BestOfN:
    """``n`` independent patches of ``start`` (each its own sampling seed), scored with
    ``context.evaluate`` and ranked with ``context.ranking``. ``operator`` must be in patch
    mode; its ``max_calls`` and cache apply as in a run."""
    if operator.mode != "patch":
        raise UsageError(f"best-of-N asks for patches; the operator is in {operator.mode} mode")
    if n < 1:
        raise UsageError(f"best-of-N needs n >= 1, got {n}")
    before = operator.usage.summary()
    made = operator.propose(problem, [start], list(range(n)), 0, seed, context)
    plans = [child.plan for child in made if child.plan is not None]
    evaluations = context.evaluate(plans) if plans else []
    key = context.ranking.key
    start_key = key(start.evaluation)
    best_plan, best_eval = start.plan, start.evaluation
    for plan, evaluation in zip(plans, evaluations):
        if key(evaluation) < key(best_eval):
            best_plan, best_eval = plan, evaluation
    after = operator.usage.summary()
    return BestOfN(
        plan=best_plan, evaluation=best_eval,
        calls=after["requests"] - before["requests"],
        accepted=len(plans),
        improvements=sum(1 for ev in evaluations if key(ev) < start_key),
        tokens=after["tokens"]["total"] - before["tokens"]["total"],
    )
