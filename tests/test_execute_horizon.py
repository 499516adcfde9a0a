"""The rolling horizon (``ExecuteOptions.horizon``, ``evolve execute --horizon K``): only the next
K tasks are committed, the rest is planned again from what they made, the goal is still the
executor's verdict, and a horizon run killed between revisions resumes to the same outcome."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from benchmark_scripts import load_benchmark
from click.testing import CliRunner
from crashing import LOG_TOOL, Spawned, resume, runner, spawn
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.agent import PlanExecuteAgent
from evolve.cli.main import cli
from evolve.execute import ExecuteOptions, start_run
from evolve.execute.horizon import window
from evolve.execute.journal import Journal
from evolve.execute.replan import SearchReplanner
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem, Tool


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    """The benchmark script as a module, loaded from its path (benchmarks/ is not a package)."""
    return load_benchmark("rolling_horizon")


@pytest.fixture(scope="module")
def rows(bench: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    found = bench.scenario(tmp_path_factory.mktemp("horizon"), (1, 2), 0)
    return {row["run"]: row for row in found}


def test_the_fixed_plan_misses_the_goal_and_the_horizon_meets_it_sooner(
    rows: dict[str, dict[str, Any]],
) -> None:
    assert rows["fixed"]["first_plan"] == ["lookup_a", "lookup_b", "render_cached_a", "render_cached_b"]
    assert (rows["fixed"]["reason"], rows["fixed"]["goal_met"]) == ("task_failed", False)
    assert rows["fixed+replan"]["goal_met"] and rows["horizon 2"]["goal_met"]
    # the miss is seen when lookup_b returns, not when render_cached_b fails on it
    assert rows["horizon 2"]["makespan"] < rows["fixed+replan"]["makespan"]
    assert rows["horizon 2"]["calls"] < rows["fixed+replan"]["calls"]
    assert rows["horizon 1"]["goal_met"]  # one task at a time: met, though the lookups no longer overlap


def test_the_goal_is_the_executors_verdict_and_each_horizon_replan_is_a_revision(
    bench: ModuleType, tmp_path: Path
) -> None:
    prob = bench.problem()
    plan = bench.first_plan(prob, tmp_path / "plan", 0)
    outcome = bench.run(prob, plan, tmp_path / "run", 2, 0)
    assert outcome["reason"] == "goal_met"
    made = outcome["criteria"]
    assert set(made) == {"report_a", "report_b"}
    for tid in made.values():  # each criterion credited to a done task that returned it
        assert outcome["tasks"][tid]["status"] == "done"
    assert outcome["tasks"][made["report_b"]]["tool"] == "render_fresh_b"
    assert outcome["revisions"] and all(r["reason"] == "horizon" for r in outcome["revisions"])
    assert outcome["replans"] == len(outcome["revisions"])
    invalidated = {tid for tid, t in outcome["tasks"].items() if t["status"] == "invalidated"}
    assert {outcome["tasks"][tid]["tool"] for tid in invalidated} == {"render_cached_b"}
    journal = Journal(tmp_path / "run" / "journal.sqlite")
    try:
        meta = journal.meta()
        events = journal.events()
    finally:
        journal.close()
    assert meta["options"]["horizon"] == 2
    windows = [e for e in events if e["event"] == "plan.window"]
    assert len(windows[0]["committed"]) == 2
    assert len(windows) == len(outcome["revisions"]) + 1


def test_with_no_replan_left_the_window_is_lifted_and_the_plan_runs_as_given(
    bench: ModuleType, tmp_path: Path
) -> None:
    prob = bench.problem()
    plan = bench.first_plan(prob, tmp_path / "plan", 0)
    outcome = start_run(
        prob,
        plan,
        tmp_path / "run",
        plan_source="test",
        tools_spec=None,
        tools=bench.scripted_tools(),
        options=ExecuteOptions(horizon=1, max_replans=0),
        replanner=SearchReplanner(),
        dispatcher=bench.virtual,
    ).run()
    assert (outcome["reason"], outcome["replans"]) == ("task_failed", 0)  # as the fixed plan
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert [e["action"] for e in events if e["event"] == "plan.horizon"] == ["lift"]


def test_a_run_without_a_horizon_journals_no_window(bench: ModuleType, tmp_path: Path) -> None:
    prob = bench.problem()
    plan = bench.first_plan(prob, tmp_path / "plan", 0)
    bench.run(prob, plan, tmp_path / "run", None, 0)
    journal = Journal(tmp_path / "run" / "journal.sqlite")
    try:
        assert "window" not in journal.meta() and "horizon" not in journal.meta()["options"]
        assert not [e for e in journal.events() if e["event"].startswith(("plan.window", "plan.horizon"))]
    finally:
        journal.close()


def test_the_agent_takes_a_horizon(bench: ModuleType, tmp_path: Path) -> None:
    agent = PlanExecuteAgent(
        bench.problem(),
        bench.scripted_tools(),
        out=tmp_path / "agent",
        horizon=2,
        max_steps=20,
        max_replans=8,
        report=False,
    )
    result = agent.run()
    assert result.goal_met
    assert result.revisions and {d.reason for d in result.revisions} == {"horizon"}
    assert result.made["report_b"] == "report from computed b"


@st.composite
def dags(draw: st.DrawFn) -> tuple[Problem, Plan, int]:
    n = draw(st.integers(1, 9))
    tasks = []
    for i in range(n):
        deps = draw(st.lists(st.integers(0, i - 1), unique=True, max_size=3)) if i else []
        tasks.append(Task(id=f"t{i}", tool=f"k{i}", deps=tuple(f"t{d}" for d in deps)))
    durations = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    tools = {f"k{i}": Tool(f"k{i}", float(durations[i])) for i in range(n)}
    return Problem(tools=tools), Plan(tasks=tuple(tasks)), draw(st.integers(1, 10))


@settings(max_examples=60, deadline=None)
@given(dags(), st.data())
def test_a_window_never_waits_for_a_task_outside_it(
    case: tuple[Problem, Plan, int], data: st.DataObject
) -> None:
    problem, plan, k = case
    done = data.draw(st.sets(st.sampled_from([t.id for t in plan.tasks])))
    done = {t.id for t in plan.tasks if t.id in done and all(d in done for d in t.deps)}
    status: dict[str, Any] = {t.id: "done" if t.id in done else "pending" for t in plan.tasks}
    chosen = window(problem, plan, status, k)
    pending = [t for t in plan.tasks if t.id not in done]
    assert len(chosen) == min(k, len(pending)) and len(set(chosen)) == len(chosen)
    by_id = plan.by_id()
    for i, tid in enumerate(chosen):
        assert status[tid] == "pending"
        for dep in by_id[tid].deps:  # a dep is done or committed before it
            assert status[dep] == "done" or dep in chosen[:i]


def test_resume_keeps_the_runs_horizon() -> None:
    result = CliRunner().invoke(cli, ["execute", "--resume", "nowhere", "--horizon", "2"])
    assert result.exit_code == 2 and "--horizon" in result.output
    result = CliRunner().invoke(cli, ["execute", "plan.json", "--horizon", "0"])
    assert result.exit_code == 2 and "--horizon" in result.output


# -- killed between revisions, resumed --------------------------------------------------------

PROBLEM = """
name: horizon_crash
initial: [query]
criteria: [report]
tools:
  lookup: {duration: 1, inputs: [query], outputs: [cached]}
  compute: {duration: 8, inputs: [query], outputs: [fresh]}
  render_cached: {duration: 2, inputs: [cached], outputs: [report]}
  render_fresh: {duration: 1, inputs: [fresh], outputs: [report]}
