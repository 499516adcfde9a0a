"""Failure policy in the catalog (issue 43, found item 4): a tool's ``retries`` and ``on_failure``
are the defaults of its tasks; the search copies them into its plans, a plan's own win, and the
executor honours them (a retryable failure is retried, a person's rejection replans)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

import pytest
from click.testing import CliRunner

from evolve import defaults
from evolve.cli.main import cli
from evolve.execute import ToolFailure, resume_run, start_run
from evolve.execute.records import Next
from evolve.execute.replan import Proposal, Situation
from evolve.model.errors import InputError
from evolve.model.plan import FAILURE_POLICIES, FailurePolicy
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem_file import problem_from_dict, problem_to_dict
from evolve.search.chaining import construct
from evolve.search.toolchoice import ToolChoice


def flaky_problem(**catalog: Any) -> dict[str, Any]:
    return {
        "name": "flaky",
        "initial": ["x"],
        "criteria": ["y"],
        "tools": {"fetch": {"duration": 1, "inputs": ["x"], "outputs": ["y"], **catalog}},
    }


PLAN = {"tasks": [{"id": "t1", "tool": "fetch", "inputs": {"x": "$x"}}]}


def flaky_tools(calls: list[int], failures: int) -> dict[str, Any]:
    def fetch(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
        calls.append(call.attempt)
        if len(calls) <= failures:
            raise ToolFailure("503 from upstream", retryable=True)
        return {"y": 1}

    return {"fetch": fetch}


def test_the_value_set_is_declared_once() -> None:
    assert FAILURE_POLICIES == get_args(FailurePolicy) == get_args(Next)
    assert defaults.ON_FAILURE in FAILURE_POLICIES


def test_the_catalog_keys_are_read_checked_and_written_back() -> None:
    problem = problem_from_dict(flaky_problem(retries=2, on_failure="skip_dependents"))
    tool = problem.tools["fetch"]
    assert (tool.retries, tool.on_failure) == (2, "skip_dependents")
    assert problem_from_dict(problem_to_dict(problem)) == problem
    with pytest.raises(InputError, match=r"tools\.fetch\.on_failure: expected one of retry, fail_plan"):
        problem_from_dict(flaky_problem(on_failure="shrug"))
    with pytest.raises(InputError, match=r"tools\.fetch\.retries"):
        problem_from_dict(flaky_problem(retries=-1))


def test_the_search_copies_the_catalog_into_its_plans() -> None:
    problem = problem_from_dict(flaky_problem(retries=2, on_failure="replan"))
    search = ToolChoice(problem)
    plan = search.plan_of(search.greedy("earliest_finish"))
    assert plan is not None
    [task] = plan.tasks
    assert task.to_dict()["retries"] == 2 and task.to_dict()["on_failure"] == "replan"
    import numpy as np
    [built] = construct(problem, np.random.default_rng(0)).tasks
    assert (built.retries, built.on_failure) == (2, "replan")


def test_a_retryable_failure_is_retried_as_the_catalog_says(tmp_path: Path) -> None:
    calls: list[int] = []
    session = start_run(problem_from_dict(flaky_problem(retries=2)), plan_from_dict(PLAN), tmp_path / "run",
                        plan_source="plan", tools_spec=None, tools=flaky_tools(calls, failures=2))
    outcome = session.run()
    assert outcome["reason"] == "goal_met", outcome["message"]
    assert calls == [1, 2, 3]


def test_the_plan_overrides_the_catalog(tmp_path: Path) -> None:
    calls: list[int] = []
    plan = {"tasks": [{**PLAN["tasks"][0], "retries": 0}]}
    session = start_run(problem_from_dict(flaky_problem(retries=2)), plan_from_dict(plan), tmp_path / "run",
                        plan_source="plan", tools_spec=None, tools=flaky_tools(calls, failures=1))
    outcome = session.run()
    assert outcome["reason"] == "task_failed" and calls == [1]


class Fixed:
    name = "fixed"

    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan_from_dict(plan)

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        return Proposal(plan=self.plan, source=self.name)


def test_a_rejection_replans_where_the_catalog_says_replan(tmp_path: Path) -> None:
    """The approval tool says ``on_failure: replan``; the plan (as ``evolve run`` wrote it before
    this, with no on_failure) says nothing: a person's rejection replans around the action."""
    problem = problem_from_dict({
        "name": "pay", "initial": ["x"], "criteria": ["receipt"],
        "policy": {"write_requires_approval": True},
        "tools": {
            "quote": {"duration": 1, "inputs": ["x"], "outputs": ["amount"]},
            "requote": {"duration": 1, "inputs": ["x"], "outputs": ["amount"]},
            "approve": {"duration": 1, "inputs": ["amount"], "outputs": ["approval"], "risk": "approval",
                        "by": "human", "on_failure": "replan"},
            "escalate": {"duration": 1, "inputs": ["amount"], "outputs": ["approval"], "risk": "approval",
                         "by": "human"},
            "pay": {"duration": 1, "inputs": ["amount"], "outputs": ["receipt"], "risk": "write"},
        },
    })
    plan = plan_from_dict({"tasks": [
        {"id": "t1", "tool": "quote", "inputs": {"x": "$x"}},
        {"id": "t2", "tool": "approve", "deps": ["t1"], "inputs": {"amount": "$t1.amount"}},
        {"id": "t3", "tool": "pay", "deps": ["t1", "t2"], "inputs": {"amount": "$t1.amount"},
         "idempotency_key": "pay:1"},
    ]})
    paid: list[Any] = []
    tools = {"quote": lambda inputs, call: {"amount": 100}, "requote": lambda inputs, call: {"amount": 90},
             "pay": lambda inputs, call: paid.append(inputs) or {"receipt": 1}}
    folder = tmp_path / "run"
    first = start_run(problem, plan, folder, plan_source="plan", tools_spec=None, tools=tools).run()
    assert first["status"] == "waiting"
    result = CliRunner().invoke(cli, ["reject", str(folder), "t2", "--note", "too much"])
    assert result.exit_code == 0, result.output
    lower = Fixed({"tasks": [
        {"id": "r1", "tool": "requote", "inputs": {"x": "$x"}},
        {"id": "r2", "tool": "escalate", "deps": ["r1"], "inputs": {"amount": "$r1.amount"}},
        {"id": "r3", "tool": "pay", "deps": ["r1", "r2"], "inputs": {"amount": "$r1.amount"},
         "idempotency_key": "pay:2"}]})
    second = resume_run(folder, tools=tools, replanner=lower).run()
    assert second["reason"] != "task_failed", second["message"]
    assert (second["status"], second["replans"]) == ("waiting", 1), second["message"]
    [asked] = second["pending"]
    assert asked["action"]["writes"][0]["inputs"] == {"amount": 90}
    assert paid == []
    saved = json.loads((folder / "plan.json").read_text())
    assert saved["tasks"][1]["on_failure"] == "replan"  # what the run ran: the catalog's, filled in
