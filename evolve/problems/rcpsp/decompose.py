"""Decomposition of the best schedule (after Debels & Vanhoucke's decomposition-based GA).

A block of consecutive activities of the best schedule's start-sorted list is
a project of its own (its activities, the precedence among them, a dummy start
and end, the full capacities). A short run of the same bi-population GA
reorders that block; the block's new order put back into the full list gives a
new individual, decoded forward and justified (two schedules) and let into
both worlds if it beats their worst. Every schedule of the sub-run counts
against the budget like any other. Any precedence path between two block
activities runs through the block (the list is sorted by start time), so the
induced precedence keeps the full list feasible.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from evolve.problems.rcpsp.instance import IntArray, RcpspInstance, from_arrays
from evolve.problems.rcpsp.kernels import _bp_decode


class Host(Protocol):
    """What the decomposition needs of the search it serves (a :class:`BiPopulationGA`)."""

    inst: RcpspInstance
    rng: np.random.Generator
    pop_l: IntArray
    pop_s: IntArray
    pop_ms: IntArray
    best_l: IntArray

    def profile(self) -> IntArray: ...

    def mirror(self) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray]: ...


def block_instance(inst: RcpspInstance, block: IntArray) -> RcpspInstance:
    """The sub-project of the activities ``block``: 0 is a dummy start, ``k + 1`` a dummy end."""
    k = block.shape[0]
    index = {int(a): i + 1 for i, a in enumerate(block)}
    succ: list[list[int]] = [[] for _ in range(k + 2)]
    has_pred = [False] * (k + 2)
    for i, a in enumerate(block):
        mine = [index[int(s)] for s in inst.successors(int(a)) if int(s) in index]
        succ[i + 1] = mine if mine else [k + 1]
        for s in mine:
            has_pred[s] = True
    succ[0] = [i for i in range(1, k + 1) if not has_pred[i]]
    dur = np.concatenate(([0], inst.durations[block], [0]))
    dem = np.vstack((np.zeros((1, inst.num_resources), np.int64), inst.demands[block],
                     np.zeros((1, inst.num_resources), np.int64)))
    return from_arrays(f"{inst.name}-block", dur, dem, inst.capacities, succ)


def decompose(host: Host, solver: Callable[..., Any], params: object, share: float, budget: int) -> int:
    """One decomposition of the host's best schedule with at most ``budget`` schedules
    (``share`` of the activities form the block). ``solver`` is the GA class run on the
    block with ``params``. Returns the schedules used."""
    inst, rng = host.inst, host.rng
    n = inst.n
    k = int(min(n, max(8, round(share * n))))
    if budget < 12 or k < 4:
        return 0
    a = int(rng.integers(0, n - k + 1))
    best = host.best_l.copy()
    block = best[a:a + k].copy()
    sub = solver(block_instance(inst, block), schedules=budget - 2 + 1, seed=int(rng.integers(1 << 62)),
                 params=params)
    while not sub.done():
        sub.step()
    used = int(sub.used)
    order = [int(j) - 1 for j in sub.best_l if 0 < int(j) <= k]
    best[a:a + k] = block[order]
    avail = host.profile()
    s0 = np.empty(n, np.int64)
    l0 = np.empty(n, np.int64)
    s1 = np.empty(n, np.int64)
    l1 = np.empty(n, np.int64)
    ms0 = int(_bp_decode(inst.arrays, best, False, avail, s0, l0))
    ms1 = int(_bp_decode(host.mirror(), l0, False, avail, s1, l1))
    for w, ms, s, lst in ((0, ms0, s0, l0), (1, ms1, s1, l1)):
        worst = int(host.pop_ms[w].argmax())
        if ms < host.pop_ms[w, worst] and not (host.pop_s[w] == s).all(axis=1).any():
            host.pop_ms[w, worst], host.pop_s[w, worst], host.pop_l[w, worst] = ms, s, lst
    return used + 2
