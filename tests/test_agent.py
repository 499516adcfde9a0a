"""The plan-execute agent: the sources' demo, a planner's bad plans fed back, the error a replan
sees, goal_met decided by the executor, and a run continued after it was interrupted."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evolve.agent import (
    History,
    PlanExecuteAgent,
    demo_problem,
    demo_tools,
    make_deterministic_planner,
)
from evolve.agent.planner import TAG, planner_view, tagged
from evolve.execute.tools import Call, ToolFn
from evolve.model.plan import Plan, Task


def demo_agent(out: Path, **kwargs: Any) -> PlanExecuteAgent:
    kwargs.setdefault("planner", make_deterministic_planner(fail_step_id=2, recovery="route_around"))
    return PlanExecuteAgent(demo_problem(), demo_tools(), max_steps=12, max_replans=5, out=out, **kwargs)


def test_the_sources_demo_routes_around_the_failed_step(tmp_path: Path) -> None:
    res = demo_agent(tmp_path / "run").run("ship the report")
    assert (res.status, res.reason) == ("completed", "goal_met")
    [diff] = res.revisions
    assert diff.to_dict()["revision"] == 1
    assert (diff.removed, diff.added, diff.revised) == ((), (), ("step2",))
    step2 = res.plans[1].by_id()["step2"]
    assert step2.name == "computed via fallback"
    assert (step2.tool, step2.inputs["mode"]) == ("transform.fallback", "v2")
    assert "via transform.fallback" in res.outputs["step3"]["report"]
    # the executor's own record agrees: it ran the failed step once, then the fallback
    outcome = json.loads((res.out / "outcome.json").read_text())
    assert (outcome["reason"], outcome["replans"]) == ("goal_met", 1)
    assert sorted(t["tool"] for t in outcome["tasks"].values() if t["status"] == "done") == [
        "fetch", "ship", "transform.fallback"]
    assert (res.out / "report.html").is_file() and (res.out / "journal.sqlite").is_file()
    assert set(res.to_dict()) >= {"status", "reason", "revisions", "outputs", "out"}


def test_a_planner_that_gives_up_ends_with_no_plan(tmp_path: Path) -> None:
    res = demo_agent(tmp_path / "run", planner=make_deterministic_planner(2, "give_up")).run()
    assert (res.status, res.reason) == ("failed", "no_plan")
    assert res.revisions == ()


def test_the_replan_sees_the_failed_step_its_error_and_the_partial_results(tmp_path: Path) -> None:
    inner = make_deterministic_planner(fail_step_id=2)
    calls: list[tuple[str, History, dict[str, Any] | None]] = []

    def planner(goal: str, history: History, last_error: dict[str, Any] | None) -> Any:
        calls.append((goal, history, last_error))
        return inner(goal, history, last_error)

    assert demo_agent(tmp_path / "run", planner=planner).run("ship the report").goal_met
    (goal, history, first), (_, replan_history, error) = calls
    assert (goal, history, first) == ("ship the report", [], None)
    assert error is not None
    assert error["failed_step"]["id"] == "step2" and error["failed_step"]["tool"] == "transform"
    assert "the v1 endpoint answered 503" in error["error"]
    assert list(error["partial_results"]) == ["step1"]
    assert error["excluded_tools"] == ["transform"]
    assert [h["id"] for h in replan_history] == ["step1"]
    assert replan_history[0]["outputs"]["raw"].startswith("raw of")


def test_a_bad_plan_goes_back_with_the_validators_errors(tmp_path: Path) -> None:
    good = make_deterministic_planner(fail_step_id=3)
    seen: list[dict[str, Any] | None] = []

    def planner(goal: str, history: History, last_error: dict[str, Any] | None) -> Any:
        seen.append(last_error)
        if len(seen) == 1:
            return [{"id": "a", "tool": "teleport"}]
        # the demo planner takes any error for a failed step: hand it the first plan's None
        return good(goal, history, None if len(seen) == 2 else last_error)

    res = demo_agent(tmp_path / "run", planner=planner).run()
    assert res.goal_met
    assert seen[0] is None
    retry = seen[1]
    assert retry is not None and retry["failed_step"] is None
    assert any("unknown tool 'teleport'" in e for e in retry["validation_errors"])
    assert res.revisions[0].revised == ("step3",)


def test_a_planner_that_never_gets_it_right_ends_with_no_plan_after_its_attempts(tmp_path: Path) -> None:
    asked = []

    def planner(goal: str, history: History, last_error: dict[str, Any] | None) -> Any:
        asked.append(1)
        return [{"id": "a", "tool": "fetch"}]  # valid, but it never makes the report

    res = demo_agent(tmp_path / "run", planner=planner, attempts=2).run()
    assert (res.status, res.reason, len(asked)) == ("failed", "no_plan", 2)
    assert "criterion 'report'" in res.message
    assert not (res.out / "journal.sqlite").exists()  # nothing ran


def test_goal_met_is_the_executors_verdict_not_the_planners(tmp_path: Path) -> None:
    """Tools that return nothing useful: the planner's plan is fine, the goal is still not met."""

    def silent(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        return {}

    tools: dict[str, ToolFn] = {name: silent for name in demo_tools()}
    agent = PlanExecuteAgent(demo_problem(), tools, planner=make_deterministic_planner(1, "give_up"),
                             out=tmp_path / "run")
    res = agent.run()
    assert res.status == "failed" and res.reason != "goal_met"


def test_the_search_is_the_default_planner(tmp_path: Path) -> None:
    res = PlanExecuteAgent(demo_problem(), demo_tools(), out=tmp_path / "run").run()
    assert (res.status, res.reason) == ("completed", "goal_met")
    assert (res.out / "plan" / "best.json").is_file()  # the search's run folder: its evidence
    assert [t.tool for t in res.plans[0].tasks] == ["fetch", "transform", "ship"]


class Interrupt(Exception):
    pass


def test_an_interrupted_run_continues_without_running_a_done_step_again(tmp_path: Path) -> None:
    out = tmp_path / "run"
    counts: dict[str, int] = {}
    base = demo_tools()

    def counted(name: str) -> ToolFn:
        def run(inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
            counts[name] = counts.get(name, 0) + 1
            return base[name](inputs, call)
        return run

    tools = {name: counted(name) for name in base}

    def stop_after_step1(event: dict[str, Any]) -> None:
        if event["event"] == "step.end" and event.get("task") == "step1":
            raise Interrupt

    planned = []

    def planner(goal: str, history: History, last_error: dict[str, Any] | None) -> Any:
        planned.append(last_error)
        return make_deterministic_planner(2)(goal, history, last_error)

    first = PlanExecuteAgent(demo_problem(), tools, planner=planner, out=out, on_event=stop_after_step1)
    with pytest.raises(Interrupt):
        first.run("ship the report")
    assert counts == {"fetch": 1}
    res = PlanExecuteAgent(demo_problem(), tools, planner=planner, out=out).run("ship the report")
    assert (res.status, res.reason) == ("completed", "goal_met")
    assert counts["fetch"] == 1  # done before the interruption: not called again
    assert planned[0] is None and all(e is not None for e in planned[1:])  # no second first plan
    assert res.revisions[0].revised == ("step2",)


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="fail_step_id 7"):
        make_deterministic_planner(7)
    with pytest.raises(ValueError, match="recovery 'pray'"):
        make_deterministic_planner(2, "pray")


# -- the planner's step ids survive the executor's fresh task ids ----------------------------------


@given(st.integers(1, 6), st.lists(st.integers(0, 5), max_size=6),
       st.text(max_size=12).filter(lambda s: TAG.match(s) is None))
def test_planner_view_reads_every_revision_back_in_the_planners_ids(
        size: int, replaced: list[int], name: str) -> None:
    """A chain of steps; some are replanned (a new task with a fresh id, tagged with the step it
    revises, reading the latest task of the step before): the planner's view of the executor's
    plan is the planner's latest chain, whatever the names and the order of the revisions."""
    steps = [f"s{k}" for k in range(size)]
    latest = {s: s for s in steps}  # step -> its latest executor task id

    def task(tid: str, k: int) -> Task:
        inputs = {"x": f"${latest[steps[k - 1]]}.x"} if k else {}
        return Task(id=tid, tool="make", deps=(latest[steps[k - 1]],) if k else (), inputs=inputs,
                    name=name or None)

    tasks = [task(s, k) for k, s in enumerate(steps)]
    for n, k in enumerate(r for r in replaced if r < size):
        fresh = f"t{n + 1}"
        tasks.append(tagged(task(fresh, k), steps[k]))
        latest[steps[k]] = fresh
    view = planner_view(Plan(tasks=tuple(tasks)))
    assert sorted(view.ids()) == steps
    for k, step in enumerate(steps):
        got = view.by_id()[step]
        assert got.name == (name or None)
        assert got.inputs == ({"x": f"${steps[k - 1]}.x"} if k else {})
        assert got.deps == ((steps[k - 1],) if k else ())
