"""The run limits of a problem (``limits.deadline_s``, ``limits.max_llm_calls``), enforced when
calls are dispatched: a call that would go past one is not made and the run stops with the
reason ``deadline`` or ``llm_budget`` (a budget: after the goal was met it is still a success).

The model calls are counted by purpose: ``tools`` (the ``llm_calls`` of the tools called, from
the journal's calls) and those of the run's own, journaled as
:class:`~evolve.execute.records.ModelCalls` (``replan``: the LLM replanner's), so a resumed run
goes on spending the same budget.

The deadline measures the run's clock: sessions continue it from the journal's last event, so
the time between two sessions does not count. The seconds a session spent waiting for a person
(``--wait``) are taken off it, unless the run's option ``deadline_includes_waiting`` counts the
time people took (from each ask to its decision, across sessions) instead.
"""

from __future__ import annotations

import time

from evolve.execute.context import RunContext
from evolve.execute.outcome import Stop
from evolve.execute.people import waited
from evolve.model.plan import Task


def run_time(ctx: RunContext) -> float:
    """Seconds the run has taken, as its deadline counts them."""
    own = ctx.clock.now() - ctx.waited_in_sessions
    if ctx.options.deadline_includes_waiting:
        return own + waited(ctx.state, time.time())
    return own


def deadline_passed(ctx: RunContext) -> Stop | None:
    """The stop of a run past its ``limits.deadline_s`` (``None``: within it, or none set)."""
    deadline = ctx.problem.limits.deadline_s
    if deadline is None:
        return None
    spent = run_time(ctx)
    if spent < deadline:
        return None
    counted = "included" if ctx.options.deadline_includes_waiting else "excluded"
    return Stop("deadline", f"limits.deadline_s {deadline:g} reached after {spent:.3f} s (waiting {counted})")


def model_calls_made(ctx: RunContext) -> dict[str, int]:
    """The run's model calls so far, by purpose (``tools`` and ``replan`` always named)."""
    return {"tools": ctx.llm_calls, "replan": 0, **ctx.state.model_calls}


def over_llm_budget(ctx: RunContext, need: int, what: str) -> Stop | None:
    """The stop of ``what`` if its ``need`` model calls would go past ``limits.max_llm_calls``."""
    budget = ctx.problem.limits.max_llm_calls
    made = model_calls_made(ctx)
    total = sum(made.values())
    if budget is None or need == 0 or total + need <= budget:
        return None
    purposes = ", ".join(f"{purpose} {calls}" for purpose, calls in made.items())
    message = f"limits.max_llm_calls {budget}: {total} made ({purposes}), and {what} needs {need} more"
    return Stop("llm_budget", message)


def llm_budget_spent(ctx: RunContext, task: Task) -> Stop | None:
    """The stop of a call that would make more model calls than ``limits.max_llm_calls``."""
    tool = ctx.problem.tools.get(task.tool)
    return over_llm_budget(ctx, tool.llm_calls if tool is not None else 0, f"{task.id} ({task.tool})")
