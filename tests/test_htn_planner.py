"""The HTN planner: reading domains strictly, sound plans (hypothesis), hard depth and node
limits, the task graph a decomposition becomes, and validate-domain."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evolve import defaults
from evolve.cli.main import cli
from evolve.model.errors import InputError
from evolve.model.graph import topological_order
from evolve.model.validate import validate
from evolve.problems import load_problem
from evolve.problems.htn import (
    Decomposition,
    HtnProblem,
    NoPlan,
    Planner,
    domain_from_dict,
    htn_problem_from_dict,
    replay,
    to_plan,
    validate_domain,
)
from evolve.problems.htn.algorithm import RandomChooser
from evolve.problems.htn.decomposition import Step
from evolve.problems.htn.domain import Operator

ROOT = Path(__file__).resolve().parents[1]
SHIP = ROOT / "examples" / "htn" / "ship_change.yaml"
LADDER = ROOT / "examples" / "htn" / "ladder.yaml"


def doc(**htn: Any) -> dict[str, Any]:
    return {"name": "t", "htn": htn}


# -- reading ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("htn", "where"), [
    ({"goal": "g", "operators": {"a": {"duration": 1, "pree": []}}}, "htn.operators.a.pree: unknown key"),
    ({"goal": "g", "operators": {"a": {"duration": 1}},
      "methods": {"m": {"task": "g", "subtasks": ["a", "b"]}}}, "htn.methods.m.subtasks[1]: unknown task"),
    ({"goal": "g", "operators": {"a": {"duration": 1, "pre": [{"hass": "x"}]}}},
     "htn.operators.a.pre[0].hass: unknown key"),
    ({"goal": "g", "operators": {"a": {}}}, "htn.operators.a.duration: missing"),
    ({"goal": "zz", "operators": {"a": {"duration": 1}}}, "htn.goal: unknown task or operator"),
    ({"goal": "a", "operators": {"a": {"duration": 1, "effects": {"set": {"x": "$result.y"}}}}},
     "htn.operators.a.effects.set.x: $result needs the operator to name a tool"),
    ({"goal": "a", "operators": {"a": {"duration": 1}}, "max_depth": 0},
     "htn.max_depth: expected an integer"),
])
def test_bad_domains_name_the_file_and_the_field(htn: dict[str, Any], where: str) -> None:
    with pytest.raises(InputError) as err:
        domain_from_dict(doc(**htn), "d.yaml")
    assert str(err.value).startswith("d.yaml: ") and where in str(err.value)


def test_a_bad_domain_file_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(doc(goal="g", operators={"a": {"duration": "fast"}})))
    runs = (["run", str(path), "--jobs", "1", "--out", str(tmp_path / "r")], ["validate-domain", str(path)])
    for args in runs:
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 2
        assert result.output.strip().splitlines() == [
            f"error: {path}: htn.operators.a.duration: expected a number >= 0, got \"fast\""]


# -- soundness ----------------------------------------------------------------------------------

KEYS = ("k0", "k1", "k2", "k3")
VALUES = (True, 1, "a")


ATOM = st.one_of(st.builds(lambda k: {"has": k}, st.sampled_from(KEYS)),
                 st.builds(lambda k, v: {"eq": [k, v]}, st.sampled_from(KEYS), st.sampled_from(VALUES)))
PREDICATE = st.one_of(st.just([]), st.lists(st.one_of(ATOM, st.builds(lambda a: {"not": a}, ATOM)),
                                            min_size=1, max_size=2))
SETS = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2)
UNSET = st.lists(st.sampled_from(KEYS), max_size=1)


@st.composite
def domains(draw: st.DrawFn) -> dict[str, Any]:
    ops = {}
    for i in range(draw(st.integers(1, 5))):
        sets = draw(SETS)
        unset = [k for k in draw(UNSET) if k not in sets]
        ops[f"o{i}"] = {"pre": draw(PREDICATE), "effects": {"set": sets, "unset": unset},
                        "duration": draw(st.integers(0, 9))}
    tasks = [f"T{i}" for i in range(draw(st.integers(1, 3)))]
    names = [*ops, *tasks]
    methods = {}
    for i in range(draw(st.integers(len(tasks), 7))):
        task = tasks[i] if i < len(tasks) else draw(st.sampled_from(tasks))
        methods[f"m{i}"] = {"task": task, "pre": draw(PREDICATE),
                            "subtasks": draw(st.lists(st.sampled_from(names), min_size=1, max_size=3)),
                            "unordered": draw(st.booleans())}
    state = draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3))
    return doc(state=state, goal="T0", operators=ops, methods=methods, max_depth=4, max_nodes=400)


def linear_extension(plan_deps: dict[str, list[str]], rng: np.random.Generator) -> list[str]:
    """A random order of the tasks that respects every dependency."""
    remaining = {t: set(d) for t, d in plan_deps.items()}
    order: list[str] = []
    while remaining:
        ready = sorted(t for t, d in remaining.items() if not d)
        pick = ready[int(rng.integers(len(ready)))]
        order.append(pick)
        del remaining[pick]
        for d in remaining.values():
            d.discard(pick)
    return order


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(domains(), st.integers(0, 2**16))
def test_no_returned_plan_violates_a_precondition(data: dict[str, Any], seed: int) -> None:
    problem = htn_problem_from_dict(data, "random.yaml")
    domain = problem.htn()
    rng = np.random.default_rng(seed)
    outcome = Planner(domain).plan((), RandomChooser(rng))
    if isinstance(outcome, NoPlan):
        assert outcome.nodes <= domain.max_nodes
        return
    assert replay(domain, outcome.steps) == []
    plan = to_plan(domain, outcome)
    assert validate(problem, plan) == []
    # any order the dependencies allow (what a parallel schedule may do) is sound too
    by_id = {t.id: t for t in plan.tasks}
    deps = plan.dependency_map()
    order = [t for t in linear_extension(deps, rng) if t != "goal"]
    steps = [Step(by_id[t].tool, "") for t in order]
    assert replay(domain, steps) == []
    assert len(topological_order(deps)) == len(plan.tasks)
    # and the genome it reports decodes to the same plan
    again = Planner(domain).plan(outcome.genome)
    assert isinstance(again, Decomposition) and again.steps == outcome.steps


# -- limits -------------------------------------------------------------------------------------

def test_max_depth_ends_a_recursive_domain_in_no_plan() -> None:
    domain, _ = domain_from_dict(doc(goal="loop", max_depth=12, operators={"tick": {"duration": 1}},
                                     methods={"again": {"task": "loop", "subtasks": ["tick", "loop"]}}))
    outcome = Planner(domain).plan()
    assert isinstance(outcome, NoPlan) and outcome.reason == "no-plan"
    assert "a cycle" in outcome.blocked  # tick changes nothing: the loop is proven endless
    assert outcome.nodes < 100


def test_the_node_budget_ends_an_exponential_domain() -> None:
    # sixteen recursive methods, each setting its own key: 2^16 states (so pruning repeated
    # states does not end it), every branch failing at max_depth; the budget stops it first
    domain, _ = domain_from_dict(doc(
        goal="loop", max_depth=40, max_nodes=5000,
        operators={f"tick{i}": {"duration": 1, "effects": {"set": {f"k{i}": True}}} for i in range(16)},
        methods={**{f"m{i}": {"task": "loop", "subtasks": [f"tick{i}", "loop"]} for i in range(16)},
                 # a base case the relaxation (which ignores negative tests) thinks possible, so
                 # the best-first search cannot prove the loop endless either
                 "base": {"task": "loop", "pre": [{"has": "k0"}, {"not": {"has": "k0"}}],
                          "subtasks": ["tick0"]}}))
    outcome = Planner(domain).plan()
    assert isinstance(outcome, NoPlan) and outcome.reason == "budget" and outcome.nodes == 5000


def test_a_loop_without_a_base_case_is_proven_endless_by_the_relaxation() -> None:
    domain, _ = domain_from_dict(doc(
        goal="loop", max_depth=40, max_nodes=50_000,
        operators={f"tick{i}": {"duration": 1, "effects": {"set": {f"k{i}": True}}} for i in range(16)},
        methods={f"m{i}": {"task": "loop", "subtasks": [f"tick{i}", "loop"]} for i in range(16)}))
    outcome = Planner(domain).plan()  # the depth-first part ends on its budget, the estimate proves it
    assert isinstance(outcome, NoPlan) and outcome.reason == "no-plan"
    depth_first = max(defaults.HTN_DEPTH_FIRST_NODES, 50_000 // defaults.HTN_DEPTH_FIRST_SHARE)
    assert outcome.nodes <= depth_first + 1 and "relaxed problem" in outcome.blocked


def test_the_first_plan_cuts_a_recursion_that_makes_no_progress() -> None:
    # "around" comes first and recurses before any step: depth-first in file order used to nest
    # it to the depth limit and come back with one tick per level; the task met again before any
    # step is cut, so the base case is the first plan
    domain, _ = domain_from_dict(doc(
        goal="go", max_depth=40, operators={"tick": {"duration": 1}},
        methods={"around": {"task": "go", "subtasks": ["go", "tick"]},
                 "base": {"task": "go", "subtasks": ["tick"]}}))
    outcome = Planner(domain).plan()
    assert isinstance(outcome, Decomposition) and [s.operator for s in outcome.steps] == ["tick"]
    assert outcome.nodes < 10
    decoded = Planner(domain).plan(outcome.genome)  # a decode keeps every way open
    assert isinstance(decoded, Decomposition) and replay(domain, decoded.steps) == []


def test_a_cut_repeat_proves_nothing_so_the_search_goes_on() -> None:
    # the only plan recurses once before its first step (go -> go tock -> tick tock): the repeat
    # cut of the depth-first phase cannot find it, and its exhaustion must not be read as "no plan"
    domain, _ = domain_from_dict(doc(
        goal="main", max_depth=40,
        operators={"tick": {"duration": 1, "effects": {"set": {"ready": True}}},
                   "tock": {"duration": 1, "pre": [{"has": "ready"}], "effects": {"set": {"done": True}}},
                   "finish": {"duration": 1, "pre": [{"has": "done"}]}},
        methods={"main": {"task": "main", "subtasks": ["go", "finish"]},
                 "twice": {"task": "go", "subtasks": ["go", "tock"]},
                 "once": {"task": "go", "subtasks": ["tick"]}}))
    outcome = Planner(domain).plan()
    assert isinstance(outcome, Decomposition), outcome
    assert [s.operator for s in outcome.steps] == ["tick", "tock", "finish"]
    assert replay(domain, outcome.steps) == []


def test_a_domain_without_a_plan_is_refused_by_run(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text(yaml.safe_dump(doc(goal="loop", operators={"tick": {"duration": 1}},
                                       methods={"again": {"task": "loop", "subtasks": ["tick", "loop"]}})))
    result = CliRunner().invoke(cli, ["run", str(path), "--jobs", "1", "--out", str(tmp_path / "r")])
    assert result.exit_code == 3
    assert "no plan: every way on returns to a state and task network already searched" in result.output


# -- the task graph -----------------------------------------------------------------------------

def test_unordered_subtasks_run_in_parallel_and_ordered_ones_in_sequence() -> None:
    ops = {"a": {"duration": 10, "effects": {"set": {"x": True}}},
           "b": {"duration": 20, "effects": {"set": {"y": True}}},
           "c": {"duration": 5, "pre": [{"has": "x"}, {"has": "y"}]}}
    for unordered, makespan in ((True, 25.0), (False, 35.0)):
        problem = htn_problem_from_dict(doc(goal="g", operators=ops, methods={
            "m": {"task": "g", "subtasks": ["p", "c"]},
            "p1": {"task": "p", "subtasks": ["a", "b"], "unordered": unordered}}))
        outcome = Planner(problem.htn()).plan()
        assert isinstance(outcome, Decomposition)
        plan = to_plan(problem.htn(), outcome)
        deps = {t.tool: t.deps for t in plan.tasks}
        assert ("t1" in deps["b"]) is not unordered
        assert deps["c"] == ("t1", "t2")  # reads both: bound to their outputs
        from evolve.scheduling import schedule
        assert schedule(problem, plan).makespan == makespan


def test_operators_become_tools_and_the_goal_task_completes_the_plan() -> None:
    problem = load_problem(SHIP)
    assert isinstance(problem, HtnProblem)
    tool = problem.tools["run_tests"]
    assert (tool.duration, tool.inputs, tool.outputs) == (120.0, ("tests_written",), ("tests_green",))
    assert problem.criteria == ("__htn_decomposed__",)
    assert problem.tools["htn:ship_change"].outputs == ("__htn_decomposed__",)
    outcome = Planner(problem.htn()).plan()
    assert isinstance(outcome, Decomposition)
    plan = to_plan(problem.htn(), outcome)
    assert [t.tool for t in plan.tasks] == ["open_editor", "write_tests", "run_full_ci", "open_pr",
                                           "htn:ship_change"]
    assert plan.tasks[1].inputs == {"editor_open": "$t1.editor_open"}


@pytest.mark.parametrize(("htn", "where"), [
    ({"state": {"__htn_decomposed__": True}, "goal": "a", "operators": {"a": {"duration": 1}}},
     "htn.state.__htn_decomposed__: the goal marker's fact"),
    ({"goal": "a", "operators": {"a": {"duration": 1, "effects": {"set": {"__htn_decomposed__": True}}}}},
     "htn.operators.a.effects: '__htn_decomposed__' is the goal marker's fact"),
    ({"goal": "a", "operators": {"a": {"duration": 1, "effects": {"unset": ["__htn_decomposed__"]}}}},
     "htn.operators.a.effects: '__htn_decomposed__' is the goal marker's fact"),
])
def test_a_domain_may_not_hold_or_set_the_goal_markers_fact(htn: dict[str, Any], where: str) -> None:
    """The criterion is made by the goal marker alone: a domain that could make it otherwise would
    be complete without decomposing its goal."""
    with pytest.raises(ValueError, match="d.yaml: " + where):
        htn_problem_from_dict(doc(**htn), "d.yaml")


def test_result_bindings_are_unknown_while_planning() -> None:
    tools = {"ci.run": {"duration": 100, "outputs": ["passed"]}}
    data: dict[str, Any] = {"name": "r", "tools": tools, "htn": {
        "goal": "g", "operators": {
            "run": {"tool": "ci.run", "effects": {"set": {"green": "$result.passed"}}},
            "ship": {"duration": 1, "pre": [{"eq": ["green", True]}]},
            "wait": {"duration": 5, "pre": [{"has": "green"}]}},
        "methods": {"m1": {"task": "g", "subtasks": ["run", "ship"]},
                    "m2": {"task": "g", "subtasks": ["run", "wait"]}}}}
    domain, _ = domain_from_dict(data)
    assert isinstance(domain.operators["run"], Operator) and domain.operators["run"].duration == 100
    # neither guard can be decided before the tool has run
    assert isinstance(Planner(domain).plan(), NoPlan)
    with pytest.raises(InputError, match="has no output 'nope'"):
        domain_from_dict({**data, "htn": {**data["htn"], "operators": {
            **data["htn"]["operators"],
            "run": {"tool": "ci.run", "effects": {"set": {"g": "$result.nope"}}}}}})


# -- validate-domain ----------------------------------------------------------------------------

def test_validate_domain_tries_every_state_the_guards_tell_apart() -> None:
    domain, _ = domain_from_dict(yaml.safe_load(LADDER.read_text()), str(LADDER))
    report = validate_domain(domain)
    assert report.exhaustive and len(report.results) == 6 and not report.failures


def test_validate_domain_reports_the_states_without_a_plan(tmp_path: Path) -> None:
    data = yaml.safe_load(SHIP.read_text())
    del data["htn"]["methods"]["ship_change_log_in_first"]
    path = tmp_path / "ship.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    result = CliRunner().invoke(cli, ["validate-domain", str(path)])
    assert result.exit_code == 1
    assert result.output.splitlines()[0] == (
        "no plan in state {}: no plan: method ship_change_full_ci of ship_change needs {has: logged_in} "
        "(at ship_change)")
    assert "1 of 2 states have a plan" in result.output
    ok = CliRunner().invoke(cli, ["validate-domain", str(SHIP), "--json"])
    assert ok.exit_code == 0 and json.loads(ok.output)["valid"] is True


def test_validate_domain_samples_when_there_are_too_many_states() -> None:
    methods = {f"m{i}": {"task": "g", "pre": [{"has": f"k{i}"}], "subtasks": ["a"]} for i in range(10)}
    domain, _ = domain_from_dict(doc(goal="g", operators={"a": {"duration": 1}}, methods=methods))
    report = validate_domain(domain, max_states=50, seed=3)
    assert not report.exhaustive and report.combinations == 1024 and len(report.results) == 50
    assert len(report.failures) == sum(1 for r in report.results if not r.state)
    assert report == validate_domain(domain, max_states=50, seed=3)
