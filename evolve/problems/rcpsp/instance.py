"""RCPSP instances as flat numpy arrays, read with the ``psplib`` package.

The decoders in :mod:`evolve.problems.rcpsp.decode` are numba kernels, and numba works
best on plain contiguous integer arrays. So an instance is stored once, up
front, as a frozen dataclass of such arrays: durations, a demand matrix,
capacities, and predecessor/successor lists in CSR form (``ptr``/``idx``
pairs, the same layout as ``scipy.sparse``), which a kernel can walk without
Python objects.
"""

from __future__ import annotations

import csv
import heapq
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import psplib

from evolve.model.graph_kernels import csr, transpose

IntArray = npt.NDArray[np.int64]

PSPLIB_SETS = ("j30", "j60", "j90", "j120")

#: Formats of :func:`psplib.parse` that describe a single-mode RCPSP with
#: renewable resources and plain finish-to-start precedence.
SUPPORTED_FORMATS = ("psplib", "patterson")


@dataclass(frozen=True, eq=False)
class RcpspInstance:
    """A single-mode RCPSP with renewable resources.

    Activities are numbered ``0..n-1`` in file order (for PSPLIB files the
    dummy source is 0 and the dummy sink is ``n-1``). ``predecessors`` of
    activity ``j`` are ``pred_idx[pred_ptr[j]:pred_ptr[j+1]]``; successors
    likewise with ``succ_ptr``/``succ_idx``.
    """

    name: str
    durations: IntArray
    demands: IntArray
    capacities: IntArray
    pred_ptr: IntArray
    pred_idx: IntArray
    succ_ptr: IntArray
    succ_idx: IntArray

    @property
    def n(self) -> int:
        """Number of activities, dummies included."""
        return int(self.durations.shape[0])

    @property
    def num_resources(self) -> int:
        """Number of renewable resources."""
        return int(self.capacities.shape[0])

    def predecessors(self, j: int) -> IntArray:
        """Direct predecessors of activity ``j``."""
        return self.pred_idx[self.pred_ptr[j] : self.pred_ptr[j + 1]]

    def successors(self, j: int) -> IntArray:
        """Direct successors of activity ``j``."""
        return self.succ_idx[self.succ_ptr[j] : self.succ_ptr[j + 1]]

    @property
    def horizon(self) -> int:
        """Sum of durations: no serial or parallel SGS schedule ends later."""
        return int(self.durations.sum())

    @property
    def arrays(self) -> tuple[IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray]:
        """The instance as the kernels take it: ``(durations, demands,
        capacities, pred_ptr, pred_idx, succ_ptr, succ_idx)``."""
        return (
            self.durations,
            self.demands,
            self.capacities,
            self.pred_ptr,
            self.pred_idx,
            self.succ_ptr,
            self.succ_idx,
        )


def from_arrays(
    name: str,
    durations: list[int] | IntArray,
    demands: list[list[int]] | IntArray,
    capacities: list[int] | IntArray,
    successors: list[list[int]],
) -> RcpspInstance:
    """Build an instance from plain lists (used by tests and other front ends).

    Raises ``ValueError`` if the precedence graph has a cycle, a demand
    exceeds its capacity, or a duration is negative: every decoder relies on
    these to terminate.
    """
    dur = np.ascontiguousarray(durations, dtype=np.int64)
    n = int(dur.shape[0])
    cap = np.ascontiguousarray(capacities, dtype=np.int64)
    dem = np.ascontiguousarray(demands, dtype=np.int64).reshape(n, cap.shape[0])
    if (dur < 0).any():
        raise ValueError(f"{name}: negative duration")
    if (dem > cap[None, :]).any() or (dem < 0).any():
        raise ValueError(f"{name}: a demand is negative or exceeds its resource's capacity")
    succ = [sorted({int(s) for s in ss}) for ss in successors]
    for j, ss in enumerate(succ):
        for s in ss:
            if not 0 <= s < n or s == j:
                raise ValueError(f"{name}: bad successor {s} of activity {j}")
    succ_ptr, succ_idx = csr(succ)
    pred_ptr, pred_idx = transpose(succ_ptr, succ_idx, n)  # each activity's predecessors, ascending
    inst = RcpspInstance(name, dur, dem, cap, pred_ptr, pred_idx, succ_ptr, succ_idx)
    topological_order(inst)  # raises on a cycle
    return inst


def load_instance(path: str | os.PathLike[str], format: str = "psplib") -> RcpspInstance:
    """Read an instance file with :func:`psplib.parse`.

    ``format`` is any format of ``psplib.parse`` that yields a single-mode,
    renewable-only problem without time lags (``psplib``, ``patterson``;
    single-mode files of other formats are accepted too).
    """
    p = Path(path)
    proj = psplib.parse(p, instance_format=format)
    if any(len(a.modes) != 1 for a in proj.activities):
        raise ValueError(f"{p.name}: multi-mode instances are not supported")
    if any(a.delays for a in proj.activities):
        raise ValueError(f"{p.name}: generalised time lags (RCPSP/max) are not supported")
    renewable = [k for k, r in enumerate(proj.resources) if r.renewable]
    for a in proj.activities:
        for k, r in enumerate(proj.resources):
            if not r.renewable and a.modes[0].demands[k]:
                raise ValueError(f"{p.name}: non-renewable resources are not supported")
    return from_arrays(
        p.stem,
        [a.modes[0].duration for a in proj.activities],
        [[a.modes[0].demands[k] for k in renewable] for a in proj.activities],
        [proj.resources[k].capacity for k in renewable],
        [list(a.successors) for a in proj.activities],
    )


