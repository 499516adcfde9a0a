"""Numba kernels that intensify the bi-population search around its elite.

Kept apart from :mod:`evolve.problems.rcpsp.kernels` (which holds the base GA) so
each module stays short. Same conventions: ``pb`` is the instance tuple
``(dur, dem, cap, pred_ptr, pred_idx, succ_ptr, succ_idx)``, all randomness
comes from the ``numpy.random.Generator`` passed in, and every SGS run is
counted as one schedule against ``budget``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evolve.problems.rcpsp.kernels import BIG, _bp_decode, _bp_mirror
from evolve.problems.rcpsp.lists import _rbrs_list, _shift_mutation

_BIG = BIG


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _bp_restart(rng, pb0, pb1, prio, alpha, avail, budget, pop_l, pop_s, pop_ms, first, near, moves):  # type: ignore[no-untyped-def]
    """Partial restart of both worlds from slot ``first`` on.

    A share ``near`` of the new individuals are neighbours of the kept elite
    (an elite list of world 0 with ``moves`` random shift moves), the rest
    fresh regret-biased samples. Re-sampling alone throws away what the
    search learnt; neighbours of the elite keep the good structure while
    still moving the population off its plateau (the second phase of Valls,
    Ballestin & Quintanilla's hybrid GA rebuilds the population the same way).
    Each new individual costs two schedules (world 0, then right-justified
    into world 1). Returns schedules used.
    """
    npop = pop_l.shape[1]
    n = pop_l.shape[2]
    lst = np.empty(n, dtype=np.int64)
    used = 0
    nel = 0
    while nel < first and pop_ms[1, nel] < _BIG:
        nel += 1
    for i in range(first, npop):
        if used >= budget:
            pop_ms[0, i] = _BIG
            continue
        if nel > 0 and rng.random() < near:
            e = rng.integers(0, nel)
            for k in range(n):
                lst[k] = pop_l[1, e, k]
            for _ in range(moves):
                _shift_mutation(rng, pb0, lst)
        else:
            _rbrs_list(rng, pb0, prio, alpha, lst)
        pop_ms[0, i] = _bp_decode(pb0, lst, i % 2 == 1, avail, pop_s[0, i], pop_l[0, i])
        used += 1
    return _bp_mirror(pb1, avail, budget, used, pop_l, pop_s, pop_ms, first)
