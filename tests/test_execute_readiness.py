"""The readiness truth table: complete, consistent with a plain reading of the rules, and what the
executor does with it, fan-in with a sibling still running included."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from evolve.execute import ExecuteOptions, start_run
from evolve.execute.readiness import (
    DECISIONS,
    POLICIES,
    RULES,
    TABLE,
    UPSTREAM,
    WHEN,
    aggregate,
    combinations,
    decide,
    expand,
)
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem_file import problem_from_dict


def oracle(upstream: str, when: str, policy: str) -> str:
    """The table's meaning in words, written independently of RULES."""
    if upstream == "failed":
        if policy == "skip_dependents":
            return "skip"
        if policy == "replan":
            return "wait"
        return "fail"
    if upstream == "waiting":
        return "wait"
    if upstream == "branch":  # a dep the condition tests failed: the condition decides
        if policy in ("fail_plan", "retry"):
            return "fail"  # the run is ending
        if policy == "replan":
            return "wait"
        return {"true": "ready", "error": "fail"}.get(when, "skip")
    if when in ("absent", "true"):
        return "ready"
    if when == "error":
        return "fail"
    return "skip"


def test_the_table_covers_every_combination_once() -> None:
    keys = list(combinations())
    assert len(keys) == len(set(keys)) == len(TABLE)
    # a policy exactly when a dep failed: 2 upstream states x 5 whens + 2 x 5 x 4 policies
    assert len(keys) == 2 * len(WHEN) + 2 * len(WHEN) * (len(POLICIES) - 1)
    assert set(TABLE.values()) == set(DECISIONS)


@pytest.mark.parametrize(("upstream", "when", "policy"), list(combinations()))
def test_every_row_means_what_the_rules_say(upstream: str, when: str, policy: str) -> None:
    assert decide(upstream, when, policy) == oracle(upstream, when, policy)  # type: ignore[arg-type]


def test_a_hole_in_the_rules_is_refused() -> None:
    with pytest.raises(ValueError, match="no row"):
        expand([r for r in RULES if r[0] != "waiting"])


STATUSES = ("done", "skipped", "pending", "dispatched", "failed", "unknown")


@pytest.mark.parametrize("n", [1, 2, 3])
def test_aggregate_over_every_mix_of_dep_states(n: int) -> None:
    policies = POLICIES[1:]
    for states in itertools.product(STATUSES, repeat=n):
        for chosen in itertools.product(policies, repeat=n):
            upstream, policy = aggregate(zip(states, chosen))
            ended = [p for s, p in zip(states, chosen) if s in ("failed", "unknown")]
            if ended:
                assert upstream == "failed"  # even with a sibling still running
                rank = {"skip_dependents": 1, "replan": 2, "retry": 3, "fail_plan": 3}
                assert rank[policy] == max(rank[p] for p in ended)
            elif any(s in ("pending", "dispatched") for s in states):
                assert (upstream, policy) == ("waiting", "none")
            else:
                assert (upstream, policy) == ("done", "none")
    assert aggregate([]) == ("done", "none")
    assert set(UPSTREAM) == {"done", "waiting", "failed", "branch"}


RANK = {"skip_dependents": 1, "replan": 2, "retry": 3, "fail_plan": 3}


@pytest.mark.parametrize("n", [1, 2, 3])
def test_aggregate_with_deps_a_condition_tests(n: int) -> None:
    """A failed dep whose status the task's ``when`` tests is a branch, not a failed upstream:
    every mix of statuses, policies and tested deps."""
    policies = POLICIES[1:]
    for states in itertools.product(STATUSES, repeat=n):
        for chosen in itertools.product(policies, repeat=n):
            for tested in itertools.product((False, True), repeat=n):
                upstream, policy = aggregate(zip(states, chosen, tested))
                ended = [(p, t) for s, p, t in zip(states, chosen, tested) if s in ("failed", "unknown")]
                untested = [p for p, t in ended if not t]
                if untested:
                    assert upstream == "failed" and RANK[policy] == max(RANK[p] for p in untested)
                elif any(s in ("pending", "dispatched", "waiting") for s in states):
                    assert (upstream, policy) == ("waiting", "none")
                elif ended:
                    assert upstream == "branch" and RANK[policy] == max(RANK[p] for p, _ in ended)
                else:
                    assert (upstream, policy) == ("done", "none")


# -- the table at work: a fan-in whose sibling is still running -----------------------------

FAN_IN = {
    "name": "fan-in",
    "initial": ["x"],
    "criteria": ["c"],
    "tools": {
        "quick": {"duration": 10, "inputs": ["x"], "outputs": ["a"]},
        "slow": {"duration": 100, "inputs": ["x"], "outputs": ["b"]},
        "join": {"duration": 5, "inputs": ["a", "b"], "outputs": ["c"]},
    },
}