def topological_order(inst: RcpspInstance) -> IntArray:
    """Kahn's order (smallest index first); ``ValueError`` on a cycle."""
    n = inst.n
    indeg = np.diff(inst.pred_ptr).copy()
    ready = sorted(int(j) for j in np.flatnonzero(indeg == 0))
    out: list[int] = []
    heapq.heapify(ready)
    while ready:
        j = heapq.heappop(ready)
        out.append(j)
        for s in inst.successors(j):
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(ready, int(s))
    if len(out) != n:
        raise ValueError(f"{inst.name}: precedence graph has a cycle")
    return np.array(out, dtype=np.int64)


def earliest_starts(inst: RcpspInstance) -> IntArray:
    """Resource-free earliest start times (forward CPM pass)."""
    es = np.zeros(inst.n, dtype=np.int64)
    for j in topological_order(inst):
        for p in inst.predecessors(int(j)):
            es[j] = max(es[j], es[p] + inst.durations[p])
    return es


def latest_finishes(inst: RcpspInstance, deadline: int | None = None) -> IntArray:
    """Resource-free latest finish times (backward CPM pass) for ``deadline``.

    The default deadline is the critical-path length, which makes these the
    LFT priority values of the literature.
    """
    d = inst.durations
    lf = np.full(inst.n, critical_path_bound(inst) if deadline is None else deadline, dtype=np.int64)
    for j in topological_order(inst)[::-1]:
        for s in inst.successors(int(j)):
            lf[j] = min(lf[j], lf[s] - d[s])
    return lf


def critical_path_bound(inst: RcpspInstance) -> int:
    """Length of the longest path (resource-free makespan): the CPM lower bound."""
    es = earliest_starts(inst)
    return int((es + inst.durations).max()) if inst.n else 0


def energy_bound(inst: RcpspInstance) -> int:
    """Resource-energy lower bound: no schedule is shorter than the total work
    on a resource divided by its capacity, ``max_r ceil(sum_j d_j q_jr / c_r)``."""
    if inst.n == 0 or inst.num_resources == 0:
        return 0
    work = (inst.durations[:, None] * inst.demands).sum(axis=0)
    cap = np.maximum(inst.capacities, 1)
    return int((-(-work // cap)).max())


def lower_bound(inst: RcpspInstance) -> int:
    """The bound the search computes for itself and may stop at: the larger of
    the critical-path and the resource-energy bound (never a table's value)."""
    return max(critical_path_bound(inst), energy_bound(inst))


class BestKnown(NamedTuple):
    """One row of ``best_known_detail.csv``."""

    best_known: int
    is_optimal: bool
    lower_bound: int
    cpm_lb: int


def psplib_dir() -> Path:
    """The PSPLIB data directory.

    ``$EVOLVE_PSPLIB_DIR`` if set, else ``../shared/data/psplib`` next to the
    repository root (the data is shared by several checkouts, so it is not
    inside the repository). The path may not exist; callers check.
    """
    env = os.environ.get("EVOLVE_PSPLIB_DIR")
    if env:
        return Path(env)
    repo_root = Path(__file__).resolve().parents[3]
    return (repo_root / ".." / "shared" / "data" / "psplib").resolve()


def set_files(set_name: str, data_dir: str | os.PathLike[str] | None = None) -> list[Path]:
    """Instance files of a PSPLIB set in natural order (``j301_1, j301_2, ...``)."""
    base = Path(data_dir) if data_dir is not None else psplib_dir()
    files = list((base / set_name).glob("*.sm"))
    return sorted(files, key=lambda f: instance_sort_key(f.stem))


def instance_sort_key(name: str) -> tuple[int, int, str]:
    """Sort ``j3010_2`` after ``j309_10``: by (parameter, instance)."""
    for s in sorted(PSPLIB_SETS, key=len, reverse=True):
        if name.startswith(s):
            param, _, inst = name[len(s) :].partition("_")
            if param.isdigit() and inst.isdigit():
                return (int(param), int(inst), name)
    return (1 << 30, 0, name)


def load_best_known(set_or_dir: str | os.PathLike[str] | None = None) -> dict[str, BestKnown]:
    """Best-known table: instance name -> (best_known, is_optimal, lower_bound, cpm_lb).

    ``set_or_dir`` is a set name (``"j30"``: only that set), a directory
    holding ``best_known_detail.csv``, the CSV itself, or ``None`` (all sets in
    :func:`psplib_dir`).
    """
    only: str | None = None
    if set_or_dir is None:
        path = psplib_dir() / "best_known_detail.csv"
    elif str(set_or_dir) in PSPLIB_SETS:
        only = str(set_or_dir)
        path = psplib_dir() / "best_known_detail.csv"
    else:
        path = Path(set_or_dir)
        if path.is_dir():
            path = path / "best_known_detail.csv"
    out: dict[str, BestKnown] = {}
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if only is not None and row["set"] != only:
                continue
            out[row["instance"]] = BestKnown(
                int(row["best_known"]),
                row["is_optimal"].strip().lower() == "true",
                int(row["lower_bound"]),
                int(row["cpm_lb"]),
            )
    return out
