"""The memory guard (:mod:`evolve.problems.htn.memory`): a search that would grow into the
kernel's OOM killer (which ends a process with no word) stops instead, and says that the memory
ran out: with no plan yet, a budget error (exit 1) that names it; after the first plan, the
search ends with the best plan so far. The guard is fed its readings here; on this machine it
also reads the kernel's own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from evolve.problems import load_problem
from evolve.problems.htn import HtnProblem
from evolve.problems.htn.algorithm import HtnChoices, PlanBudgetError
from evolve.problems.htn.decomposition import Decomposition, NoPlan
from evolve.problems.htn.hddl import read_hddl
from evolve.problems.htn.memory import MemoryGuard, free_memory
from evolve.problems.htn.planner import Planner
from evolve.problems.htn.reader import domain_from_dict
from evolve.search.develop import Undeveloped
from tests.test_htn_hddl import IPC

GB = 2**30
BARMAN = IPC / "Barman-BDI"


def readings(*free_gb: float, total_gb: float = 16.0) -> list[tuple[int, int]]:
    return [(int(f * GB), int(total_gb * GB)) for f in free_gb]


class Feed:
    """Readings handed out in order, the last one repeated; counts the reads."""

    def __init__(self, values: list[tuple[int, int]]) -> None:
        self.values = values
        self.reads = 0

    def __call__(self) -> tuple[int, int] | None:
        self.reads += 1
        return self.values[min(self.reads, len(self.values)) - 1]


def test_trips_below_the_floor_and_stays_tripped() -> None:
    feed = Feed(readings(8, 3, 1.5, 12))
    guard = MemoryGuard(floor=0.1, every=0.0, read=feed)
    assert [guard.low() for _ in range(2)] == [False, False]
    assert guard.low() and guard.tripped == (int(1.5 * GB), 16 * GB)
    assert guard.low(), "free memory coming back does not undo a trip: the search already stopped"
    assert feed.reads == 3
    assert "1.5 GB of 16.0 GB" in guard.describe() and "10%" in guard.describe()


def test_reads_at_most_once_a_period_and_never_trips_without_a_reading() -> None:
    feed = Feed(readings(8))
    guard = MemoryGuard(every=3600.0, read=feed)
    assert not any(guard.low() for _ in range(1000))
    assert feed.reads == 1
    blind = MemoryGuard(every=0.0, read=lambda: None)
    assert not any(blind.low() for _ in range(10))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/meminfo")
def test_reads_this_machines_memory() -> None:
    seen = free_memory()
    assert seen is not None
    free, total = seen
    assert 0 < free <= total
    assert not MemoryGuard(floor=0.0).low()


def barman() -> Path:
    problem = BARMAN / "pfile01.hddl"
    if not problem.exists():
        pytest.skip("the IPC 2020 files are not here")
    return problem


def test_a_search_stopped_by_memory_says_so_and_is_not_a_no_plan_verdict() -> None:
    problem = barman()
    domain, _ = domain_from_dict(read_hddl(BARMAN / "domain.hddl", problem))
    assert isinstance(Planner(domain).plan(), Decomposition)
    feed = Feed(readings(0.5))
    outcome = Planner(domain, memory=MemoryGuard(every=0.0, read=feed)).plan()
    assert isinstance(outcome, NoPlan) and outcome.reason == "memory"
    assert outcome.stopped and outcome.exhausted, "a plan may exist: this is no proof of none"
    assert "memory ran out" in str(outcome) and "0.5 GB of 16.0 GB" in str(outcome)


def htn_problem(tmp_path: Path) -> HtnProblem:
    problem = barman()
    doc = tmp_path / "barman.json"
    doc.write_text(json.dumps(read_hddl(BARMAN / "domain.hddl", problem)))
    loaded = load_problem(doc)
    assert isinstance(loaded, HtnProblem)
    return loaded


def test_no_first_plan_before_the_memory_ran_out_is_a_budget_error(tmp_path: Path) -> None:
    choices = HtnChoices(htn_problem(tmp_path), memory=MemoryGuard(every=0.0, read=lambda: (GB, 16 * GB)))
    with pytest.raises(PlanBudgetError, match="memory ran out"):
        choices.first(6, 1, Undeveloped().develop)


def test_after_the_first_plan_the_search_stops_with_it(tmp_path: Path) -> None:
    guard = MemoryGuard(every=0.0, read=lambda: (8 * GB, 16 * GB))
    choices = HtnChoices(htn_problem(tmp_path), memory=guard)
    made = choices.first(6, 1, Undeveloped().develop)
    assert made[0].plan is not None and made[0].plan.tasks
    assert choices.at_bound() is None
    guard.read = lambda: (GB // 2, 16 * GB)
    assert guard.low()
    reason = choices.at_bound()
    assert reason is not None and "free memory fell to 0.5 GB" in reason and "best plan so far" in reason
