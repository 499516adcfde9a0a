"""Keys that name the action (issue 43, found item 5): every write's idempotency key carries the
run's request id, the tool and a digest of its bound inputs; two runs never share a key, a
resume never changes one, a replanned write of the same inputs keeps its key, and a catalog's
key template gives business keys."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evolve import defaults
from evolve.cli.main import cli
from evolve.execute import ExecuteOptions, ToolFailure, resume_run, start_run
from evolve.execute.replan import Proposal, Situation
from evolve.model.keys import inputs_digest, resolve_key
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem_file import problem_from_dict
from evolve.search.toolchoice import ToolChoice


def problem(**pay: Any) -> dict[str, Any]:
    return {
        "name": "restart",
        "initial": ["host"],
        "criteria": ["receipt"],
        "tools": {
            "probe": {"duration": 1, "inputs": ["host"], "outputs": ["service"]},
            "approve": {"duration": 1, "inputs": ["service"], "outputs": ["approval"], "risk": "approval",
                        "by": "human"},
            "restart": {"duration": 1, "inputs": ["service"], "outputs": ["receipt"], "risk": "write", **pay},
        },
    }


def searched_plan(doc: dict[str, Any]) -> dict[str, Any]:
    """The plan `evolve run` makes of ``doc``, as its best.json holds it."""
    search = ToolChoice(problem_from_dict(doc))
    plan = search.plan_of(search.greedy("earliest_finish"))
    assert plan is not None
    return plan.to_dict()


def ledger_tools(keys: list[str | None], fail_first: bool = False) -> dict[str, Any]:
    def restart(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
        keys.append(call.idempotency_key)
        if fail_first and len(keys) == 1:
            raise ToolFailure("the host did not answer", retryable=False)
        return {"receipt": {"key": call.idempotency_key}}

    return {"probe": lambda inputs, call: {"service": "nginx"}, "restart": restart}


def run(folder: Path, plan: dict[str, Any], keys: list[str | None], doc: dict[str, Any] | None = None,
        **options: Any) -> dict[str, Any]:
    session = start_run(problem_from_dict(doc or problem()), plan_from_dict(plan), folder,
                        plan_source="plan", tools_spec=None, tools=ledger_tools(keys),
                        facts={"host": "web-1"}, options=ExecuteOptions(**options))
    return session.run()


def test_the_search_writes_a_template_not_its_own_numbering() -> None:
    plan = searched_plan(problem())
    [write] = [t for t in plan["tasks"] if t["tool"] == "restart"]
    assert write["idempotency_key"] == defaults.IDEMPOTENCY_KEY
    business = searched_plan(problem(idempotency="restart:{service}"))
    [write] = [t for t in business["tasks"] if t["tool"] == "restart"]
    assert write["idempotency_key"] == "restart:{service}"


def test_two_requests_never_share_a_key(tmp_path: Path) -> None:
    plan = {"tasks": [{"id": "t1", "tool": "probe", "inputs": {"host": "$host"}},
                      {"id": "t2", "tool": "restart", "deps": ["t1"], "inputs": {"service": "$t1.service"},
                       "idempotency_key": defaults.IDEMPOTENCY_KEY}]}
    first: list[str | None] = []
    second: list[str | None] = []
    run(tmp_path / "a", plan, first, request_id="alert-1")
    run(tmp_path / "b", plan, second, request_id="alert-2")
    assert first == [f"alert-1:restart:{inputs_digest({'service': 'nginx'})}"]
    assert second and not set(first) & set(second)
    # without --request-id each run has an id of its own
    third: list[str | None] = []
    fourth: list[str | None] = []
    run(tmp_path / "c", plan, third)
    run(tmp_path / "d", plan, fourth)
    assert third and fourth and not set(third) & set(fourth) and not set(third) & set(first)
    # the same request, another numbering of the task: the same key (it names the action)
    renumbered = {"tasks": [plan["tasks"][0], {**plan["tasks"][1], "id": "w9"}]}
    again: list[str | None] = []
    run(tmp_path / "e", renumbered, again, request_id="alert-1")
    assert again == first


def test_a_business_key_from_the_catalog(tmp_path: Path) -> None:
    doc = problem(idempotency="restart:{service}:{request_id}")
    keys: list[str | None] = []
    outcome = run(tmp_path / "run", searched_plan(doc), keys, doc=doc, request_id="INC-7")
    assert outcome["reason"] == "goal_met", outcome["message"]
    assert keys == ["restart:nginx:INC-7"]


def test_a_resume_keeps_the_request_and_the_key(tmp_path: Path) -> None:
    """The write waits for a person; the resumed session dispatches it with the run's own id."""
    doc = {**problem(), "policy": {"write_requires_approval": True}}
    folder = tmp_path / "run"
    keys: list[str | None] = []
    plan = plan_from_dict(searched_plan(doc))
    first = start_run(problem_from_dict(doc), plan, folder, plan_source="plan", tools_spec=None,
                      tools=ledger_tools(keys), facts={"host": "web-1"}).run()
    assert first["status"] == "waiting" and keys == []
    meta = dict(sqlite3.connect(folder / "journal.sqlite").execute("SELECT key, value FROM meta"))
    request = json.loads(meta["options"])["request_id"]
    assert request.startswith("run-")
    [asked] = first["pending"]
    assert CliRunner().invoke(cli, ["approve", str(folder), asked["task"]]).exit_code == 0
    second = resume_run(folder, tools=ledger_tools(keys)).run()
    assert second["reason"] == "goal_met", second["message"]
    assert keys == [resolve_key(defaults.IDEMPOTENCY_KEY, request_id=request, tool="restart",
                                inputs={"service": "nginx"})]
    refused = CliRunner().invoke(cli, ["execute", "--resume", str(folder), "--request-id", "x"])
    assert refused.exit_code == 2 and "request id" in refused.output


