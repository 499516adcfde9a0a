"""``PlanExecuteAgent`` with a person in the plan: a ``by: human`` tool needs no callable, the run
waits (status ``waiting``), ``evolve pending`` names the step in the ids a person can use, and
``evolve approve`` with the id ``pending`` shows (or the planner's own step id) lets the agent's
next ``run`` go on to the goal, the write made once."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from evolve.agent import History, PlanExecuteAgent
from evolve.cli.main import cli
from evolve.execute.tools import Call, ToolFailure, ToolFn
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict


def evolve(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def incident() -> Problem:
    return problem_from_dict({
        "name": "incident", "criteria": ["restarted"],
        "policy": {"write_requires_approval": True},
        "tools": {
            "logs.diagnose": {"duration": 1, "outputs": ["cause"]},
            "logs.diagnose_slow": {"duration": 3, "outputs": ["cause"]},
            "approvals.oncall": {"duration": 1, "risk": "approval", "by": "human", "inputs": ["cause"],
                                 "outputs": ["approval"]},
            "service.restart": {"duration": 1, "risk": "write", "inputs": ["cause"],
                                "outputs": ["restarted"]},
        }}, "<incident>")


def tools(restarts: list[Mapping[str, Any]]) -> dict[str, ToolFn]:
    def diagnose(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        if inputs.get("mode") == "v1":
            raise ToolFailure("the v1 log endpoint answered 503")
        return {"cause": "disk full"}

    def restart(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        restarts.append(dict(inputs))
        return {"restarted": True}

    # no callable for approvals.oncall: a person owns it
    return {"logs.diagnose": diagnose, "logs.diagnose_slow": diagnose, "service.restart": restart}


def planner(goal: str, history: History, last_error: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``look`` fails on the first plan; the replan diagnoses the slow way: ``ok`` and ``fix``
    then run as new executor tasks (they read the replaced step)."""
    look: dict[str, Any] = {"id": "look", "tool": "logs.diagnose_slow"}
    if last_error is None:
        look = {"id": "look", "tool": "logs.diagnose", "inputs": {"mode": "v1"}, "on_failure": "replan"}
    return [
        look,
        {"id": "ok", "tool": "approvals.oncall", "deps": ["look"], "inputs": {"cause": "$look.cause"}},
        {"id": "fix", "tool": "service.restart", "deps": ["look", "ok"], "inputs": {"cause": "$look.cause"},
         "idempotency_key": "restart:incident-1"},
    ]


def agent(out: Path, restarts: list[Mapping[str, Any]]) -> PlanExecuteAgent:
    return PlanExecuteAgent(incident(), tools(restarts), planner=planner, out=out, report=False)


def test_the_agent_waits_for_the_person_and_goes_on_after_approve(tmp_path: Path) -> None:
    out, restarts = tmp_path / "agent1", list[Mapping[str, Any]]()
    first = agent(out, restarts).run("restart the service")
    assert (first.status, first.reason) == ("waiting", "waiting"), first.message
    assert restarts == [] and len(first.revisions) == 1
    shown = evolve("pending", out, "--json")
    assert shown.exit_code == 0, shown.output
    [item] = json.loads(shown.output)
    assert item["step"] == "ok" and item["tool"] == "approvals.oncall"
    executor_id = item["task"]
    assert executor_id != "ok"  # the replan made the step a new executor task
    text = evolve("pending", out).output
    assert text.startswith(f"{executor_id} [ok]") or text.split()[:2] == [executor_id, "[ok]"], text
    # the planner's id names the same task; an unknown one is refused with the ids there are
    assert evolve("approve", out, "nope").exit_code == 2
    done = evolve("approve", out, "ok", "--as", "asha")
    assert done.exit_code == 0, done.output
    assert done.output.startswith(f"{executor_id} (step ok) approved by asha")
    again = agent(out, restarts).run("restart the service")
    assert (again.status, again.reason) == ("completed", "goal_met"), again.message
    assert restarts == [{"cause": "disk full"}]
    assert again.outputs["fix"] == {"restarted": True}


def test_the_executor_id_pending_shows_is_accepted_too(tmp_path: Path) -> None:
    out, restarts = tmp_path / "agent2", list[Mapping[str, Any]]()
    assert agent(out, restarts).run().status == "waiting"
    [item] = json.loads(evolve("pending", out, "--json").output)
    assert evolve("reject", out, item["task"], "--note", "not at night").exit_code == 0
    ended = agent(out, restarts).run()
    assert ended.status == "failed" and restarts == []