"""

PLAN = {
    "tasks": [
        {"id": "t1", "tool": "lookup", "inputs": {"query": "$query"}},
        {"id": "t2", "tool": "render_cached", "deps": ["t1"], "inputs": {"cached": "$t1.cached"}},
    ]
}

TOOLS = LOG_TOOL + """
from evolve.execute.tools import ToolFailure


def lookup(inputs, call):
    log(f"lookup {call.task_id}")
    return {"cached": None}  # a miss: known only now


def compute(inputs, call):
    log(f"compute {call.task_id}")
    return {"fresh": "data"}


def render_cached(inputs, call):
    log(f"render_cached {call.task_id}")
    if inputs.get("cached") is None:
        raise ToolFailure("nothing cached")
    return {"report": "old"}


def render_fresh(inputs, call):
    log(f"render_fresh {call.task_id}")
    return {"report": "from " + inputs["fresh"]}


TOOLS = {"lookup": lookup, "compute": compute, "render_cached": render_cached, "render_fresh": render_fresh}
"""

RUNNER = runner(
    "horizon_tools.py",
    imports="from evolve.execute import ExecuteOptions\nfrom evolve.execute.replan import SearchReplanner",
    arguments=", options=ExecuteOptions(horizon=1), replanner=SearchReplanner()",
)


def horizon_run(folder: Path, point: str, target: str) -> Spawned:
    """The runner in a process of its own (killed at ``point`` of ``target``, if it gets there)."""
    return spawn(folder, PROBLEM, PLAN, "horizon_tools.py", TOOLS, RUNNER, point, target)


def fate(out: Path) -> dict[str, Any]:
    """What a run came to, without its times."""
    outcome = json.loads((out / "outcome.json").read_text())
    return {
        "status": outcome["status"],
        "reason": outcome["reason"],
        "criteria": outcome["criteria"],
        "revisions": outcome["revisions"],
        "tasks": {tid: (t["tool"], t["status"], t["revision"]) for tid, t in outcome["tasks"].items()},
        "plan": outcome["plan"],
        "calls": outcome["calls"],
        "replans": outcome["replans"],
    }


@pytest.mark.parametrize(
    ("point", "target"),
    [
        ("after_commit", "t1"),  # revision 0's window is over, its horizon replan not yet asked
        ("after_commit", "t3"),  # revision 1's window (compute) is over, revision 2 not yet made
    ],
)
def test_a_horizon_run_killed_between_revisions_resumes_to_the_same_outcome(
    tmp_path: Path, point: str, target: str
) -> None:
    whole = horizon_run(tmp_path / "whole", "never", "-")
    assert whole.returncode == 0, whole.stderr
    killed = horizon_run(tmp_path / "killed", point, target)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert not (killed.out / "outcome.json").exists()
    resumed = resume(killed)
    assert resumed.exit_code == 0, resumed.output
    expected = fate(whole.out)
    assert (expected["reason"], expected["replans"]) == ("goal_met", 2)
    assert [r["reason"] for r in expected["revisions"]] == ["horizon", "horizon"]
    assert fate(killed.out) == expected
    assert killed.log.read_text().splitlines() == whole.log.read_text().splitlines()  # nothing run twice