class Again:
    """A replanner that proposes the done write again (under a numbering of its own) beside
    another notifier."""

    name = "again"

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        return Proposal(source=self.name, plan=plan_from_dict({"tasks": [
            {"id": "t1", "tool": "restart", "inputs": {"service": "$service"},
             "idempotency_key": defaults.IDEMPOTENCY_KEY},
            {"id": "t2", "tool": "page", "deps": ["t1"], "inputs": {"receipt": "$t1.receipt"}}]}))


def test_a_replanned_write_of_the_same_inputs_keeps_its_key(tmp_path: Path) -> None:
    """The restart is done when the notification fails and the replan runs it again, as task t5
    of its own numbering: the same action, the same key (so the service dedups it)."""
    doc = problem()
    doc["criteria"] = ["receipt", "note"]
    doc["tools"]["notify"] = {"duration": 1, "inputs": ["receipt"], "outputs": ["note"]}
    doc["tools"]["page"] = {"duration": 1, "inputs": ["receipt"], "outputs": ["note"]}
    plan = {"tasks": [{"id": "t1", "tool": "probe", "inputs": {"host": "$host"}},
                      {"id": "t2", "tool": "restart", "deps": ["t1"], "inputs": {"service": "$t1.service"},
                       "idempotency_key": defaults.IDEMPOTENCY_KEY},
                      {"id": "t3", "tool": "notify", "deps": ["t2"], "inputs": {"receipt": "$t2.receipt"},
                       "on_failure": "replan"}]}
    keys: list[str | None] = []
    tools = ledger_tools(keys)

    def notify(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
        raise ToolFailure("the chat API is down", retryable=False)

    tools["notify"] = notify
    tools["page"] = lambda inputs, call: {"note": "paged"}
    session = start_run(problem_from_dict(doc), plan_from_dict(plan), tmp_path / "run",
                        plan_source="plan", tools_spec=None, tools=tools, facts={"host": "web-1"},
                        options=ExecuteOptions(request_id="alert-9"), replanner=Again())
    outcome = session.run()
    assert outcome["reason"] == "goal_met" and outcome["replans"] == 1, outcome["message"]
    assert len(keys) == 2 and keys[0] == keys[1] == f"alert-9:restart:{inputs_digest({'service': 'nginx'})}"


def test_a_key_field_that_names_nothing_is_refused() -> None:
    import pytest

    from evolve.model.errors import InputError
    from evolve.model.validate import validate

    with pytest.raises(InputError, match=r"tools\.restart\.idempotency: field \{order_id\} is none of"):
        problem_from_dict(problem(idempotency="refund:{order_id}"))
    plan = plan_from_dict({"tasks": [
        {"id": "t1", "tool": "probe", "inputs": {"host": "$host"}},
        {"id": "t2", "tool": "restart", "deps": ["t1"], "inputs": {"service": "$t1.service"},
         "idempotency_key": "{request_id}:{hostname}"}]})
    [error] = validate(problem_from_dict(problem()), plan)
    assert error.rule == "idempotency-key" and "{hostname}" in error.message
