"""The run limits of a problem (``limits.deadline_s``, ``limits.max_llm_calls``), enforced when
calls are dispatched: a call that would go past one is not made and the run stops with the
reason ``deadline`` or ``llm_budget`` (a budget: after the goal was met it is still a success).

The model calls are counted by purpose: ``tools`` (the ``llm_calls`` of the tools called, from
the journal's calls) and those of the run's own, journaled as
:class:`~evolve.execute.records.ModelCalls` so that a resumed run goes on spending the same
budget: ``replan`` (a :class:`~evolve.execute.replan.Metered` replanner's: the LLM replanner,
a model planner's answers), ``argfill`` (an HTN operator's arguments filled at dispatch, see
:class:`~evolve.execute.tools.AsksModel`), and those made before the run started, journaled with
its first revision: ``decide`` (the HTN domain's hoisted decisions) and ``plan`` (a model
planner's answers for the agent's first plan). Each is counted before it is made, with the most
it may spend, and what was not spent (a reply from the reply cache, an ask not made) is given
back afterwards, so a crash never loses a call.

The deadline measures the run's clock: sessions continue it from the journal's last event, so
the time between two sessions does not count. The seconds a session spent waiting for a person
(``--wait``) are taken off it, unless the run's option ``deadline_includes_waiting`` counts the
time people took (from each ask to its decision, across sessions) instead.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from evolve.execute.context import RunContext
from evolve.execute.outcome import Reason, Stop
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
    return Stop(Reason.DEADLINE,
                f"limits.deadline_s {deadline:g} reached after {spent:.3f} s (waiting {counted})")


def model_calls_made(ctx: RunContext, pending: Mapping[str, int] | None = None) -> dict[str, int]:
    """The run's model calls so far, by purpose (``tools`` and ``replan`` always named), with
    ``pending``: those a wave of dispatches counted and has not committed yet."""
    made = {"tools": ctx.llm_calls, "replan": 0, **ctx.state.model_calls}
    for purpose, calls in (pending or {}).items():
        made[purpose] = made.get(purpose, 0) + calls
    return made


def llm_budget_left(ctx: RunContext) -> int | None:
    """The model calls ``limits.max_llm_calls`` still allows (``None``: no budget)."""
    budget = ctx.problem.limits.max_llm_calls
    if budget is None:
        return None
    return max(0, budget - sum(model_calls_made(ctx).values()))


def over_llm_budget(
    ctx: RunContext, need: int, what: str, pending: Mapping[str, int] | None = None
) -> Stop | None:
    """The stop of ``what`` if its ``need`` model calls would go past ``limits.max_llm_calls``."""
    budget = ctx.problem.limits.max_llm_calls
    made = model_calls_made(ctx, pending)
    total = sum(made.values())
    if budget is None or need == 0 or total + need <= budget:
        return None
    return Stop(Reason.LLM_BUDGET, f"{spent_text(budget, made)}, and {what} needs {need} more")


def spent_text(budget: int, made: Mapping[str, int]) -> str:
    """``limits.max_llm_calls 4: 4 made (tools 0, replan 1, argfill 3)``: the stop message's head."""
    purposes = ", ".join(f"{purpose} {calls}" for purpose, calls in made.items())
    return f"limits.max_llm_calls {budget}: {sum(made.values())} made ({purposes})"


def llm_budget_spent(ctx: RunContext, task: Task, asks: int = 0,
                     pending: Mapping[str, int] | None = None) -> Stop | None:
    """The stop of a call that would make more model calls than ``limits.max_llm_calls``: its
    tool's declared ``llm_calls`` and ``asks``, the model calls its callable makes itself (an
    HTN operator's argument fill)."""
    tool = ctx.problem.tools.get(task.tool)
    need = (tool.llm_calls if tool is not None else 0) + asks
    filled = ", its arguments filled by the model" if asks else ""
    return over_llm_budget(ctx, need, f"{task.id} ({task.tool}{filled})", pending)
