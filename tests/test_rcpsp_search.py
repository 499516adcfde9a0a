"""The search on real PSPLIB files: feasible, on budget, reproducible, good."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from evolve.problems.rcpsp.check import schedule_violations
from evolve.problems.rcpsp.decode import check_activity_list, serial_sgs
from evolve.problems.rcpsp.instance import (
    critical_path_bound,
    energy_bound,
    load_best_known,
    load_instance,
    lower_bound,
    psplib_dir,
)
from evolve.problems.rcpsp.search import Crossover, GaParams, solve

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
    p = GaParams(restart_near=near, restart_after=1)
    res = solve(inst, schedules=400, seed=3, params=p)
    assert res.schedules_used <= 400
    assert schedule_violations(inst, res.starts) == []
    assert list(serial_sgs(inst, res.activity_list)) == list(res.starts)
    again = solve(inst, schedules=400, seed=3, params=p)
    assert np.array_equal(res.starts, again.starts)


COUNTER = """
import sys
from evolve.problems.rcpsp import Crossover, GaParams, kernels, load_instance, search, solve
calls = [0]
def counted(f):
    def g(*a):
        calls[0] += 1
        return f(*a)
    return g
# with the JIT off the kernels are Python functions that look these names up at call time
kernels.serial_kernel = counted(kernels.serial_kernel)
kernels.parallel_kernel = counted(kernels.parallel_kernel)
kernels.delay_kernel = counted(kernels.delay_kernel)
search.serial_kernel = counted(search.serial_kernel)
inst = load_instance(sys.argv[1])
for params in (None, GaParams(restart_after=1, polish_slack=50),
               GaParams(crossover=Crossover.TWO_POINT, mate_pool=1, recycle=0.0),
               GaParams(restart_after=1, par_delay=-1, ser_delay=-1)):
    calls[0] = 0
    r = solve(inst, schedules=250, seed=1, params=params, lower_bound=0)
    print(r.schedules_used, calls[0])
"""


def test_every_decode_is_counted(tmp_path: Path) -> None:
    """Count the SGS runs themselves (JIT off, decoders wrapped): each one is a counted schedule,
    initial population, children, polishing passes, restarts and the final decode alike."""
    script = tmp_path / "count.py"
    script.write_text(COUNTER)
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    out = subprocess.run([sys.executable, str(script), str(DATA / "j60/j6017_4.sm")], env=env,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out == ["250"] * 8


WARM = """
from evolve.problems.rcpsp import kernels, intensify, decode, load_instance, solve
from evolve.problems.rcpsp.warmup import warm_up
import sys
def signatures():
    return sum(len(v.signatures) for m in (kernels, intensify, decode) for v in vars(m).values()
               if hasattr(v, "signatures"))
before = signatures()
warm_up()
warm = signatures()
inst = load_instance(sys.argv[1])
for budget in (1, 50, 3000, 20000):
    solve(inst, schedules=budget, seed=0)
