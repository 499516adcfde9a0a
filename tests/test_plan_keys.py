"""The task keys the runtime reads (assumes, on_failure, retries, timeout, evidence, proof):
reading them strictly, leaving old plans unchanged, and what the validator asks of them."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.model import plan_arrays
from evolve.model.errors import InputError
from evolve.model.patch import apply_patch, diff_plans, renamed
from evolve.model.plan import Plan, Task, plan_hash
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Policy, Problem, Tool
from evolve.model.problem_file import problem_from_dict, problem_to_dict
from evolve.model.validate import plan_status, validate

TOOLS = {
    "get": Tool("get", 10, inputs=("x",), outputs=("order", "refunds")),
    "pay": Tool("pay", 20, inputs=("order",), outputs=("receipt",), risk="write"),
}
PROBLEM = Problem(tools=TOOLS, initial=("x",), criteria=("receipt",))
EVIDENCE = Problem(tools=TOOLS, initial=("x",), criteria=("receipt",),
                   policy=Policy(require_evidence=True))
RUNTIME: dict[str, Any] = {"id": "t2", "tool": "pay", "deps": ["t1"], "inputs": {"order": "$t1.order"},
           "idempotency_key": "pay:t2", "assumes": "len($t1.refunds) == 0",
           "on_failure": "replan", "retries": 2, "timeout": 1.5,
           "evidence": ["evolve/model/plan.py"], "proof": "pytest -q tests/test_plan_keys.py"}
FIRST: dict[str, Any] = {"id": "t1", "tool": "get", "inputs": {"x": "$x"}}
PLAN: dict[str, Any] = {"tasks": [FIRST, RUNTIME]}


def test_the_keys_are_read_and_written_back() -> None:
    plan = plan_from_dict(PLAN, "plan.yaml")
    task = plan.tasks[1]
    assert task.assumes == ("len($t1.refunds) == 0",)
    assert (task.on_failure, task.retries, task.timeout) == ("replan", 2, 1.5)
    assert task.evidence == ("evolve/model/plan.py",)
    assert task.proof == ("pytest -q tests/test_plan_keys.py",)
    assert plan_from_dict(plan.to_dict()) == plan
    assert pickle.loads(pickle.dumps(plan)) == plan


def test_a_task_without_them_is_what_it_was() -> None:
    """Defaults are left out of the dict, the hash and the pickle: plans from before these keys
    keep their hashes (this one's was computed by the code before them)."""
    plan = Plan(tasks=(
        Task("t1", "orders.get", inputs={"order_id": "$order_id"}),
        Task("t2", "payments.lookup", deps=("t1",), inputs={"order": "$t1.order"},
             when="$t1.order.total > 5")), priority=("t1", "t2"))
    assert plan_hash(plan) == "86d60d131ec76e1c33d360101dae13cb"
    task = plan.tasks[1]
    assert set(task.to_dict()) == {"id", "tool", "deps", "inputs", "outputs", "when"}
    state = task.__getstate__()
    assert set(state) == {"id", "tool", "deps", "inputs", "outputs", "when", "idempotency_key", "name"}
    restored = pickle.loads(pickle.dumps(task))
    assert restored == task and restored.assumes == () and restored.on_failure is None
    assert restored.failure_policy() == "fail_plan" and restored.retry_count() == 0  # the defaults
    assert restored.retries is None and restored.timeout is None


@pytest.mark.parametrize(("key", "value", "message"), [
    ("on_failure", "explode",
     "tasks[1].on_failure: expected one of retry, fail_plan, skip_dependents, replan"),
    ("retries", -1, "tasks[1].retries: expected an integer >= 0"),
    ("retries", True, "tasks[1].retries: expected an integer >= 0"),
    ("timeout", 0, "tasks[1].timeout: expected a number > 0"),
    ("timeout", "soon", "tasks[1].timeout: expected a number > 0"),
    ("assumes", 3, "tasks[1].assumes: expected a string or a list of strings"),
    ("assumes", ["a", 1], "tasks[1].assumes[1]: expected a non-empty string"),
    ("evidence", {"a": 1}, "tasks[1].evidence: expected a string or a list of strings"),
    ("proof", "", "tasks[1].proof: expected a non-empty string"),
    ("retry", 1, "tasks[1].retry: unknown key"),
])
def test_bad_values_name_the_file_and_the_field(key: str, value: Any, message: str) -> None:
    doc = {"tasks": [FIRST, {**RUNTIME, key: value}]}
    with pytest.raises(InputError) as caught:
        plan_from_dict(doc, "plan.yaml")
    assert str(caught.value).startswith("plan.yaml: ") and message in str(caught.value)


def test_patches_carry_the_keys() -> None:
    plan = plan_from_dict(PLAN)
    patched = apply_patch(plan, {"update": [{"id": "t2", "on_failure": "skip_dependents",
                                             "assumes": ["exists($t1.order)", "$t1.refunds == []"]}]})
    task = patched.by_id()["t2"]
    assert task.on_failure == "skip_dependents" and len(task.assumes) == 2
    assert apply_patch(plan, diff_plans(plan, patched)) == patched
    cleared = apply_patch(patched, {"update": [{"id": "t2", "assumes": None}]})
    assert cleared.by_id()["t2"].assumes == ()
    moved = renamed(task, {"t1": "t9"})
    assert moved.assumes == ("exists($t9.order)", "$t9.refunds == []")


def rules(problem: Problem, doc: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    plan = plan_from_dict(doc)
    errors = validate(problem, plan)
    arrays = plan_arrays.plan_arrays(problem, plan)
    assert arrays is not None and arrays.errors == len(errors)  # the compiled count agrees
    return [(e.rule, e.task, str(e)) for e in errors]


def test_the_validator_parses_conditions_and_checks_their_references() -> None:
    assert rules(PROBLEM, PLAN) == []
    broken = {"tasks": [FIRST, {**RUNTIME, "assumes": "len($t1.refunds) = 0",
                                           "when": "$t1.order and"}]}
    found = rules(PROBLEM, broken)
    when = "t2: when: column 14: expected a value, got the end of the condition"
    assumes = "t2: assumes: column 18: unexpected character '=' (write '==' to compare)"
    assert ("expression", "t2", when) in found and ("expression", "t2", assumes) in found
    reads = {"tasks": [FIRST, {**RUNTIME, "deps": [], "inputs": {"order": "$x"},
                                          "assumes": ["$t1.refunds == []", "$nope > 1", "$t3.a"]}]}
    found_rules = {(r, m) for r, _, m in rules(PROBLEM, reads)}
    assert ("ref-dep", "t2: $t1.refunds reads t1, which is not among its deps") in found_rules
    assert ("ref-initial", "t2: $nope is not an initial fact") in found_rules
    assert ("ref-task", "t2: $t3.a reads missing task 't3'") in found_rules


def test_require_evidence() -> None:
    lacking = {"tasks": [FIRST, RUNTIME]}
    found = rules(EVIDENCE, lacking)
    assert [m for _, _, m in found] == ["t1 has no repository evidence", "t1 has no proof command"]
    assert plan_status(validate(EVIDENCE, plan_from_dict(lacking))) == "blocked"
    cited = {"tasks": [{**FIRST, "evidence": "evolve/model/plan_file.py", "proof": ["ruff check ."]},
                       RUNTIME]}
    assert rules(EVIDENCE, cited) == []
    assert plan_status([]) == "ready"
    blank = {"tasks": [{**FIRST, "evidence": ["  "], "proof": ["ruff check ."]}, RUNTIME]}
    assert [m for _, _, m in rules(EVIDENCE, blank)] == ["t1 has no repository evidence"]


def test_policy_key_reads_and_round_trips() -> None:
    doc = {"tools": {"get": {"duration": 1, "outputs": ["y"]}}, "criteria": ["y"],
           "policy": {"require_evidence": True}}
    problem = problem_from_dict(doc, "p.yaml")
    assert problem.policy.require_evidence is True
    assert problem_from_dict(problem_to_dict(problem)).policy == problem.policy
    with pytest.raises(InputError, match=r"p.yaml: policy.require_evidence: expected true or false"):
        problem_from_dict({**doc, "policy": {"require_evidence": "yes"}}, "p.yaml")


def test_validate_reports_the_status(tmp_path: Path) -> None:
    problem = {"tools": {"get": {"duration": 1, "inputs": ["x"], "outputs": ["y"]}},
               "initial": ["x"], "criteria": ["y"], "policy": {"require_evidence": True}}
    (tmp_path / "problem.json").write_text(json.dumps(problem))
    task = {"id": "t3", "tool": "get", "inputs": {"x": "$x"}}
    (tmp_path / "blocked.json").write_text(json.dumps({"tasks": [task]}))
    (tmp_path / "ready.json").write_text(json.dumps({"tasks": [
        {**task, "evidence": "README.md#the-validator", "proof": "evolve validate ..."}]}))
    runner = CliRunner()
    args = ["validate", str(tmp_path / "blocked.json"), "--problem", str(tmp_path / "problem.json")]
    result = runner.invoke(cli, args)
    assert result.exit_code == 1
    assert result.stdout.splitlines()[:2] == ["t3 has no repository evidence", "t3 has no proof command"]
    assert "status blocked" in result.stdout
    data = json.loads(runner.invoke(cli, [*args, "--json"]).stdout)
    assert data["status"] == "blocked" and {e["rule"] for e in data["errors"]} == {"evidence", "proof"}
    args[1] = str(tmp_path / "ready.json")
    result = runner.invoke(cli, args)
    assert result.exit_code == 0 and "status ready" in result.stdout
    assert json.loads(runner.invoke(cli, [*args, "--json"]).stdout)["status"] == "ready"
