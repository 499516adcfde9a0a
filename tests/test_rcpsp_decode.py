"""Decoders on real PSPLIB files: feasibility, numba == Python, FBI contract."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.problems.rcpsp.check import schedule_violations
from evolve.problems.rcpsp.decode import (
    forward_backward_improvement,
    makespan,
    parallel_sgs,
    parallel_sgs_batch,
    serial_sgs,
    serial_sgs_batch,
    serial_sgs_python,
)
from evolve.problems.rcpsp.instance import (
    RcpspInstance,
    critical_path_bound,
    from_arrays,
    load_best_known,
    load_instance,
    psplib_dir,
    topological_order,
)

DATA = psplib_dir()
FILES = ["j30/j301_1.sm", "j30/j3013_5.sm", "j60/j6010_3.sm", "j120/j12021_7.sm"]

pytestmark = pytest.mark.skipif(not (DATA / "j30").is_dir(), reason=f"PSPLIB data not found at {DATA}")


@pytest.fixture(scope="module", params=FILES)
def inst(request: pytest.FixtureRequest) -> RcpspInstance:
    return load_instance(DATA / request.param)


def random_topological_order(inst: RcpspInstance, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random choice among eligible activities at every step."""
    left = np.diff(inst.pred_ptr).copy()
    elig = [int(j) for j in np.flatnonzero(left == 0)]
    out = []
    while elig:
        j = elig.pop(int(rng.integers(len(elig))))
        out.append(j)
        for s in inst.successors(j):
            left[s] -= 1
            if left[s] == 0:
                elig.append(int(s))
    return np.array(out, dtype=np.int64)


def test_reads_psplib_file() -> None:
    inst = load_instance(DATA / "j30/j301_1.sm")
    assert inst.name == "j301_1"
    assert inst.n == 32 and inst.num_resources == 4
    assert inst.durations[0] == 0 and inst.durations[-1] == 0
    assert list(inst.successors(0)) == [1, 2, 3]
    assert list(inst.capacities) == [12, 13, 4, 12]
    bk = load_best_known("j30")["j301_1"]
    assert (bk.best_known, bk.is_optimal, bk.cpm_lb) == (43, True, 38)
    assert critical_path_bound(inst) == bk.cpm_lb


def test_rejects_cycles_and_overdemand() -> None:
    with pytest.raises(ValueError, match="cycle"):
        from_arrays("c", [1, 1], [[0], [0]], [1], [[1], [0]])
    with pytest.raises(ValueError, match="capacity"):
        from_arrays("d", [1], [[2]], [1], [[]])


def test_serial_numba_equals_python_and_is_feasible(inst: RcpspInstance) -> None:
    rng = np.random.default_rng(7)
    lists = np.array([random_topological_order(inst, rng) for _ in range(20)])
    batch = serial_sgs_batch(inst, lists)
    for lst, starts in zip(lists, batch, strict=True):
        assert list(starts) == serial_sgs_python(inst, lst)
        assert schedule_violations(inst, starts) == []
        assert makespan(inst, starts) == (starts + inst.durations).max()
        assert makespan(inst, starts) >= critical_path_bound(inst)


def test_parallel_sgs_feasible_and_batch_consistent(inst: RcpspInstance) -> None:
    rng = np.random.default_rng(3)
    lists = np.array([random_topological_order(inst, rng) for _ in range(20)])
    batch = parallel_sgs_batch(inst, lists)
    for lst, starts in zip(lists, batch, strict=True):
        assert schedule_violations(inst, starts) == []
        assert list(parallel_sgs(inst, lst)) == list(starts)


def test_fbi_never_worse_and_list_decodes_to_schedule(inst: RcpspInstance) -> None:
    rng = np.random.default_rng(11)
    for _ in range(10):
        lst = random_topological_order(inst, rng)
        s = serial_sgs(inst, lst)
        s2, lst2, ms2 = forward_backward_improvement(inst, s, lst)
        assert schedule_violations(inst, s2) == []
        assert ms2 == makespan(inst, s2) <= makespan(inst, s)
        assert list(serial_sgs(inst, lst2)) == list(s2)


def test_rejects_infeasible_list() -> None:
    inst = load_instance(DATA / FILES[0])
    bad = topological_order(inst)[::-1]
    with pytest.raises(ValueError, match="predecessors"):
        serial_sgs(inst, bad)


_J30 = load_instance(DATA / FILES[1]) if (DATA / FILES[1]).exists() else None


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_property_random_lists(seed: int) -> None:
    assert _J30 is not None
    lst = random_topological_order(_J30, np.random.default_rng(seed))
    s = serial_sgs(_J30, lst)
    assert list(s) == serial_sgs_python(_J30, lst)
    assert schedule_violations(_J30, s) == []
    p = parallel_sgs(_J30, lst)
    assert schedule_violations(_J30, p) == []
    s2, _, ms2 = forward_backward_improvement(_J30, s, lst)
    assert schedule_violations(_J30, s2) == [] and ms2 <= makespan(_J30, s)


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=3, max_size=9).flatmap(
        lambda durs: st.tuples(
            st.just(durs),
            st.lists(
                st.lists(st.integers(0, 3), min_size=2, max_size=2), min_size=len(durs), max_size=len(durs)
            ),
            st.lists(st.booleans(), min_size=len(durs) ** 2, max_size=len(durs) ** 2),
            st.integers(0, 2**32 - 1),
        )
    )
)
def test_property_random_small_instances(case: tuple) -> None:  # type: ignore[type-arg]
    """Zero durations, zero demands and dense precedence: the corner cases."""
    durs, dems, arcs, seed = case
    n = len(durs)
    succ = [[b for b in range(a + 1, n) if arcs[a * n + b]] for a in range(n)]
    inst = from_arrays("rand", durs, dems, [3, 3], succ)
    lst = random_topological_order(inst, np.random.default_rng(seed))
    s = serial_sgs(inst, lst)
    assert list(s) == serial_sgs_python(inst, lst)
    assert schedule_violations(inst, s) == []
    assert schedule_violations(inst, parallel_sgs(inst, lst)) == []
    s2, lst2, ms2 = forward_backward_improvement(inst, s, lst)
    assert schedule_violations(inst, s2) == [] and ms2 <= makespan(inst, s)
    assert list(serial_sgs(inst, lst2)) == list(s2)


def test_data_dir_env_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("EVOLVE_PSPLIB_DIR", str(tmp_path))
    assert psplib_dir() == tmp_path