def fan_in_plan(policy: str) -> dict[str, Any]:
    return {
        "tasks": [
            {"id": "a", "tool": "quick", "inputs": {"x": "$x"}, "on_failure": policy},
            {"id": "b", "tool": "slow", "inputs": {"x": "$x"}},
            {"id": "j", "tool": "join", "deps": ["a", "b"], "inputs": {"a": "$a.a", "b": "$b.b"}},
        ]
    }


def run_sim(
    tmp_path: Path,
    problem_doc: dict[str, Any],
    plan_doc: dict[str, Any],
    fail: dict[str, float] | None = None,
    **options: Any,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    problem = problem_from_dict(problem_doc)
    plan = plan_from_dict(plan_doc)
    out = tmp_path / "run"
    executor = start_run(
        problem,
        plan,
        out,
        plan_source="plan",
        tools_spec=None,
        simulate=True,
        fail_rates=fail or {},
        options=ExecuteOptions(**options),
    )
    outcome = executor.run()
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    return outcome, events


def test_fan_in_waits_for_the_running_sibling(tmp_path: Path) -> None:
    outcome, events = run_sim(tmp_path, FAN_IN, fan_in_plan("fail_plan"))
    assert outcome["reason"] == "goal_met"
    starts = {e["task"]: e["time"] for e in events if e["event"] == "step.start"}
    assert starts["j"] == 100  # a was done at 10; j waited for b


def test_fan_in_is_skipped_at_once_when_a_dep_failed_while_the_sibling_runs(tmp_path: Path) -> None:
    outcome, events = run_sim(tmp_path, FAN_IN, fan_in_plan("skip_dependents"), fail={"quick": 1.0})
    skipped = [e for e in events if e["event"] == "step.end" and e["status"] == "skipped"]
    assert [(e["task"], e["time"]) for e in skipped] == [("j", 10)]  # b still running until 100
    b_end = next(e for e in events if e["event"] == "step.end" and e["task"] == "b")
    assert b_end["time"] == 100
    assert outcome["tasks"]["j"]["status"] == "skipped"
    assert outcome["reason"] == "goal_unreachable"


def test_fan_in_fails_the_run_but_lets_the_sibling_finish(tmp_path: Path) -> None:
    outcome, events = run_sim(tmp_path, FAN_IN, fan_in_plan("fail_plan"), fail={"quick": 1.0})
    assert outcome["reason"] == "task_failed"
    assert events[-1]["time"] == 100  # the run ended when b's answer came in
    assert outcome["tasks"]["b"]["status"] == "done"  # the call in flight was collected
    assert outcome["tasks"]["j"]["status"] == "pending"  # never ran


# -- failure branches: a fallback runs when the dep it tests failed for good ------------------

BRANCH = {
    "name": "branch",
    "initial": ["x"],
    "criteria": ["c"],
    "tools": {
        "primary": {"duration": 10, "inputs": ["x"], "outputs": ["a"]},
        "fallback": {"duration": 20, "inputs": ["x"], "outputs": ["a"]},
        "finish": {"duration": 5, "inputs": ["x"], "outputs": ["c"]},
    },
}


def branch_plan(when: str = "failed($p)", policy: str = "skip_dependents") -> dict[str, Any]:
    return {
        "tasks": [
            {"id": "p", "tool": "primary", "inputs": {"x": "$x"}, "on_failure": policy},
            {"id": "f", "tool": "fallback", "deps": ["p"], "inputs": {"x": "$x"}, "when": when},
            {"id": "z", "tool": "finish", "deps": ["f"], "inputs": {"x": "$x"}},
        ]
    }


@pytest.mark.parametrize("when", ["failed($p)", "status($p) == 'failed'"])
def test_a_fallback_runs_when_its_dep_failed_for_good(tmp_path: Path, when: str) -> None:
    outcome, _ = run_sim(tmp_path, BRANCH, branch_plan(when), fail={"primary": 1.0})
    assert outcome["reason"] == "goal_met", outcome["message"]
    assert {t: outcome["tasks"][t]["status"] for t in "pfz"} == {"p": "failed", "f": "done", "z": "done"}


def test_a_fallback_is_skipped_when_its_dep_succeeded(tmp_path: Path) -> None:
    outcome, _ = run_sim(tmp_path, BRANCH, branch_plan())
    assert {t: outcome["tasks"][t]["status"] for t in "pfz"} == {"p": "done", "f": "skipped", "z": "done"}


def test_a_fallback_cannot_save_a_run_its_dep_ends(tmp_path: Path) -> None:
    outcome, _ = run_sim(tmp_path, BRANCH, branch_plan(policy="fail_plan"), fail={"primary": 1.0})
    assert (outcome["reason"], outcome["tasks"]["f"]["status"]) == ("task_failed", "pending")


def test_a_status_test_must_name_a_dep() -> None:
    from evolve.model.validate import validate

    plan = branch_plan()
    plan["tasks"][2]["when"] = "failed($p)"  # z does not depend on p
    errors = validate(problem_from_dict(BRANCH), plan_from_dict(plan))
    assert [e.rule for e in errors] == ["ref-dep"] and "failed/status($p)" in str(errors[0])
