"""One verdict: a plan the search calls feasible is a plan ``evolve validate`` accepts, every rule
(approval thresholds, ``write_requires_approval``, write order, scopes), and it runs in a
simulation to ``goal_met``; a problem no plan can meet is refused with the rule named.

Issue 43, found item 1: with ``policy.approval_required`` the search called a plan feasible that
the validator blocked and the executor refused.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from evolve import SearchOptions, load_plan, problem_from_dict, run_search, validate
from evolve.execute.options import ExecuteOptions
from evolve.execute.session import start_run
from evolve.fitness.evaluation import evaluate_plan
from evolve.fitness.registry import resolve_all
from evolve.model.documents import read_document
from evolve.model.errors import InfeasibleProblem
from evolve.model.feasibility import unreachable_criteria
from evolve.problems import load_problem
from evolve.problems.synthetic import generate_document
from evolve.search.toolchoice import ToolChoice

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
OBJECTIVES = resolve_all(["validity", "completeness", "makespan", "minimality"])


def refund_with(policy: dict[str, Any]) -> dict[str, Any]:
    doc = read_document(EXAMPLES / "refund.yaml")
    doc["policy"] = policy
    return dict(doc)


def test_a_threshold_counts_in_the_search_as_in_the_validator() -> None:
    """The refund example with ``approval_required: {payments.issue_refund: "true"}``: every plan
    the search makes runs the refund behind an approval, and a plan without one is not feasible."""
    problem = problem_from_dict(refund_with({"approval_required": {"payments.issue_refund": "true"}}))
    search = ToolChoice(problem)
    plan = search.plan_of(search.greedy("earliest_finish"))
    assert plan is not None
    assert validate(problem, plan) == []
    assert evaluate_plan(problem, plan, OBJECTIVES).feasible
    refund = next(t for t in plan.tasks if t.tool == "payments.issue_refund")
    by_id = plan.by_id()
    assert any(problem.tools[by_id[d].tool].risk == "approval" for d in refund.deps)
    # the same plan without its approval: the validator's rule, and the search's verdict, agree
    unapproved = replace(refund, deps=tuple(
        d for d in refund.deps if problem.tools[by_id[d].tool].risk != "approval"))
    stripped = plan.with_tasks([unapproved if t.id == refund.id else t for t in plan.tasks])
    rules = [e.rule for e in validate(problem, stripped)]
    assert rules == ["approval-threshold"]
    evaluation = evaluate_plan(problem, stripped, OBJECTIVES)
    assert not evaluation.feasible and evaluation.values["validity"] == 1.0


def test_writes_that_may_meet_are_ordered_by_the_search() -> None:
    """Two writes naming one object (``writes:``) get an edge in the search's plans."""
    doc = refund_with({})
    doc["criteria"] = ["receipt", "note"]
    doc["tools"]["crm.note"] = {"duration": 10, "risk": "write", "inputs": ["order"],
                                "outputs": ["note"], "writes": "order:$order"}
    doc["tools"]["payments.issue_refund"]["writes"] = "order:$order"
    problem = problem_from_dict(doc)
    search = ToolChoice(problem)
    plan = search.plan_of(search.greedy("earliest_finish"))
    assert plan is not None
    assert validate(problem, plan) == []
    assert evaluate_plan(problem, plan, OBJECTIVES).feasible


def test_a_problem_no_plan_can_meet_names_the_rule(tmp_path: Path) -> None:
    """A threshold that always holds on the only maker of a criterion, and no approval tool:
    refused when loading (what ``evolve run`` turns into exit 3), the rule named."""
    doc = refund_with({"approval_required": {"payments.issue_refund": "true"}})
    doc["criteria"] = ["receipt"]
    for name in ("approvals.manager", "approvals.auto", "payments.trace_settlement"):
        del doc["tools"][name]
    problem = problem_from_dict(doc)
    lines = unreachable_criteria(problem)
    assert len(lines) == 1 and "rule approval-threshold" in lines[0]
    path = tmp_path / "refund.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InfeasibleProblem, match="approval-threshold"):
        load_problem(path)


# --- the property: generated problems with random policies ----------------------------------


@st.composite
def policed_problems(draw: st.DrawFn) -> dict[str, Any]:
    """A small generated problem (``evolve generate``) with a random policy on top: approval
    thresholds, ``write_requires_approval``, write objects and fewer granted scopes."""
    doc = generate_document(draw(st.integers(4, 9)), draw(st.integers(0, 2**16)),
                            write_requires_approval=False, resources=draw(st.booleans()))
    tools: dict[str, dict[str, Any]] = doc["tools"]
    writes = [name for name, tool in tools.items() if tool.get("risk") == "write"]
    # a read tool may become a write, so that most problems have some
    for name in sorted(tools):
        if tools[name].get("risk", "read") == "read" and draw(st.integers(0, 3)) == 0:
            tools[name]["risk"] = "write"
            writes.append(name)
    thresholds = {}
    for name in writes:
        inputs = tools[name].get("inputs", [])
        choice = draw(st.sampled_from(["none", "true", "false", *(f"${i} != null" for i in inputs)]))
        if choice != "none":
            thresholds[name] = choice
        if draw(st.booleans()):
            tools[name]["writes"] = draw(st.sampled_from(
                ["ticket:1", "ticket:2", *(f"ticket:${i}" for i in inputs)]))
    doc["policy"] = {"write_requires_approval": draw(st.booleans()), "approval_required": thresholds}
    scopes = list(doc.get("scopes", []))
    if scopes and draw(st.booleans()):
        doc["scopes"] = [s for s in scopes if draw(st.integers(0, 4)) > 0]
    return dict(doc)


@settings(max_examples=200, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(doc=policed_problems(), seed=st.integers(0, 1000))
def test_every_plan_the_search_calls_feasible_validates_and_runs(
        doc: dict[str, Any], seed: int, tmp_path_factory: pytest.TempPathFactory) -> None:
    problem = problem_from_dict(doc)
    if unreachable_criteria(problem):
        event("refused: no plan can meet it")
        return  # refused before any search (exit 3); the test above covers that
    out = tmp_path_factory.mktemp("run")
    run_search(problem, options=SearchOptions(seed=seed, jobs=1, generations=1, population=4, keep=2),
               fitnesses=OBJECTIVES, out_dir=out / "search")
    summary = json.loads((out / "search" / "summary.json").read_text())
    if not summary["best"]["feasible"]:
        event("no feasible plan found")
        return
    best = load_plan(out / "search" / "best.json")  # what `evolve validate` and `execute` read
    assert validate(problem, best) == [], best.to_dict()
    event("feasible, and validates")
    if seed % 4 == 0:  # a quarter of them run, simulated, to the goal
        executor = start_run(problem, best, out / "exec", plan_source="best.json", tools_spec=None,
                             simulate=True, options=ExecuteOptions(seed=seed, max_steps=200))
        outcome = executor.run()
        assert outcome["reason"] == "goal_met", outcome
        event("executed to goal_met")
