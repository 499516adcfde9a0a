"""Simulated execution of a plan: serial schedule generation under the run's limits.

The schedule is what makes ``makespan`` a machine-checkable fitness: each task
starts at the earliest time its dependencies have finished and a parallel slot
and its tool's resources are free, with ready tasks taken in the plan's
``priority`` order (longest remaining path first when it has none).

Every schedule evolve computes (fitness, reports, prompts, the CLI) comes from
:func:`schedule`, which runs the compiled kernel of
:mod:`evolve.scheduling.kernel` on the arrays of :mod:`evolve.scheduling.arrays`;
:func:`evolve.scheduling.reference.reference_schedule` is the same algorithm in
plain Python, kept as the test oracle. :func:`compiled_makespan` is the same
schedule's makespan alone, from a plan the compiled objectives have already
decoded (see :mod:`evolve.scheduling.compiled`), for the ``makespan`` objective.
"""

from __future__ import annotations

import numpy as np

from evolve.model.compiled import CompiledProblem, FloatArray
from evolve.model.plan import Plan
from evolve.model.plan_arrays import PlanArrays
from evolve.model.problem import Problem
from evolve.scheduling.arrays import sgs_arrays
from evolve.scheduling.base import IMPOSSIBLE, PlanGraph, Schedule, summarise
from evolve.scheduling.compiled import sgs_inputs
from evolve.scheduling.kernel import serial_sgs, serial_sgs_placed


def schedule(problem: Problem, plan: Plan) -> Schedule:
    """Serial schedule generation for ``plan`` under ``problem``'s limits and resources.

    Tasks on or behind a dependency cycle cannot be placed; they are listed in
    ``unscheduled`` so the caller can still score the rest. A task that needs
    more than the full capacity of a resource can never start: ``ValueError``.
    """
    graph = PlanGraph.of(problem, plan)
    arrays = sgs_arrays(problem, graph)
    start, placed = serial_sgs_placed(*arrays.problem_arrays, arrays.key)
    require_placed(start)
    order, starts = graph.order, start.tolist()
    return summarise(graph, {order[j]: starts[j] for j in placed.tolist()})


def compiled_makespan(compiled: CompiledProblem, arrays: PlanArrays) -> float:
    """``schedule(problem, plan).makespan``, raising the same ``ValueError``, for ``plan`` decoded
    under ``problem``'s compiled arrays: the same kernel on the same input, without the
    per-task Python of the graph, the arrays and the summary."""
    dur, need, pred_ptr, pred_idx, succ_ptr, succ_idx, key = sgs_inputs(
        arrays.tool, arrays.dep_ptr, arrays.dep_idx, arrays.order, arrays.rank, arrays.ranked,
        compiled.dur, compiled.need)
    if dur.shape[0] == 0:
        return 0.0
    start = serial_sgs(dur, need, compiled.cap, pred_ptr, pred_idx, succ_ptr, succ_idx, key)
    require_placed(start)
    return float((start + dur).max())


def require_placed(start: FloatArray) -> None:
    """Raise the schedulers' ``ValueError`` when a task never fits (its start is ``inf``): one
    place for both paths, so a failed evaluation reads the same whichever path scored it."""
    if not np.isfinite(start).all():
        raise ValueError(IMPOSSIBLE)
