"""Independent feasibility check of an RCPSP schedule.

Written without the decoders' code paths (plain numpy, event-free profile
built from scratch), so tests that use it do not share a bug with them.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from evolve.problems.rcpsp.instance import RcpspInstance


def schedule_violations(inst: RcpspInstance, starts: npt.ArrayLike) -> list[str]:
    """Every broken constraint of a schedule, as readable strings (empty = feasible).

    Checks: one integer start >= 0 per activity, every precedence
    ``start[j] >= start[p] + duration[p]``, and every resource's usage at
    every time unit within its capacity.
    """
    s = np.asarray(starts)
    n = inst.n
    if s.shape != (n,):
        return [f"expected {n} start times, got shape {s.shape}"]
    if not np.issubdtype(s.dtype, np.integer):
        return ["start times are not integers"]
    s = s.astype(np.int64)
    out: list[str] = []
    if (s < 0).any():
        out.append(f"negative start for activities {np.flatnonzero(s < 0).tolist()}")
    finish = s + inst.durations
    for j in range(n):
        for p in inst.predecessors(j):
            if s[j] < finish[p]:
                out.append(f"activity {j} starts at {s[j]} before predecessor {p} ends at {finish[p]}")
    horizon = int(finish.max(initial=0))
    usage = np.zeros((horizon + 1, inst.num_resources), dtype=np.int64)
    for j in range(n):
        if s[j] >= 0:
            usage[s[j] : finish[j]] += inst.demands[j]
    over = np.argwhere(usage > inst.capacities[None, :])
    for t, r in over[:10]:
        out.append(f"resource {r} over capacity at time {t}: {usage[t, r]} > {inst.capacities[r]}")
    return out


def is_feasible(inst: RcpspInstance, starts: npt.ArrayLike) -> bool:
    """True iff :func:`schedule_violations` finds nothing."""
    return not schedule_violations(inst, starts)
