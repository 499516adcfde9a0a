"""Turning a model's reply into a child: tolerant parsing, strict checking of every name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evolve.llm.reply import Rejected, child_from_reply, extract_json, patch_schema
from evolve.model.plan import Plan
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.model.validate import validate
from evolve.problems import load_problem

ROOT = Path(__file__).resolve().parents[1]
PATCH = {"update": [{"id": "t2", "tool": "runtime.compare_captures"}], "reason": "faster"}


@pytest.fixture(scope="module")
def problem() -> Problem:
    return load_problem(ROOT / "examples" / "refund.yaml")


@pytest.fixture(scope="module")
def parent() -> Plan:
    return plan_from_dict({"tasks": [
        {"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}},
        {"id": "t3", "tool": "payments.lookup", "deps": ["t1"], "inputs": {"order": "$t1.order"}},
        {"id": "t2", "tool": "llm.compare_captures", "deps": ["t1", "t3"],
         "inputs": {"order": "$t1.order", "captures": "$t3.captures"}},
    ]})


@pytest.mark.parametrize("text", [
    json.dumps(PATCH),
    "```json\n" + json.dumps(PATCH, indent=2) + "\n```",
    "```\n" + json.dumps(PATCH) + "\n```",
    "Sure! Here is the patch:\n" + json.dumps(PATCH) + "\nHope it helps.",
    "  \n" + json.dumps(PATCH) + "\n\n",
])
def test_json_is_found_in_fences_and_chatter(text: str) -> None:
    assert extract_json(text) == PATCH


@pytest.mark.parametrize(("text", "reason"), [
    ("", "empty"), ("   \n ", "empty"), ('{"remove": ["t1"', "parse"), ("no json here", "parse"),
    ("```json\n{not json}\n```", "parse"), ("x" * 200_000, "parse"),
])
def test_unusable_text_is_rejected(text: str, reason: str) -> None:
    with pytest.raises(Rejected) as caught:
        extract_json(text)
    assert caught.value.reason == reason


def test_a_valid_patch_makes_the_child(problem: Problem, parent: Plan) -> None:
    child, reason = child_from_reply(problem, parent, json.dumps(PATCH))
    assert child.by_id()["t2"].tool == "runtime.compare_captures"
    assert parent.by_id()["t2"].tool == "llm.compare_captures"  # the parent is untouched
    assert reason == "faster"
    assert validate(problem, child) == []


def test_added_tasks_without_deps_get_them_from_their_references(problem: Problem,
                                                                 parent: Plan) -> None:
    text = json.dumps({"add": [{"id": "t9", "tool": "crm.get_customer",
                                "inputs": {"order": "$t1.order"}}], "reason": "customer"})
    child, _ = child_from_reply(problem, parent, text)
    assert child.by_id()["t9"].deps == ("t1",)
    wrapped = json.dumps({"patch": json.loads(text)})
    assert child_from_reply(problem, parent, wrapped)[0] == child


@pytest.mark.parametrize(("patch", "reason"), [
    ({"add": [{"id": "t9", "tool": "payments.teleport", "inputs": {}}]}, "unknown-tool"),
    ({"update": [{"id": "t2", "tool": "llm.hallucinate"}]}, "unknown-tool"),
    ({"remove": ["t99"]}, "unknown-task"),
    ({"update": [{"id": "t99", "tool": "orders.get"}]}, "unknown-task"),
    ({"add": [{"id": "t9", "tool": "crm.get_customer", "deps": ["t42"],
               "inputs": {"order": "$t1.order"}}]}, "unknown-task"),
    ({"add": [{"id": "t9", "tool": "crm.get_customer", "inputs": {"order": "$t42.order"}}]},
     "unknown-task"),
    ({"priority": ["t1", "t77"]}, "unknown-task"),
    ({"add": [{"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}}]},
     "duplicate-id"),
    ({"add": {"id": "t9"}}, "schema"),
    ({"add": [{"id": "t9"}]}, "schema"),
    ({"add": [{"id": "t.9", "tool": "orders.get", "inputs": {}}]}, "schema"),
    ({"remove": "t1"}, "schema"),
    ({"delete": ["t1"]}, "schema"),
    ({"add": [{"id": f"n{i}", "tool": "orders.get", "inputs": {}} for i in range(30)]}, "schema"),
    ({"reason": "nothing to do"}, "no-change"),
    ({"update": [{"id": "t1", "tool": "orders.get"}]}, "no-change"),
    (["t1"], "schema"),
])
def test_bad_patches_are_rejected_with_their_reason(problem: Problem, parent: Plan,
                                                    patch: object, reason: str) -> None:
    with pytest.raises(Rejected) as caught:
        child_from_reply(problem, parent, json.dumps(patch))
    assert caught.value.reason == reason
    assert caught.value.detail


def test_the_reply_is_data_never_code(problem: Problem, parent: Plan, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = {"add": [{"id": "t9", "tool": "crm.get_customer",
                     "inputs": {"order": f"__import__('os').system('touch {marker}')"}}],
            "reason": "`touch pwned`"}
    child, _ = child_from_reply(problem, parent, json.dumps(evil))
    assert not marker.exists()
    assert validate(problem, child)  # the odd binding is a validator error, not an action


def test_schema_names_exactly_the_catalog(problem: Problem) -> None:
    schema = patch_schema(problem)
    tools = schema["properties"]["add"]["items"]["properties"]["tool"]["enum"]
    assert tools == sorted(problem.tools)
    assert schema["required"] == ["reason"] and schema["additionalProperties"] is False


def test_raw_control_characters_inside_strings_are_tolerated() -> None:
    text = '{"reason": "two\nlines\tand a tab", "remove": ["t4"]}'
    assert extract_json(text) == {"reason": "two\nlines\tand a tab", "remove": ["t4"]}
