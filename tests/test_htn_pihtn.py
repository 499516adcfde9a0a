"""The pi-htn domain format, read as it is: converted on load, round-tripped, bad input named."""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.cli.main import cli
from evolve.execute import start_run
from evolve.execute.executor import ExecuteOptions
from evolve.execute.replan import SearchReplanner
from evolve.model.documents import read_document
from evolve.model.errors import InputError
from evolve.model.plan import Plan
from evolve.problems import load_problem
from evolve.problems.htn import Decomposition, HtnProblem, Planner, domain_from_dict, to_plan
from evolve.problems.htn.domain import All, Domain, Eq, Has, Not, Unknown
from evolve.problems.htn.pihtn import from_pihtn, to_pihtn
from evolve.problems.htn.writer import domain_to_dict

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "htn" / "pr_doctor_pihtn.yaml"


def convert(doc: Any, source: str = "d.yaml") -> Domain:
    return domain_from_dict(from_pihtn(doc, source), source)[0]


def test_the_tree_becomes_tasks_methods_and_operators() -> None:
    domain = convert(read_document(EXAMPLE), str(EXAMPLE))
    assert domain.name == "pr-doctor" and domain.goal == "pr-doctor"
    assert [(m.name, m.task) for m in domain.methods] == [
        ("m-rerun", "repair"), ("m-lint", "repair"), ("m-revert", "repair"), ("pr-doctor", "pr-doctor")]
    assert domain.methods_for("pr-doctor")[0].subtasks == ("repair", "report")
    rerun = domain.methods_for("repair")[0]
    assert rerun.pre == All((Eq("failure_class", "flaky"), Not(Eq("rerun_tried", True))))
    assert rerun.subtasks == ("rerun", "verify-rerun")
    report = domain.operators["report"]
    assert report.tool == "pr.comment" and report.pre == All((Eq("fixed", True),))
    assert report.effects.set == {"reported": True, "comment": Unknown("comment")}
    assert report.prompt is not None and "{{last_strategy}}" in report.prompt
    assert domain.operators["rerun"].exec_spec == {"cmd": "gh", "args": ["run", "rerun", "{{run_id}}"]}
    assert domain.state["comment"] is None  # named by an effect, not in worldState: seeded null
    plan = Planner(domain).plan()
    assert isinstance(plan, Decomposition)
    assert [s.operator for s in plan.steps] == ["lint-fix", "verify-lint", "report"]


def test_select_children_that_are_selects_or_primitives_get_wrapper_methods() -> None:
    doc = {"domain": "d", "worldState": {"a": True},
           "root": {"name": "top", "type": "select", "conditions": [{"has": "a"}], "tasks": [
               {"name": "inner", "type": "select", "tasks": [
                   {"name": "p1", "conditions": [{"has": "b"}], "operator": {"tool": "t"}},
                   {"name": "p2", "operator": {"tool": "t"}}]},
               {"name": "p3", "operator": {"tool": "t"}}]}}
    domain = convert(doc)
    assert [(m.name, m.task, m.subtasks) for m in domain.methods] == [
        ("inner/p1", "inner", ("p1",)), ("inner/p2", "inner", ("p2",)),
        ("top/inner", "top", ("inner",)), ("top/p3", "top", ("p3",))]
    assert domain.methods_for("top")[0].pre == All((Has("a"),))
    assert domain.operators["p1"].pre == All((Has("b"),))
    plan = Planner(domain).plan()
    assert isinstance(plan, Decomposition) and [s.operator for s in plan.steps] == ["p2"]


def test_round_trip() -> None:
    """pi-htn -> domain -> pi-htn -> domain is the same domain, and so is domain -> evolve's file."""
    first = convert(read_document(EXAMPLE), str(EXAMPLE))
    back = to_pihtn(first)
    assert back["root"]["name"] == "pr-doctor" and back["worldState"] == dict(first.state)
    again = convert(back)
    assert domain_to_dict(again) == domain_to_dict(first)
    assert to_pihtn(again) == back
    ours = domain_from_dict(yaml.safe_load(yaml.safe_dump(domain_to_dict(first), sort_keys=False)), "x")[0]
    assert domain_to_dict(ours) == domain_to_dict(first)
    assert ours.operators == first.operators and ours.methods == first.methods


PREDICATES = st.recursive(
    st.one_of(st.builds(lambda k: {"has": k}, st.sampled_from("abc")),
              st.builds(lambda k, v: {"eq": [k, v]}, st.sampled_from("abc"),
                        st.one_of(st.booleans(), st.sampled_from(["x", "y"]), st.none()))),
    lambda inner: st.builds(lambda p: {"not": p}, inner), max_leaves=2)


def trees() -> st.SearchStrategy[dict[str, Any]]:
    counter = iter(range(10**9))

    def primitive(conds: list[Any], key: str, value: Any) -> dict[str, Any]:
        node: dict[str, Any] = {"name": f"p{next(counter)}", "operator": {"tool": "tool.x"}}
        if conds:
            node["conditions"] = conds
        node["effects"] = [{"set": {key: value}}]
        return node

    leaf = st.builds(primitive, st.lists(PREDICATES, max_size=2), st.sampled_from("abc"),
                     st.one_of(st.booleans(), st.just("$result.out")))

    def compound(kind: str, conds: list[Any], tasks: list[dict[str, Any]]) -> dict[str, Any]:
        node: dict[str, Any] = {"name": f"c{next(counter)}", "type": kind}
        if conds:
            node["conditions"] = conds
        node["tasks"] = tasks
        return node

    return st.recursive(leaf, lambda inner: st.builds(
        compound, st.sampled_from(["select", "sequence"]), st.lists(PREDICATES, max_size=2),
        st.lists(inner, min_size=1, max_size=3)), max_leaves=8).filter(lambda n: "type" in n)


