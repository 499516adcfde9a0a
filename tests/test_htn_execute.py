"""Running HTN plans soundly: a failed rung lands on the next rung, never on a false success.

The goal is judged by replaying the done steps' effects (``evolve.problems.htn.world``); the
property test below replays them again with its own few lines, from ``outcome.json`` alone.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve.cli.main import cli
from evolve.execute import start_run
from evolve.execute.executor import ExecuteOptions
from evolve.execute.replan import Proposal, SearchReplanner, Situation
from evolve.execute.session import read_run
from evolve.model.plan import Plan, Task
from evolve.model.problem_file import problem_to_dict
from evolve.problems import load_problem
from evolve.problems.htn import HtnProblem, Planner, htn_problem_from_dict, to_plan
from evolve.problems.htn.domain import Domain
from evolve.problems.htn.world import decomposes, goal_verdict

ROOT = Path(__file__).resolve().parents[1]
LADDER = ROOT / "examples" / "htn" / "ladder.yaml"


def ladder(failure_class: str | None = "lint") -> HtnProblem:
    doc = yaml.safe_load(LADDER.read_text())
    if failure_class is None:
        doc["htn"]["state"].pop("failure_class")
    else:
        doc["htn"]["state"]["failure_class"] = failure_class
    return htn_problem_from_dict(doc, str(LADDER))


def first_plan(problem: HtnProblem, policy: str = "replan") -> Plan:
    """The planner's own plan (what ``evolve run`` gives for the ladder), every step with ``policy``."""
    outcome = Planner(problem.htn()).plan()
    assert not isinstance(outcome, Exception) and hasattr(outcome, "steps")
    plan = to_plan(problem.htn(), outcome)  # type: ignore[arg-type]
    return Plan(tasks=tuple(replace(t, on_failure=policy) if t.tool in problem.htn().operators else t
                            for t in plan.tasks))


def run(problem: HtnProblem, plan: Plan, folder: Path, fail: dict[str, float], seed: int = 0,
        replanner: Any = None) -> dict[str, Any]:
    executor = start_run(problem, plan, folder, plan_source="plan.yaml", tools_spec=None, simulate=True,
                         fail_rates=fail, options=ExecuteOptions(seed=seed, max_steps=40),
                         replanner=replanner if replanner is not None else SearchReplanner())
    return executor.run()


def fates(outcome: dict[str, Any]) -> dict[str, str]:
    """Each tool's last status (a tool run twice shows its last task)."""
    return {t["tool"]: t["status"] for t in outcome["tasks"].values()}


