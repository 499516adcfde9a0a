"""benchmarks/execute_speed.py, run small: it broke once without anyone noticing when the journal's
API changed (it is not imported by evolve), so its every figure is checked printed and positive,
and its "journal alone" transactions are checked to write what a real run writes per call."""

from __future__ import annotations

import re
from pathlib import Path
from types import ModuleType

import pytest
from benchmark_scripts import load_benchmark

from evolve.execute.journal import Journal

ROW = re.compile(
    r"^(?P<plan>.+?)\s+(?P<sync>FULL|NORMAL)\s+(?P<per_task>\d+\.\d+) ms(?:\s+(?P<wall>\d+\.\d+) s)?"
)


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """The benchmark script as a module, loaded from its path (benchmarks/ is not a package)."""
    return load_benchmark("execute_speed")


def test_every_figure_is_printed_and_positive(bench: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    bench.main(["--layers", "2", "--width", "3", "--repeat", "1"])
    rows = [m for line in capsys.readouterr().out.splitlines() if (m := ROW.match(line))]
    found = {(m["plan"].strip(), m["sync"]) for m in rows}
    plans = ("journal alone", "layered 2x3", "chain of 6")
    assert found == {(plan, sync) for plan in plans for sync in ("FULL", "NORMAL")}
    for m in rows:
        assert float(m["per_task"]) > 0, m.group(0)
        if m["plan"].strip() != "journal alone":
            assert m["wall"] is not None and float(m["wall"]) > 0, m.group(0)


def step_shapes(journal: Journal) -> dict[str, list[tuple[str, tuple[str, ...]]]]:
    """Each task's step events, as their names and field names (times and values differ)."""
    found: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
    for event in journal.events():
        if event["event"].startswith("step."):
            found.setdefault(event["task"], []).append((event["event"], tuple(sorted(event))))
    return found


def test_journal_alone_writes_what_a_run_writes_per_call(bench: ModuleType, tmp_path: Path) -> None:
    problem, plan = bench.layered(2, 3)
    (tmp_path / "alone").mkdir()
    assert bench.journal_alone(tmp_path / "alone", problem, plan, "NORMAL") > 0
    _, outcome = bench.whole_run(tmp_path / "run", problem, plan, "NORMAL")
    assert outcome["reason"] == "goal_met"
    alone, run = Journal(tmp_path / "alone" / "journal.sqlite"), Journal(tmp_path / "run" / "journal.sqlite")
    try:
        assert step_shapes(alone) == step_shapes(run)
        assert [(c.task_id, c.status) for c in alone.calls()] == [(t.id, "done") for t in plan.tasks]
        assert sorted((c.task_id, c.status) for c in run.calls()) == sorted(
            (c.task_id, c.status) for c in alone.calls()
        )
        assert {t: r.status for t, r in alone.tasks().items()} == {
            t: r.status for t, r in run.tasks().items()
        }
    finally:
        alone.close()
        run.close()