@settings(max_examples=60, deadline=None)
@given(root=trees(), state=st.dictionaries(st.sampled_from("abc"), st.booleans()))
def test_round_trip_of_any_tree(root: dict[str, Any], state: dict[str, bool]) -> None:
    doc = {"domain": "random", "worldState": state, "root": root}
    first = convert(copy.deepcopy(doc))
    back = to_pihtn(first)
    again = convert(back)
    assert domain_to_dict(again) == domain_to_dict(first)
    assert Planner(again).plan() == Planner(first).plan()


GOOD = {"domain": "d", "worldState": {"a": True},
        "root": {"name": "top", "type": "sequence", "tasks": [
            {"name": "p", "conditions": [{"has": "a"}], "operator": {"tool": "t"},
             "effects": [{"set": {"b": True}}]}]}}


@pytest.mark.parametrize(("path", "value", "message"), [
    (["root", "type"], "parallel", "d.yaml: root.type: expected one of select, sequence, got \"parallel\""),
    (["root", "tasks"], [], "d.yaml: root.tasks: expected a non-empty list of task nodes, got []"),
    (["root", "tasks", 0, "operator"], {"prompt": "x"}, "d.yaml: root.tasks[0].operator.tool: missing"),
    (["root", "tasks", 0, "operator", "cmd"], "x",
     "d.yaml: root.tasks[0].operator.cmd: unknown key (allowed: tool, prompt, exec)"),
    (["root", "tasks", 0, "conditions", 0], {"gt": ["a", 1]},
     "d.yaml: root.tasks[0].conditions[0].gt: unknown key (allowed: has, eq, not)"),
    (["root", "tasks", 0, "conditions", 0], {"eq": ["a"]},
     "d.yaml: root.tasks[0].conditions[0].eq: expected [key, value], got [\"a\"]"),
    (["root", "tasks", 0, "effects", 0], {"unset": ["a"]},
     "d.yaml: root.tasks[0].effects[0].unset: unknown key (allowed: set)"),
    (["root", "tasks", 0, "effects", 0, "set", "b"], "$out",
     "d.yaml: root.tasks[0].effects[0].set.b: a value starting with $ must be $result.<path>, got \"$out\""),
    (["root", "tasks", 0, "name"], "top", "d.yaml: root.tasks[0].name: 'top' names two different nodes"),
    (["root", "tasks", 0], {"name": "x"}, "d.yaml: root.tasks[0]: expected a compound node "
     "(type: select|sequence, tasks) or a primitive (operator: {tool})"),
    (["worldState", "a"], [1],
     "d.yaml: worldState.a: expected a string, number, true/false or null, got [1]"),
    (["domain"], None, "d.yaml: domain: expected a non-empty string, got null"),
])
def test_bad_input_is_one_line_naming_the_field(path: list[Any], value: Any, message: str) -> None:
    doc = copy.deepcopy(GOOD)
    here: Any = doc
    for key in path[:-1]:
        here = here[key]
    here[path[-1]] = value
    with pytest.raises(InputError) as caught:
        convert(doc)
    assert str(caught.value) == message


def test_the_command_line_reads_pihtn_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(cli, ["validate-domain", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "12 of 12 states have a plan" in result.output
    monkeypatch.chdir(tmp_path)
    bad = copy.deepcopy(GOOD)
    bad["root"]["type"] = "parallel"
    Path("d.yaml").write_text(yaml.safe_dump(bad))
    result = CliRunner().invoke(cli, ["validate-domain", "d.yaml"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1].endswith(
        "d.yaml: root.type: expected one of select, sequence, got \"parallel\"")
    assert isinstance(load_problem(EXAMPLE), HtnProblem)


def test_a_failed_verify_climbs_to_the_next_rung(tmp_path: Path) -> None:
    """A converted domain has no ``achieves``: the goal holds when its decomposition ran. The
    lint rung's verify fails for good: the replan (lint_tried now true) lands on the revert."""
    problem = load_problem(EXAMPLE)
    assert isinstance(problem, HtnProblem)
    outcome = Planner(problem.htn()).plan()
    assert isinstance(outcome, Decomposition)
    plan = to_plan(problem.htn(), outcome)
    plan = Plan(tasks=tuple(replace(t, on_failure="replan") for t in plan.tasks))
    run = start_run(problem, plan, tmp_path, plan_source="p", tools_spec=None, simulate=True,
                    fail_rates={"verify-lint": 1.0}, options=ExecuteOptions(max_steps=30),
                    replanner=SearchReplanner()).run()
    assert run["reason"] == "goal_met", run["message"]
    done = [t["tool"] for t in run["tasks"].values() if t["status"] == "done"]
    assert done == ["lint-fix", "revert", "verify-revert", "report", "htn:pr-doctor"]
    evidence = json.loads((tmp_path / "replans" / "r1" / "htn.json").read_text())
    assert evidence["state"]["lint_tried"] is True and evidence["excluded_methods"] == ["m-lint"]