print(before, warm, signatures())
"""


def test_warm_up_loads_every_kernel_the_timed_search_uses(tmp_path: Path) -> None:
    """After warm_up() (which each benchmark worker calls before any clock starts), a
    search at any budget compiles or loads no further kernel."""
    script = tmp_path / "warm.py"
    script.write_text(WARM)
    before, warm, after = (int(x) for x in subprocess.run(
        [sys.executable, str(script), str(DATA / "j120/j1206_2.sm")],
        capture_output=True, text=True, check=True).stdout.split())
    assert before == 0 and warm > 0 and after == warm


def test_own_lower_bound_is_critical_path_or_energy() -> None:
    inst = load_instance(DATA / "j120/j1206_2.sm")
    assert lower_bound(inst) == max(critical_path_bound(inst), energy_bound(inst))
    best = load_best_known("j120")["j1206_2"]
    assert critical_path_bound(inst) == best.cpm_lb and lower_bound(inst) <= best.best_known


def test_two_point_crossover_and_plain_tournament_are_feasible_on_budget_and_reproducible() -> None:
    inst = load_instance(DATA / "j120/j1206_2.sm")
    p = GaParams(crossover=Crossover.TWO_POINT, mate_pool=1, recycle=0.0, polish_slack=20)
    res = solve(inst, schedules=900, seed=2, params=p)
    assert res.schedules_used <= 900
    assert schedule_violations(inst, res.starts) == []
    assert list(serial_sgs(inst, res.activity_list)) == list(res.starts)
    again = solve(inst, schedules=900, seed=2, params=p)
    assert np.array_equal(res.starts, again.starts)
    assert not np.array_equal(res.starts, solve(inst, schedules=900, seed=2).starts)


def test_mate_is_the_most_different_tournament_winner() -> None:
    """The second parent is the candidate whose list differs most from the first's: with a
    plain tournament it is a copy of the first as often as not; with a pool of 40 draws
    from two individuals, the different one is drawn and taken (a miss has chance 2^-40)."""
    from evolve.problems.rcpsp.kernels import _select_mate

    lists = np.array([[0, 1, 2, 3, 4], [0, 1, 2, 3, 4], [0, 2, 1, 4, 3]], dtype=np.int64)
    ms = np.array([10, 10, 10], dtype=np.int64)
    rng = np.random.default_rng(0)
    picks = [int(_select_mate(rng, lists, ms, 3, 1, 0, 40)) for _ in range(20)]
    assert picks == [2] * 20
    plain = [int(_select_mate(rng, lists, ms, 3, 1, 0, 1)) for _ in range(300)]
    assert {0, 1, 2} == set(plain)


def test_survival_moves_near_copies_behind_distinct_schedules() -> None:
    """A survivor that starts fewer than ``distinct`` activities at other times than a better
    one counts as a copy: it yields its place to a worse but distinct schedule, and only
    fills a place left over; with ``distinct`` 1 only exact copies are copies."""
    from evolve.problems.rcpsp.kernels import BIG, _survive

    a = [0, 1, 2, 3, 4, 5]
    near = [0, 1, 2, 3, 4, 6]  # one start differs from a: same makespan, larger sum
    far = [0, 2, 4, 6, 8, 9]
    weights = np.arange(1, 7, dtype=np.int64) * 7919

    def survivors(distinct: int) -> list[list[int]]:
        pop_s = np.array([near, far, a], dtype=np.int64)
        pop_l = np.tile(np.arange(6, dtype=np.int64), (3, 1))
        pop_ms = np.array([10, 11, 10], dtype=np.int64)
        ch = np.zeros((1, 6), dtype=np.int64)
        _survive(pop_l, pop_s, pop_ms, ch, ch.copy(),
                 np.array([BIG], dtype=np.int64), weights, True, distinct)
        return [list(map(int, row)) for row in pop_s]

    assert survivors(1) == [a, near, far]
    assert survivors(2) == [a, far, near]
    # with 7 both count as copies of a (far differs in 5 starts): they refill in makespan order
    assert survivors(7) == [a, near, far]


def test_polishing_passes_are_recycled_as_feasible_schedules_of_their_world() -> None:
    """The backward passes of polishing are kept for the source world's next survival: each
    kept one is a feasible schedule of that world (world 1 mirrored) with the makespan it
    is filed under; with ``recycle`` 0 nothing is kept."""
    from evolve.problems.rcpsp.kernels import BIG
    from evolve.problems.rcpsp.search import BiPopulationGA

    inst = load_instance(DATA / "j120/j1206_2.sm")
    ga = BiPopulationGA(inst, schedules=5000, seed=1, params=GaParams(polish_slack=1000, restart_after=99))
    kept = 0
    for _ in range(4):
        ga.step()
        w = 1 - ga.src  # the world the generation's children came from
        for s, ms in zip(ga.spare_s[w], ga.spare_ms[w], strict=True):
            if ms >= BIG:
                continue
            starts = s if w == 0 else ms - s - inst.durations
            assert schedule_violations(inst, starts) == []
            assert int((starts + inst.durations).max()) == ms
            kept += 1
    assert kept > 0
    off = BiPopulationGA(inst, schedules=5000, seed=1, params=GaParams(recycle=0.0))
    off.step()
    assert off.spare_ms.size == 0


@pytest.mark.parametrize("name", ["j30/j301_1.sm", "j120/j1206_2.sm"])
def test_block_crossover_gives_feasible_lists_and_a_list_crossed_with_itself_back(name: str) -> None:
    """Every child of two precedence-feasible lists is a precedence-feasible permutation
    (the mother's activities that depend on the father's block wait for it), and crossing
    a list with itself gives that list: the block is cut in where it came from."""
    from evolve.problems.rcpsp.instance import latest_finishes
    from evolve.problems.rcpsp.lists import _crossover_block, _rbrs_list

    inst = load_instance(DATA / name)
    pb, n = inst.arrays, inst.n
    prio = latest_finishes(inst).astype(np.float64)
    rng = np.random.default_rng(5)
    mom, dad, child = (np.empty(n, dtype=np.int64) for _ in range(3))
    changed = 0
    for _ in range(300):
        _rbrs_list(rng, pb, prio, 1.0, mom)
        _rbrs_list(rng, pb, prio, 1.0, dad)
        _crossover_block(rng, pb, mom, dad, child)
        check_activity_list(inst, child)  # raises unless a precedence-feasible permutation
        changed += not np.array_equal(child, mom)
        _crossover_block(rng, pb, mom, mom, child)
        assert np.array_equal(child, mom)
    assert changed > 100
