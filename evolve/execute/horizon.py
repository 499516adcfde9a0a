"""A rolling horizon (``ExecuteOptions.horizon``, ``evolve execute --horizon K``): commit the next
``K`` tasks of the plan, run them, then plan the rest again from what they made.

A plan drafted before the run assumes every tool makes what its catalog entry declares. When
that is only known as the run goes (a cache that may miss, a lookup that may find nothing), a
plan committed whole runs on into a branch that the run's own results have already ruled out.
Under a horizon, each revision commits only its :func:`window`, the first ``K`` of its pending
tasks in the order they would become ready (longest remaining path first, as the ready queue
orders them), as a :class:`~evolve.execute.records.Window` record in the revision's own
transaction. Tasks outside the window are not yet committed: the readiness pass leaves them
alone. When every committed task is over and nothing runs (:func:`step`), the rest is planned
again: a replan asked with the reason ``horizon``, through the run's replanner, within
``max_steps``/``max_replans``; with no replan left (or no replanner) the window is lifted
instead and the rest of the plan runs as it stands.

The replanner sees the problem as it now stands (:func:`observed_problem`): the facts done tasks
made are known, as for every replan, and a tool called in this run is taken to make only the
outputs it was seen to make. A call must return every output its tool declares (else it fails),
but it may return ``null`` for one: a cache that missed, a search that found nothing. Such an
output was not made: it is not a known fact, and the tool is not expected to make it on a second
call (within a run its inputs are the same facts).

Whether the goal was met is never decided here: the run's verdict checks the criteria against
the done tasks (:func:`evolve.execute.outcome.verdict`), with or without a horizon.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Literal

from evolve.execute.journal import CallRow
from evolve.execute.outcome import criteria_made
from evolve.execute.records import MADE
from evolve.execute.replan import pending_plan
from evolve.execute.state import RunState
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.model.status import TaskStatus
from evolve.scheduling.base import PlanGraph, backward_tails

REASON = "horizon"
"""The reason of a revision the horizon asked for."""

OPEN: frozenset[TaskStatus] = frozenset({TaskStatus.PENDING, TaskStatus.DISPATCHED, TaskStatus.WAITING})
"""Statuses of a committed task that is not over yet."""

Step = Literal["replan", "lift"]


def window(problem: Problem, plan: Plan, status: Mapping[str, TaskStatus], k: int) -> tuple[str, ...]:
    """The first ``k`` pending tasks of ``plan`` in the order they would become ready: of the
    tasks whose pending deps are all taken, the longest remaining path first (then plan order).
    A prefix of that order holds every pending dep of each task in it, so a window never waits
    for a task outside it."""
    pending = pending_plan(plan, status)
    tails = backward_tails(PlanGraph.of(problem, pending))
    place = {t.id: i for i, t in enumerate(pending.tasks)}
    deps = {t.id: set(t.deps) for t in pending.tasks}
    taken: list[str] = []
    done: set[str] = set()
    while len(taken) < k and len(taken) < len(deps):
        ready = [tid for tid, ds in deps.items() if tid not in done and ds <= done]
        best = min(ready, key=lambda tid: (-tails.get(tid, 0.0), place[tid]))
        taken.append(best)
        done.add(best)
    return tuple(taken)


def step(problem: Problem, state: RunState, can_replan: bool) -> Step | None:
    """What the horizon does now: ``replan`` (every committed task is over, and tasks are left
    or a criterion is not made), ``lift`` (the same, but no replan is left: tasks are left and
    they are committed as they stand), or nothing (no horizon, committed tasks still open, or
    nothing left to plan)."""
    committed = state.window
    if committed is None or any(state.status.get(tid) in OPEN for tid in committed):
        return None
    inside = set(committed)
    rest = [t.id for t in state.plan.tasks
            if state.status.get(t.id) == TaskStatus.PENDING and t.id not in inside]
    made = criteria_made(problem, state.plan, state.status, state.outputs)
    unmade = any(tid is None for tid in made.values())
    if not rest and not unmade:
        return None
    if can_replan:
        return "replan"
    return "lift" if rest else None


def observed_problem(problem: Problem, calls: Iterable[CallRow]) -> Problem:
    """``problem`` with each tool called in this run making only the declared outputs one of its
    done calls returned a value for (not ``null``); a tool never called keeps its catalog entry."""
    seen: dict[str, set[str]] = {}
    for call in calls:
        if call.status in MADE and isinstance(call.outputs, Mapping):
            made = (str(key) for key, value in call.outputs.items() if value is not None)
            seen.setdefault(call.tool, set()).update(made)
    tools = {
        name: (
            tool
            if name not in seen
            else replace(tool, outputs=tuple(o for o in tool.outputs if o in seen[name]))
        )
        for name, tool in problem.tools.items()
    }
    return replace(problem, tools=tools)
