"""The run limits of a problem (``limits.deadline_s``, ``limits.max_llm_calls``), enforced when
calls are dispatched: a call that would go past one is not made and the run stops with the
reason ``deadline`` or ``llm_budget`` (a budget: after the goal was met it is still a success).

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


def llm_budget_spent(ctx: RunContext, task: Task) -> Stop | None:
    """The stop of a call that would make more model calls than ``limits.max_llm_calls``."""
    budget = ctx.problem.limits.max_llm_calls
    tool = ctx.problem.tools.get(task.tool)
    need = tool.llm_calls if tool is not None else 0
    if budget is None or need == 0 or ctx.llm_calls + need <= budget:
        return None
    return Stop(
        "llm_budget",
        f"limits.max_llm_calls {budget}: {ctx.llm_calls} made, and {task.id} ({task.tool}) needs {need} more",
    )
