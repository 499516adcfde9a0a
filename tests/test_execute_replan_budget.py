"""A planner that keeps returning the same broken plan spends the replans and ends
``replan_budget`` (as the sources say), not ``no_plan``; a planner that gives up (no steps) still
ends ``no_plan``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from evolve.agent import History, PlanExecuteAgent, demo_problem, demo_tools, make_deterministic_planner


def test_the_same_broken_plan_every_time_ends_replan_budget(tmp_path: Path) -> None:
    first = make_deterministic_planner(fail_step_id=2)
    asked: list[dict[str, Any] | None] = []

    def stubborn(goal: str, history: History, last_error: dict[str, Any] | None) -> Any:
        asked.append(last_error)
        return first(goal, history, None)  # the plan whose step2 fails, whatever went wrong

    agent = PlanExecuteAgent(demo_problem(), demo_tools(), planner=stubborn, max_replans=3, attempts=2,
                             out=tmp_path / "run", report=False)
    res = agent.run("ship the report")
    assert (res.status, res.reason) == ("failed", "replan_budget"), res.message
    assert "--max-replans 3 spent" in res.message and "transform" in res.message
    outcome = json.loads((tmp_path / "run" / "outcome.json").read_text())
    assert (outcome["reason"], outcome["replans"]) == ("replan_budget", 3)
    # the first plan, then each of the 3 replans asked its 2 answers: every one refused
    assert len(asked) == 1 + 3 * 2
    assert all(error is not None and error["validation_errors"] for error in asked[2::2])


def test_a_planner_that_gives_up_on_the_replan_still_ends_no_plan(tmp_path: Path) -> None:
    agent = PlanExecuteAgent(demo_problem(), demo_tools(), planner=make_deterministic_planner(2, "give_up"),
                             out=tmp_path / "run", report=False)
    res = agent.run()
    assert (res.status, res.reason) == ("failed", "no_plan")
    assert json.loads((tmp_path / "run" / "outcome.json").read_text())["replans"] == 1
