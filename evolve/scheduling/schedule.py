"""Simulated execution of a plan: serial schedule generation under the run's limits.

The schedule is what makes ``makespan`` a machine-checkable fitness: each task
starts at the earliest time its dependencies have finished and a parallel slot
and its tool's resources are free, with ready tasks taken in the plan's
``priority`` order (longest remaining path first when it has none).

Every schedule evolve computes (fitness, reports, prompts, the CLI) comes from
:func:`schedule`, which runs the compiled kernel of
:mod:`evolve.scheduling.kernel` on the arrays of :mod:`evolve.scheduling.arrays`;
:func:`evolve.scheduling.reference.reference_schedule` is the same algorithm in
plain Python, kept as the test oracle.
"""

from __future__ import annotations

import numpy as np

from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.scheduling.arrays import sgs_arrays
from evolve.scheduling.base import IMPOSSIBLE, PlanGraph, Schedule, summarise
from evolve.scheduling.kernel import serial_sgs_placed


def schedule(problem: Problem, plan: Plan) -> Schedule:
    """Serial schedule generation for ``plan`` under ``problem``'s limits and resources.

    Tasks on or behind a dependency cycle cannot be placed; they are listed in
    ``unscheduled`` so the caller can still score the rest. A task that needs
    more than the full capacity of a resource can never start: ``ValueError``.
    """
    graph = PlanGraph.of(problem, plan)
    arrays = sgs_arrays(problem, graph)
    start, placed = serial_sgs_placed(*arrays.problem_arrays, arrays.key)
    if not np.isfinite(start).all():
        raise ValueError(IMPOSSIBLE)
    order, starts = graph.order, start.tolist()
    return summarise(graph, {order[j]: starts[j] for j in placed.tolist()})
