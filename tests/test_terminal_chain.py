"""A long plan's critical path stays one readable line on the terminal: its first and last
ids with the count left out between (issue 45: a 398-step HTN plan printed 398 ids)."""

from __future__ import annotations

from evolve import defaults
from evolve.cli.checks import schedule_table
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem, Tool
from evolve.report.terminal import short_chain
from evolve.scheduling import schedule


def test_a_short_chain_is_printed_whole() -> None:
    assert short_chain([]) == "-"
    ids = [f"t{i}" for i in range(2 * defaults.CHAIN_ENDS)]
    assert short_chain(ids) == " -> ".join(ids)


def test_a_chain_of_hundreds_of_ids_is_shortened_with_its_count() -> None:
    ids = [f"t{i}" for i in range(1, 399)]
    text = short_chain(ids)
    assert text.startswith("t1 -> t2 -> ") and text.count(" -> ") == 2 * defaults.CHAIN_ENDS
    assert "t10 -> ... (378 more) -> t389" in text and text.endswith("t398 (398 tasks)")
    assert "t11 " not in text and "t388 " not in text


def test_the_run_summary_table_prints_the_short_chain() -> None:
    tasks = tuple(Task(id=f"t{i}", tool="w", deps=(f"t{i - 1}",) if i > 1 else ()) for i in range(1, 61))
    problem = Problem(tools={"w": Tool("w", 1.0)})
    plan = Plan(tasks=tasks)
    table = schedule_table(plan, schedule(problem, plan), problem)
    last = table.splitlines()[-1]
    assert last.startswith("makespan 60; critical path (60): t1 -> ") and "(40 more)" in last
    assert last.endswith("t60 (60 tasks)")