def test_the_issue_case_from_the_command_line(tmp_path: Path) -> None:
    """``evolve run`` plan, ``on_failure: replan`` on the first two tasks, lint_fix always failing:
    the run lands on the revert and says so (it used to end goal_met on the goal marker alone)."""
    plan = first_plan(ladder(), policy="fail_plan").to_dict()
    assert [t["tool"] for t in plan["tasks"]] == ["lint_fix", "push_fix", "comment_pr", "htn:heal_ci"]
    for task in plan["tasks"][:2]:
        task["on_failure"] = "replan"
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(plan))
    result = CliRunner().invoke(cli, ["execute", str(tmp_path / "plan.yaml"), "--problem", str(LADDER),
                                      "--simulate", "--fail", "lint_fix=1.0", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "completed: goal_met" in result.output
    outcome = json.loads((tmp_path / "run" / "outcome.json").read_text())
    assert fates(outcome) == {"lint_fix": "failed", "push_fix": "invalidated", "comment_pr": "done",
                              "revert_commit": "done", "htn:heal_ci": "done"}
    evidence = json.loads((tmp_path / "run" / "replans" / "r1" / "htn.json").read_text())
    assert evidence["excluded_methods"] == ["m_lint"] and evidence["steps"] == ["revert_commit", "comment_pr"]


@pytest.mark.parametrize(("failure_class", "fail", "landed"), [
    ("lint", {"lint_fix": 1.0}, "revert_commit"),      # the lint rung's first step fails
    ("lint", {"push_fix": 1.0}, "revert_commit"),      # its second step, after the first was done
    ("flaky", {"rerun_ci": 1.0}, "revert_commit"),     # the rerun rung; lint's guard is false there
])
def test_each_fixing_rung_failing_lands_on_the_revert(tmp_path: Path, failure_class: str,
                                                      fail: dict[str, float], landed: str) -> None:
    problem = ladder(failure_class)
    outcome = run(problem, first_plan(problem), tmp_path, fail)
    assert outcome["reason"] == "goal_met", outcome["message"]
    assert fates(outcome)[landed] == "done"
    assert all(fates(outcome)[tool] == "failed" for tool in fail)
    assert outcome["replans"] == 1


def test_the_last_rung_failing_is_no_success(tmp_path: Path) -> None:
    """The fix fails, then the revert fails: no rung is left, and the run says so (exit 1)."""
    problem = ladder("lint")
    outcome = run(problem, first_plan(problem), tmp_path, {"lint_fix": 1.0, "revert_commit": 1.0})
    assert outcome["status"] == "failed" and outcome["reason"] == "no_plan"
    assert fates(outcome)["revert_commit"] == "failed"
    evidence = json.loads((tmp_path / "replans" / "r2" / "htn.json").read_text())
    assert evidence["excluded_operators"] == ["lint_fix", "revert_commit"]
    assert "no plan" in evidence["note"]


def test_an_unknown_failure_class_goes_straight_to_the_revert(tmp_path: Path) -> None:
    problem = ladder("test")
    outcome = run(problem, first_plan(problem), tmp_path, {})
    assert outcome["reason"] == "goal_met"
    assert set(fates(outcome)) == {"revert_commit", "comment_pr", "htn:heal_ci"}


class GoalMarkerOnly:
    """A replanner that lies: the goal marker alone (complete by the criteria, achieving nothing)."""

    name = "liar"

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal:
        goal = next(t for t in situation.current.tasks if t.tool.startswith("htn:"))
        return Proposal(plan=Plan(tasks=(Task(id="g", tool=goal.tool),)), source=self.name)


def test_goal_met_cannot_be_had_by_the_goal_marker(tmp_path: Path) -> None:
    """Neither a plan of the marker alone nor a replanner proposing one makes the goal met."""
    problem = ladder()
    marker = Plan(tasks=(Task(id="goal", tool="htn:heal_ci"),))
    outcome = run(problem, marker, tmp_path / "a", {})
    assert outcome["reason"] == "goal_unreachable"
    assert "heal_ci needs {not: {has: ci_red}}" in outcome["message"]
    lied = run(problem, first_plan(problem), tmp_path / "b", {"lint_fix": 1.0}, replanner=GoalMarkerOnly())
    assert lied["status"] == "failed" and lied["reason"] == "goal_unreachable"
    assert fates(lied) == {"lint_fix": "failed", "push_fix": "invalidated", "comment_pr": "invalidated",
                           "htn:heal_ci": "done"}


def test_half_a_rung_is_not_the_goal(tmp_path: Path) -> None:
    """The lint fix done but its push skipped (skip_dependents): the marker may run, the goal no."""
    problem = ladder()
    plan = first_plan(problem, policy="skip_dependents")
    outcome = run(problem, plan, tmp_path, {"push_fix": 1.0})
    assert outcome["status"] == "failed"


def test_a_resumed_run_keeps_its_domain(tmp_path: Path) -> None:
    problem = ladder()
    run(problem, first_plan(problem), tmp_path, {"lint_fix": 1.0})
    journal, _, again = read_run(tmp_path)
    journal.close()
    assert isinstance(again, HtnProblem)
    assert problem_to_dict(again) == problem_to_dict(problem)
    assert again.htn().methods == problem.htn().methods and again.htn().tasks == problem.htn().tasks


def test_the_recogniser_without_achieves() -> None:
    """A goal task with no ``achieves`` holds when the steps that ran decompose it."""
    doc = yaml.safe_load(LADDER.read_text())
    del doc["htn"]["tasks"]
    domain = htn_problem_from_dict(doc, "ladder").htn()
    start = dict(domain.state)
    assert decomposes(domain, ["lint_fix", "push_fix", "comment_pr"], [None] * 3, start)
    assert decomposes(domain, ["revert_commit", "comment_pr"], [None] * 2, start)
    assert not decomposes(domain, ["lint_fix", "comment_pr"], [None] * 2, start)
    assert not decomposes(domain, ["comment_pr"], [None], start)
    assert not decomposes(domain, [], [], start)
    assert goal_verdict(domain, [("lint_fix", None), ("revert_commit", None), ("comment_pr", None)]).holds
    assert not goal_verdict(domain, [("lint_fix", None), ("revert_commit", None)]).holds


# -- the property: no simulated run ends goal_met unless the goal holds in the replayed state ----

def replayed(domain: Domain, outcome: dict[str, Any]) -> dict[str, Any]:
    """The test's own replay: done operator tasks by finishing time, literal effects only."""
    done = sorted((t["finish"], t["start"], tid) for tid, t in outcome["tasks"].items()
                  if t["status"] == "done" and t["tool"] in domain.operators)
    state: dict[str, Any] = dict(domain.state)
    for _, _, tid in done:
        op = domain.operators[outcome["tasks"][tid]["tool"]]
        for key in op.effects.unset:
            state.pop(key, None)
        state.update(op.effects.set)
    return state


def goal_true(state: dict[str, Any], spec: Any) -> bool:
    if isinstance(spec, list):
        return all(goal_true(state, s) for s in spec)
    if "has" in spec:
        return state.get(spec["has"]) not in (None, False)
    if "eq" in spec:
        key, value = spec["eq"]
        return key in state and state[key] == value and type(state[key]) is type(value)
    return not goal_true(state, spec["not"])


OPS = ("rerun_ci", "lint_fix", "push_fix", "revert_commit", "comment_pr")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(failure_class=st.sampled_from(["lint", "flaky", "test", None]),
       ci_red=st.booleans(),
       rates=st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=len(OPS), max_size=len(OPS)),
       policies=st.lists(st.sampled_from(["replan", "fail_plan", "skip_dependents"]), min_size=3, max_size=3),
       marker_only=st.booleans(),
       seed=st.integers(0, 3))
def test_no_simulated_run_ends_goal_met_unless_the_goal_holds(
        tmp_path_factory: pytest.TempPathFactory, failure_class: str | None, ci_red: bool,
        rates: list[float], policies: list[str], marker_only: bool, seed: int) -> None:
    doc = yaml.safe_load(LADDER.read_text())
    state = doc["htn"]["state"]
    if failure_class is None:
        state.pop("failure_class")
    else:
        state["failure_class"] = failure_class
    if not ci_red:
        state.pop("ci_red")
    problem = htn_problem_from_dict(doc, "ladder")
    domain = problem.htn()
    if marker_only:
        plan = Plan(tasks=(Task(id="goal", tool="htn:heal_ci"),))
    else:
        plan = first_plan(problem)
        ops = [t for t in plan.tasks if t.tool in domain.operators]
        plan = Plan(tasks=tuple(replace(t, on_failure=policies[ops.index(t) % 3]) if t in ops else t
                                for t in plan.tasks))
    fail = {op: rate for op, rate in zip(OPS, rates) if rate}
    outcome = run(problem, plan, tmp_path_factory.mktemp("run"), fail, seed=seed)
    if outcome["reason"] == "goal_met":
        assert goal_true(replayed(domain, outcome), doc["htn"]["tasks"]["heal_ci"]["achieves"]), outcome
    else:
        assert outcome["status"] == "failed"


def test_load_problem_reads_the_ladder_as_an_htn_problem() -> None:
    assert isinstance(load_problem(LADDER), HtnProblem)
