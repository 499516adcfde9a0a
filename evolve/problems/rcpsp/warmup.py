"""Load (or compile) every numba kernel of the search once per process, outside any timing.

The kernels are compiled with ``cache=True``, so a fresh process only loads
them from the on-disk cache, but even that costs about half a second, which
would otherwise land in the first timed instance of every worker. The
benchmark calls :func:`warm_up` in each worker before it starts a clock.
"""

from __future__ import annotations

import functools

from evolve.problems.rcpsp.instance import from_arrays
from evolve.problems.rcpsp.search import GaParams, solve


@functools.cache
def warm_up() -> int:
    """Run the search once on a tiny project with settings that reach every kernel
    (initial population, generations with polishing, a partial restart, the final decode,
    the empty-budget path). Cached: the work happens once per process. Returns the
    makespan found."""
    inst = from_arrays(
        "warm-up",
        durations=[0, 3, 2, 4, 1, 2, 3, 0],
        demands=[[0, 0], [2, 1], [1, 2], [2, 0], [1, 1], [0, 2], [2, 1], [0, 0]],
        capacities=[3, 2],
        successors=[[1, 2, 3], [4], [5], [6], [7], [7], [7], []],
    )
    solve(inst, schedules=1, seed=0)
    for n_small in (True, False):
        # both branches of the size-dependent defaults take the same argument types
        p = GaParams(pop_size=6, restart_after=1, polish_slack=1000 if n_small else 3)
        res = solve(inst, schedules=120, seed=0, params=p, lower_bound=0)
    return res.makespan
