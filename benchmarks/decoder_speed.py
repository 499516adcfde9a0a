"""Decoder throughput: numba serial/parallel SGS vs the plain-Python serial SGS.

Both decoders run in this process on the same random activity lists, so the
ratio is measured, not quoted. Usage::

    python benchmarks/decoder_speed.py [--lists 2000] [--python-lists 200]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np

from evolve.problems.rcpsp.decode import (
    parallel_sgs_batch,
    serial_sgs_batch,
    serial_sgs_python,
)
from evolve.problems.rcpsp.instance import RcpspInstance, load_instance, psplib_dir


def random_lists(inst: RcpspInstance, count: int, seed: int) -> np.ndarray:
    """Random topological orders (uniform choice among eligible activities)."""
    rng = np.random.default_rng(seed)
    out = np.empty((count, inst.n), dtype=np.int64)
    indeg0 = np.diff(inst.pred_ptr)
    for i in range(count):
        left = indeg0.copy()
        elig = [int(j) for j in np.flatnonzero(left == 0)]
        k = 0
        while elig:
            j = elig.pop(int(rng.integers(len(elig))))
            out[i, k] = j
            k += 1
            for s in inst.successors(j):
                left[s] -= 1
                if left[s] == 0:
                    elig.append(int(s))
    return out


def rate(fn: Callable[[], object], count: int, repeat: int = 3) -> float:
    """Best-of-``repeat`` schedules per second."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return count / best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lists", type=int, default=2000, help="lists per numba measurement")
    ap.add_argument("--python-lists", type=int, default=200, help="lists for the Python baseline")
    ap.add_argument("--instances", nargs="*", default=["j30/j301_1.sm", "j120/j1201_1.sm"])
    args = ap.parse_args()
    base = psplib_dir()
    print(
        "| instance | n | numba serial sched/s | numba parallel sched/s | "
        "python serial sched/s | serial ratio | parallel ratio |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in args.instances:
        inst = load_instance(base / name)
        lists = random_lists(inst, args.lists, seed=1)
        serial_sgs_batch(inst, lists[:2])  # compile / load from cache
        parallel_sgs_batch(inst, lists[:2])
        ns = rate(lambda: serial_sgs_batch(inst, lists), len(lists))  # noqa: B023
        npar = rate(lambda: parallel_sgs_batch(inst, lists), len(lists))  # noqa: B023
        few = lists[: args.python_lists]
        py = rate(lambda: [serial_sgs_python(inst, lst) for lst in few], len(few), 1)  # noqa: B023
        # same schedules, so the comparison is like for like
        assert all(
            list(a) == serial_sgs_python(inst, lst)
            for a, lst in zip(serial_sgs_batch(inst, few[:20]), few[:20], strict=True)
        )
        print(
            f"| {inst.name} | {inst.n} | {ns:,.0f} | {npar:,.0f} | {py:,.0f} | "
            f"{ns / py:.1f}x | {npar / py:.1f}x |"
        )


if __name__ == "__main__":
    main()
