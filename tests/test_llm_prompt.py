"""The prompt: everything a good engineer would want, the same bytes every time."""

from __future__ import annotations

from pathlib import Path

import pytest

from evolve.fitness.builtin import BUILTINS
from evolve.fitness.evaluation import evaluate_plan
from evolve.fitness.registry import resolve_all
from evolve.llm import Templates, build_messages
from evolve.model.plan import Plan, plan_hash
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.problems import load_problem
from evolve.search.algorithm import Candidate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def problem() -> Problem:
    return load_problem(ROOT / "examples" / "refund.yaml")


def candidate(problem: Problem, cid: str, plan: Plan) -> Candidate:
    evaluation = evaluate_plan(problem, plan, resolve_all([f.__name__ for f in BUILTINS]))
    return Candidate(id=cid, plan=plan, hash=plan_hash(plan), generation=1, evaluation=evaluation)


@pytest.fixture(scope="module")
def weak(problem: Problem) -> Candidate:
    """Slow tools on the critical path, an idle task, a missing reply, an unbound input."""
    return candidate(problem, "c7", plan_from_dict({"tasks": [
        {"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}},
        {"id": "t2", "tool": "payments.ledger_export", "deps": ["t1"], "inputs": {"order": "$t1.order"}},
        {"id": "t3", "tool": "llm.compare_captures", "deps": ["t1", "t2"],
         "inputs": {"order": "$t1.order", "captures": "$t2.captures"}},
        {"id": "t4", "tool": "fraud.score", "deps": ["t1"], "inputs": {"order": "$t1.order"}},
        {"id": "t5", "tool": "llm.decide", "deps": ["t3"], "inputs": {"finding": "$t3.finding"}},
    ]}))


@pytest.fixture(scope="module")
def strong(problem: Problem) -> Candidate:
    return candidate(problem, "c2", plan_from_dict({"tasks": [
        {"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}},
    ]}))


def test_the_prompt_holds_what_an_engineer_needs(problem: Problem, weak: Candidate,
                                                 strong: Candidate) -> None:
    system, user = build_messages(problem, weak, [strong], Templates.load())
    assert system["role"] == "system" and user["role"] == "user"
    assert "JSON" in system["content"] and '"remove"' in system["content"]
    text = user["content"]
    # The problem: tools (with ungranted scopes flagged), criteria, limits, policy.
    assert "- runtime.compare_captures: needs [order, captures] -> makes [finding]" in text
    assert "payments.void_capture" in text and "NOT granted" in text
    assert "Success criteria (facts the plan must produce): finding, decision, reply" in text
    assert "max_parallel 3, max_tasks 12" in text and "approval task" in text
    # The parent: its plan, scores, validator errors, schedule, what it misses and carries.
    assert '{"id": "t2", "tool": "payments.ledger_export"' in text
    assert "validity=" in text and "feasible (valid and complete): no" in text
    assert "t5: input 'policy' of llm.decide is not bound" in text
    assert "critical path (4250): t1 -> t2 -> t3 -> t5" in text
    assert "t4 fraud.score: start 150, finish 950, slack 3300" in text
    assert "criteria not yet produced by a sound task: decision, reply" in text
    assert "tasks that serve no criterion: t4 (fraud.score)" in text
    # Another strong candidate, for inspiration.
    assert "Candidate c2 (" in text
    assert "Plan c7 (improve this one)" in text


def test_the_prompt_is_deterministic(problem: Problem, weak: Candidate, strong: Candidate) -> None:
    first = build_messages(problem, weak, [strong], Templates.load())
    again = build_messages(load_problem(ROOT / "examples" / "refund.yaml"), weak, [strong],
                           Templates.load())
    assert first == again


def test_templates_can_be_overridden_one_file_at_a_time(problem: Problem, weak: Candidate,
                                                        tmp_path: Path) -> None:
    (tmp_path / "user.txt").write_text(
        "Fix plan {{ parent_id }}: {{parent_evaluation}}\nLiteral {braces} and $refs stay.")
    system, user = build_messages(problem, weak, [], Templates.load(tmp_path))
    shipped = Templates.load().system
    assert system["content"].startswith(shipped[:shipped.index("{{")]) and "{{" not in system["content"]
    assert user["content"].startswith("Fix plan c7: feasible (valid and complete): no")
    assert user["content"].endswith("Literal {braces} and $refs stay.")


def test_an_unknown_placeholder_is_an_error_before_any_call(tmp_path: Path) -> None:
    (tmp_path / "system.txt").write_text("You are {{role}}.")
    with pytest.raises(ValueError, match=r"unknown placeholder.*role"):
        Templates.load(tmp_path)
