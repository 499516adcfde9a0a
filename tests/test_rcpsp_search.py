"""The search on real PSPLIB files: feasible, on budget, reproducible, good."""

from __future__ import annotations

import numpy as np
import pytest

from evolve.problems.rcpsp.check import schedule_violations
from evolve.problems.rcpsp.decode import serial_sgs
from evolve.problems.rcpsp.instance import critical_path_bound, load_best_known, load_instance, psplib_dir
from evolve.problems.rcpsp.search import GaParams, solve

DATA = psplib_dir()
pytestmark = pytest.mark.skipif(not (DATA / "j30").is_dir(), reason=f"PSPLIB data not found at {DATA}")


@pytest.mark.parametrize("name", ["j30/j301_1.sm", "j60/j6017_4.sm", "j120/j1206_2.sm"])
def test_result_is_feasible_and_within_budget(name: str) -> None:
    inst = load_instance(DATA / name)
    res = solve(inst, schedules=300, seed=5)
    assert schedule_violations(inst, res.starts) == []
    assert res.makespan == int((res.starts + inst.durations).max())
    assert res.makespan >= critical_path_bound(inst)
    assert res.schedules_used <= 300
    # the reported list is precedence-feasible and decodes to the reported schedule
    assert list(serial_sgs(inst, res.activity_list)) == list(res.starts)


@pytest.mark.parametrize("budget", [1, 2, 3, 7])
def test_tiny_budgets_are_respected(budget: int) -> None:
    inst = load_instance(DATA / "j30/j3013_5.sm")
    res = solve(inst, schedules=budget, seed=1)
    assert res.schedules_used <= budget
    assert schedule_violations(inst, res.starts) == []


def test_same_seed_same_result() -> None:
    inst = load_instance(DATA / "j60/j6017_4.sm")
    a = solve(inst, schedules=500, seed=42)
    b = solve(inst, schedules=500, seed=42)
    assert a.makespan == b.makespan and a.schedules_used == b.schedules_used
    assert np.array_equal(a.starts, b.starts)
    assert np.array_equal(a.activity_list, b.activity_list)


def test_time_budget() -> None:
    inst = load_instance(DATA / "j120/j1206_2.sm")
    res = solve(inst, seconds=0.3, seed=0)
    assert res.seconds < 2.0 and res.schedules_used > 0
    assert schedule_violations(inst, res.starts) == []


@pytest.mark.parametrize("name", ["j301_1", "j302_3", "j3010_5", "j3037_2"])
def test_reaches_optimum_on_easy_j30(name: str) -> None:
    inst = load_instance(DATA / "j30" / f"{name}.sm")
    opt = load_best_known("j30")[name].best_known
    res = solve(inst, schedules=1000, seed=0, lower_bound=opt)
    assert res.makespan == opt
    assert res.schedules_used <= 1000


def test_needs_a_budget() -> None:
    inst = load_instance(DATA / "j30/j301_1.sm")
    with pytest.raises(ValueError):
        solve(inst, schedules=None, seconds=None)


@pytest.mark.parametrize("near", [0.0, 0.5, 1.0])
def test_restart_near_elite_is_feasible_and_on_budget(near: float) -> None:
    # frequent restarts so the neighbour-of-elite restart actually runs
    inst = load_instance(DATA / "j60/j6017_4.sm")
    p = GaParams(restart_near=near, restart_after=1, restart_mix=0.5)
    res = solve(inst, schedules=400, seed=3, params=p)
    assert res.schedules_used <= 400
    assert schedule_violations(inst, res.starts) == []
    assert list(serial_sgs(inst, res.activity_list)) == list(res.starts)
    again = solve(inst, schedules=400, seed=3, params=p)
    assert np.array_equal(res.starts, again.starts)
