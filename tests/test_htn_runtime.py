"""HTN plans with real tools: ``$result`` bindings from the tools' own outputs, plan input
(``--input``), and ``evolve execute DOMAIN`` planning from the seeded state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.execute import ToolFailure, resume_run, start_run
from evolve.execute.executor import ExecuteOptions
from evolve.execute.htn import planned, ran_steps
from evolve.execute.replan import SearchReplanner
from evolve.model.errors import InputError
from evolve.problems.htn import HtnProblem, htn_problem_from_dict
from evolve.problems.htn.inputs import parse_inputs, seeded
from evolve.problems.htn.problem import htn_problem
from evolve.problems.htn.world import replay_state

ROOT = Path(__file__).resolve().parents[1]
LADDER = ROOT / "examples" / "htn" / "ladder.yaml"

NOTE = {"name": "note", "htn": {
    "state": {"ci_red": True},
    "goal": "report",
    "operators": {
        "read_logs": {"tool": "ci.logs", "duration": 1, "pre": [{"has": "ci_red"}],
                      "effects": {"set": {"log": "$result.lines.0", "read": True}}},
        "comment": {"tool": "pr.comment", "duration": 1, "pre": [{"has": "read"}],
                    "effects": {"set": {"commented": True}}},
    },
    "methods": {"report_m": {"task": "report", "subtasks": ["read_logs", "comment"]}},
    "tasks": {"report": {"achieves": [{"has": "commented"}, {"has": "log"}]}},
}}


def note_run(tmp_path: Path, logs: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    problem = htn_problem_from_dict(NOTE, "note.yaml")
    seen: list[dict[str, Any]] = []

    def read_logs(inputs: dict[str, Any], call: Any) -> dict[str, Any]:
        seen.append(dict(inputs))
        return logs(call) if callable(logs) else logs

    def comment(inputs: dict[str, Any], call: Any) -> dict[str, Any]:
        seen.append(dict(inputs))
        return {"url": "https://example.invalid/c/1"}

    tools = {"read_logs": read_logs, "comment": comment}
    outcome = start_run(problem, planned(problem), tmp_path, plan_source="note", tools_spec=None, tools=tools,
                        facts={"ci_red": True}, options=ExecuteOptions(max_steps=10),
                        replanner=SearchReplanner()).run()
    return outcome, seen


def test_result_bindings_come_from_the_tools_outputs(tmp_path: Path) -> None:
    """The tool returns its own outputs; the operator binds ``log`` from ``lines.0`` and sets
    ``read`` itself (the next task reads it); the goal, which needs ``log``, holds in the live
    state only because the binding was made."""
    outcome, seen = note_run(tmp_path, {"lines": ["lint: 3 errors", "..."]})
    assert outcome["reason"] == "goal_met", outcome["message"]
    assert seen == [{"ci_red": True}, {"read": True}]
    journal = json.loads((tmp_path / "outcome.json").read_text())
    assert journal["tasks"]["t1"]["status"] == "done"


def test_a_null_result_is_no_goal(tmp_path: Path) -> None:
    outcome, _ = note_run(tmp_path, {"lines": [None]})
    assert outcome["reason"] == "goal_unreachable"
    assert "report needs {has: log}" in outcome["message"]


def test_a_missing_result_path_fails_the_task_by_name(tmp_path: Path) -> None:
    """The task fails for good, named; its replan has no other way to the goal."""
    outcome, seen = note_run(tmp_path, {"lines": []})
    assert outcome["status"] == "failed" and outcome["reason"] == "no_plan"
    assert "the tool's outputs have no $result.lines.0" in outcome["tasks"]["t1"]["error"]
    assert "'log'" in outcome["tasks"]["t1"]["error"]
    assert len(seen) == 1  # the comment never ran on a null


def test_resume_restores_the_bound_state(tmp_path: Path) -> None:
    """The world a resumed run sees is replayed from the journal: the bound ``log`` is there,
    and the tool that bound it is not called again."""
    problem = htn_problem_from_dict(NOTE, "note.yaml")
    calls = {"logs": 0}

    def read_logs(inputs: dict[str, Any], call: Any) -> dict[str, Any]:
        calls["logs"] += 1
        return {"lines": ["flaky test"]}

    def failing(inputs: dict[str, Any], call: Any) -> dict[str, Any]:
        raise ToolFailure("not now", retryable=False)

    tools = {"read_logs": read_logs, "comment": failing}
    first = start_run(problem, planned(problem), tmp_path, plan_source="note", tools_spec=None, tools=tools,
                      facts={"ci_red": True}, options=ExecuteOptions(max_steps=10, max_replans=0),
                      replanner=SearchReplanner()).run()
    assert first["reason"] == "replan_budget" and calls["logs"] == 1
    again = resume_run(tmp_path, tools=tools)
    domain = problem.htn()
    steps = ran_steps(domain, again.state.plan, again.state.status, again.state.outputs)
    world = replay_state(domain, [done for _, done in steps])
    assert world == {"ci_red": True, "log": "flaky test", "read": True}
    again.run()
    assert calls["logs"] == 1
    again.journal.close()


def test_inputs_are_typed_and_unknown_keys_named() -> None:
    assert parse_inputs(["a=true", "b=3", "c=null", "d=lint", 'e="7"', "f=[1]"]) == {
        "a": True, "b": 3, "c": None, "d": "lint", "e": "7", "f": "[1]"}
    domain = htn_problem_from_dict(yaml.safe_load(LADDER.read_text()), "ladder").htn()
    assert seeded(domain, {"failure_class": "flaky"}, "--input").state["failure_class"] == "flaky"
    with pytest.raises(InputError, match=r"--input: colour: not a key of the domain"):
        seeded(domain, {"colour": "red"}, "--input")
    with pytest.raises(InputError, match=r"s.json: ci_red: expected a string, number, true/false or null"):
        seeded(domain, {"ci_red": [1]}, "s.json")
    with pytest.raises(InputError, match="expected KEY=VALUE"):
        parse_inputs(["novalue"])


@pytest.mark.parametrize(("inputs", "tools"), [
    ([], ["lint_fix", "push_fix", "comment_pr", "htn:heal_ci"]),
    (["--input", "failure_class=flaky"], ["rerun_ci", "comment_pr", "htn:heal_ci"]),
    (["--input", "failure_class=test"], ["revert_commit", "comment_pr", "htn:heal_ci"]),
    (["--input", "ci_red=false"], ["comment_pr", "htn:heal_ci"]),
])
def test_execute_a_domain_plans_from_the_seeded_state(tmp_path: Path, inputs: list[str],
                                                      tools: list[str]) -> None:
    result = CliRunner().invoke(cli, ["execute", str(LADDER), "--simulate", "--out", str(tmp_path / "r"),
                                      *inputs])
    assert result.exit_code == 0, result.output
    plan = json.loads((tmp_path / "r" / "plan.json").read_text())
    assert [t["tool"] for t in plan["tasks"]] == tools
    assert all(t.get("on_failure") == "replan" for t in plan["tasks"] if not t["tool"].startswith("htn:"))


def test_execute_a_domain_with_an_input_file_and_bad_inputs(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text('{"failure_class": "flaky"}')
    result = CliRunner().invoke(cli, ["execute", str(LADDER), "--simulate", "--out", str(tmp_path / "r"),
                                      "--input-file", str(tmp_path / "s.json")])
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "r" / "plan.json").read_text())["tasks"][0]["tool"] == "rerun_ci"
    bad = CliRunner().invoke(cli, ["execute", str(LADDER), "--simulate", "--input", "colour=red",
                                   "--out", str(tmp_path / "b")])
    assert bad.exit_code == 2 and "--input: colour: not a key of the domain" in bad.output
    refund_plan = str(ROOT / "examples" / "refund_plan.yaml")
    plan_only = CliRunner().invoke(cli, ["execute", refund_plan, "--simulate"])
    assert plan_only.exit_code == 2 and "is a plan, not an HTN domain: give --problem" in plan_only.output


def test_the_seeded_state_is_the_one_the_goal_is_judged_in(tmp_path: Path) -> None:
    """ci_red=false seeds a green run: the plan only comments, and the goal holds there."""
    problem = htn_problem_from_dict(yaml.safe_load(LADDER.read_text()), "ladder")
    green = htn_problem(seeded(problem.htn(), {"ci_red": False}, "--input"), problem)
    assert isinstance(green, HtnProblem)
    outcome = start_run(green, planned(green), tmp_path, plan_source="d", tools_spec=None, simulate=True,
                        options=ExecuteOptions()).run()
    assert outcome["reason"] == "goal_met"


def test_a_guard_false_in_the_live_state_replans(tmp_path: Path) -> None:
    """The plan was made for a lint failure; the run is told it is flaky: the lint fix's guard is
    read in the live state before its tool would run, fails by name, and the replan (from the
    world as it is) takes the rerun rung. The lint tool is never called."""
    problem = htn_problem_from_dict(yaml.safe_load(LADDER.read_text()), "ladder")
    plan = planned(problem)  # lint_fix, push_fix, comment_pr
    flaky = htn_problem(seeded(problem.htn(), {"failure_class": "flaky"}, "--input"), problem)
    called: list[str] = []

    def tool(name: str) -> Any:
        def run(inputs: dict[str, Any], call: Any) -> dict[str, Any]:
            called.append(name)
            return {}
        return run

    tools = {name: tool(name) for name in problem.htn().operators}
    outcome = start_run(flaky, plan, tmp_path, plan_source="p", tools_spec=None, tools=tools,
                        facts={"ci_red": True, "failure_class": "flaky"}, options=ExecuteOptions(),
                        replanner=SearchReplanner()).run()
    assert outcome["reason"] == "goal_met", outcome["message"]
    assert called == ["rerun_ci", "comment_pr"]
    assert outcome["tasks"]["t1"]["error"] == (
        "lint_fix: its guard no longer holds in the live state (needs {eq: [failure_class, 'lint']})")
