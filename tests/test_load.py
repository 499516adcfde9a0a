"""Reading problem and plan files: good files load, and every kind of bad input is an InputError
that names the file and the key path."""

from __future__ import annotations

import copy
import gc
import json
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from evolve import defaults
from evolve.cli.main import cli
from evolve.model.collector import collector_paused
from evolve.model.errors import InputError
from evolve.model.limits import MAX_NAME
from evolve.model.plan import Plan, Task
from evolve.model.plan_file import load_plan, plan_from_dict
from evolve.model.problem import Limits, Policy, Problem
from evolve.model.problem_file import problem_from_dict
from evolve.problems import load_problem
from evolve.problems.synthetic import generate_document, generate_problem

GOOD: dict[str, Any] = {
    "name": "tiny",
    "objective": "make z",
    "initial": ["x"],
    "criteria": ["z"],
    "scopes": ["s1"],
    "limits": {"max_parallel": 2, "max_tasks": 5},
    "resources": {"api": 2},
    "policy": {"write_requires_approval": True},
    "tools": {
        "orders.get": {"scope": "s1", "duration": 150, "inputs": ["x"], "outputs": ["y"],
                       "risk": "read", "cost": 0.5, "uses": {"api": 1}, "llm_calls": 1,
                       "description": "fetch"},
        "make.z": {"duration": 10.5, "inputs": ["y"], "outputs": ["z"]},
    },
}


def write(tmp_path: Path, data: Any, name: str = "problem.yaml") -> Path:
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps(data))
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_refund_example_loads(refund: Problem) -> None:
    assert refund.name == "refund-8472"
    assert refund.initial == ("order_id", "complaint")
    assert refund.criteria == ("finding", "decision", "reply")
    assert refund.limits == Limits(max_parallel=3, max_tasks=12)
    assert refund.resources == {"llm_api": 1.0}
    assert refund.policy == Policy(write_requires_approval=True)
    tool = refund.tools["llm.decide"]
    assert tool.duration == 1600 and tool.uses == {"llm_api": 1.0} and tool.llm_calls == 1
    assert refund.tools["approvals.manager"].risk == "approval"
    assert refund.tools["orders.get"].risk == "read"  # the default


def test_pipeline_example_loads_with_dozens_of_tools(pipeline_path: Path) -> None:
    problem = load_problem(pipeline_path)
    assert 40 <= len(problem.tools) <= 80
    assert problem.resources and problem.limits.max_parallel is not None


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_yaml_and_json_give_the_same_problem(tmp_path: Path, suffix: str) -> None:
    problem = load_problem(write(tmp_path, GOOD, "p" + suffix))
    assert problem == problem_from_dict(GOOD, "p")
    tool = problem.tools["orders.get"]
    assert (tool.duration, tool.inputs, tool.outputs, tool.scope, tool.cost, tool.uses) == (
        150.0, ("x",), ("y",), "s1", 0.5, {"api": 1.0})
    assert problem.tools["make.z"].scope is None


def test_name_defaults_to_file_stem(tmp_path: Path) -> None:
    data = {k: v for k, v in GOOD.items() if k != "name"}
    assert load_problem(write(tmp_path, data, "my-problem.yaml")).name == "my-problem"


def test_generated_problem_round_trips_through_yaml(tmp_path: Path) -> None:
    doc = generate_document(30, seed=4)
    path = write(tmp_path, doc, "gen.yaml")
    assert load_problem(path) == generate_problem(30, seed=4)


def mutated(change: dict[str, Any] | None = None, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """A deep copy of GOOD with dotted paths set (``tools.make.z`` is not split: use tuples)."""
    data = copy.deepcopy(GOOD)
    for key in drop:
        data.pop(key)
    for path, value in (change or {}).items():
        *head, last = path.split("/")
        target = data
        for part in head:
            target = target[part]
        target[last] = value
    return data


BAD_PROBLEMS = [
    # (change, expected key path, expected words in the message)
    ({"tools/orders.get/duration": "fast"}, "tools.orders.get.duration",
     'expected a number >= 0, got "fast"'),
    ({"tools/orders.get/duration": -1}, "tools.orders.get.duration", "expected a number >= 0, got -1"),
    ({"tools/orders.get/duration": True}, "tools.orders.get.duration", "got true"),
    ({"tools/orders.get/durration": 5}, "tools.orders.get.durration", "unknown key"),
    ({"tools/orders.get/risk": "dangerous"}, "tools.orders.get.risk", "read, write, approval"),
    ({"tools/orders.get/inputs": "x"}, "tools.orders.get.inputs", "expected a list of strings"),
    ({"tools/orders.get/inputs": ["x", 3]}, "tools.orders.get.inputs[1]", "non-empty string"),
    ({"tools/orders.get/inputs": ["x", "x"]}, "tools.orders.get.inputs[1]", "appears twice"),
    ({"tools/orders.get/uses": {"gpu": 1}}, "tools.orders.get.uses.gpu", "not declared"),
    ({"tools/orders.get/uses": {"api": 3}}, "tools.orders.get.uses.api", "capacity"),
    ({"tools/orders.get/uses": {"api": "one"}}, "tools.orders.get.uses.api", "expected a number"),
    ({"tools/orders.get/llm_calls": 1.5}, "tools.orders.get.llm_calls", "expected an integer >= 0"),
    ({"tools/orders.get/cost": "cheap"}, "tools.orders.get.cost", "expected a number"),
    ({"tools/orders.get/scope": ""}, "tools.orders.get.scope", "non-empty string"),
    ({"tools/orders.get": ["duration", 5]}, "tools.orders.get", "expected a mapping"),
    ({"tools": {}}, "tools", "empty"),
    ({"tools": ["a"]}, "tools", "expected a mapping"),
    ({"limits/max_parallel": 0}, "limits.max_parallel", "expected an integer >= 1, got 0"),
    ({"limits/max_tasks": "many"}, "limits.max_tasks", "expected an integer >= 1"),
    ({"limits/timeout": 3}, "limits.timeout", "unknown key"),
    ({"resources/api": -2}, "resources.api", "expected a number >= 0"),
    ({"policy/write_requires_approval": "yes"}, "policy.write_requires_approval", "true or false"),
    ({"policy/strict": True}, "policy.strict", "unknown key"),
    ({"initial": "x"}, "initial", "expected a list of strings"),
    ({"criteria": [None]}, "criteria[0]", "non-empty string"),
    ({"scopes": {"s1": True}}, "scopes", "expected a list of strings"),
    ({"critera": ["z"]}, "critera", "unknown key"),
    ({"template": {"tasks": [{"id": "t1"}]}}, "template.tasks[0].tool", "missing"),
]


@pytest.mark.parametrize(("change", "key_path", "words"), BAD_PROBLEMS,
                         ids=[case[1] + ":" + case[2][:20] for case in BAD_PROBLEMS])
def test_bad_problem_names_file_and_key_path(tmp_path: Path, change: dict[str, Any],
                                             key_path: str, words: str) -> None:
    path = write(tmp_path, mutated(change))
    with pytest.raises(InputError) as info:
        load_problem(path)
    error = info.value
    assert error.source == str(path)
    assert error.path == key_path
    assert words in error.message
    assert str(error) == f"{path}: {key_path}: {error.message}"
    assert "\n" not in str(error)


@pytest.mark.parametrize(("drop", "key_path"), [(("tools",), "tools"), (("criteria",), "criteria")])
def test_missing_required_keys(tmp_path: Path, drop: tuple[str, ...], key_path: str) -> None:
    with pytest.raises(InputError) as info:
        load_problem(write(tmp_path, mutated(drop=drop)))
    assert info.value.path == key_path and "missing" in info.value.message


def test_missing_duration(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_problem(write(tmp_path, mutated({"tools/make.z": {"outputs": ["z"]}})))
    assert info.value.path == "tools.make.z.duration"


def test_template_may_replace_criteria(tmp_path: Path) -> None:
    data = mutated({"template": {"tasks": [{"id": "t1", "tool": "make.z"}]}}, drop=("criteria",))
    problem = load_problem(write(tmp_path, data))
    assert problem.criteria == ()
    assert problem.template == Plan(tasks=(Task("t1", "make.z"),))


@pytest.mark.parametrize("content", [": : :\n  - [", "name: [unclosed\n"])
def test_invalid_yaml(tmp_path: Path, content: str) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(content)
    with pytest.raises(InputError) as info:
        load_problem(path)
    assert info.value.source == str(path) and "invalid YAML" in info.value.message
    assert "line" in info.value.message


def test_invalid_yaml_error_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("tools: [\n")
    with pytest.raises(InputError) as info:
        load_problem(path)
    assert "\n" not in str(info.value)


def test_invalid_json(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{"tools": {,}}')
    with pytest.raises(InputError) as info:
        load_problem(path)
    assert "invalid JSON at line 1" in info.value.message


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(InputError) as info:
        load_problem(path)
    assert info.value.source == str(path) and "cannot read file" in info.value.message


@pytest.mark.parametrize("content", ["", "- a\n- b\n", "just text\n"])
def test_document_that_is_not_a_mapping(tmp_path: Path, content: str) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(content)
    with pytest.raises(InputError) as info:
        load_problem(path)
    assert "expected a mapping" in info.value.message


# -- plan files ------------------------------------------------------------------------------

PLAN = {
    "tasks": [
        {"id": "t1", "tool": "orders.get", "deps": [], "inputs": {"x": "$x"}, "outputs": ["y"]},
        {"id": "t2", "tool": "make.z", "deps": ["t1"], "inputs": {"y": "$t1.y"},
         "when": "$t1.y > 3", "idempotency_key": "k", "name": "make it"},
    ],
    "priority": ["t2", "t1"],
    "schedule": {"t1": {"start": 0, "finish": 150}},
}


@pytest.mark.parametrize("name", ["plan.json", "plan.yaml"])
def test_plan_file_loads_and_ignores_schedule(tmp_path: Path, name: str) -> None:
    plan = load_plan(write(tmp_path, PLAN, name))
    assert plan.ids() == ["t1", "t2"]
    assert plan.priority == ("t2", "t1")
    t2 = plan.tasks[1]
    assert (t2.deps, dict(t2.inputs), t2.when, t2.idempotency_key, t2.name) == (
        ("t1",), {"y": "$t1.y"}, "$t1.y > 3", "k", "make it")
    # to_dict round trip (without the schedule, which the engine writes)
    assert plan_from_dict(plan.to_dict()) == plan


BAD_PLANS = [
    ({"tasks": {"t1": {}}}, "tasks", "expected a list of tasks"),
    ({"tasks": [{"tool": "a"}]}, "tasks[0].id", "missing"),
    ({"tasks": [{"id": "t1"}]}, "tasks[0].tool", "missing"),
    ({"tasks": [{"id": "t.1", "tool": "a"}]}, "tasks[0].id", "is not a valid name"),
    ({"tasks": [{"id": "$t1", "tool": "a"}]}, "tasks[0].id", "is not a valid name"),
    ({"tasks": [{"id": "t1", "tool": "a", "deps": "t0"}]}, "tasks[0].deps", "list of strings"),
    ({"tasks": [{"id": "t1", "tool": "a", "inputs": ["x"]}]}, "tasks[0].inputs", "mapping"),
    ({"tasks": [{"id": "t1", "tool": "a", "needs": []}]}, "tasks[0].needs", "unknown key"),
    ({"tasks": [], "priority": "t1"}, "priority", "list of strings"),
    ({"tasks": [], "stages": []}, "stages", "unknown key"),
    ({"tasks": [], "steps": []}, "steps", "not both"),
    (["t1"], "", "expected a mapping"),
]


@pytest.mark.parametrize(("data", "key_path", "words"), BAD_PLANS,
                         ids=[f"{i}-{case[1]}" for i, case in enumerate(BAD_PLANS)])
def test_bad_plan_names_file_and_key_path(tmp_path: Path, data: Any, key_path: str, words: str) -> None:
    path = write(tmp_path, data, "plan.json")
    with pytest.raises(InputError) as info:
        load_plan(path)
    assert info.value.source == str(path)
    assert info.value.path == key_path
    assert words in info.value.message


# -- generated problems (evolve.problems.synthetic): documents that the strict loader accepts -----------

@pytest.mark.parametrize(("tools", "seed"), [(4, 0), (9, 1), (60, 1), (200, 7)])
def test_generated_problem_has_the_promised_features(tools: int, seed: int) -> None:
    from evolve.problems.synthetic import reachable_facts

    problem = generate_problem(tools, seed)
    assert len(problem.tools) == tools
    assert problem.criteria and set(problem.criteria) <= reachable_facts(problem)
    assert any(t.risk == "approval" for t in problem.tools.values())
    assert problem.policy.write_requires_approval
    assert problem.limits.max_parallel is not None and problem.limits.max_tasks is not None
    for tool in problem.tools.values():
        assert set(tool.uses) <= set(problem.resources)
    if tools >= 60:
        risks = {t.risk for t in problem.tools.values()}
        assert risks == {"read", "write", "approval"}
        assert any(not problem.scope_granted(t.scope) for t in problem.tools.values())
        assert any(t.uses for t in problem.tools.values())
        needed = set(problem.criteria) | {f for t in problem.tools.values() for f in t.inputs}
        assert any(not set(t.outputs) & needed for t in problem.tools.values())  # useless tools
        several = [f for f in problem.criteria if len(problem.producers(f)) > 1]
        assert several or tools < 100


def test_generator_is_deterministic_and_seed_sensitive() -> None:
    assert generate_document(50, seed=3) == generate_document(50, seed=3)
    assert generate_document(50, seed=3) != generate_document(50, seed=4)


def test_generator_options_and_limits() -> None:
    plain = generate_problem(30, seed=2, write_requires_approval=False, resources=False, name="x")
    assert plain.name == "x" and plain.resources == {} and not plain.policy.write_requires_approval
    assert all(not t.uses for t in plain.tools.values())
    with pytest.raises(ValueError):
        generate_document(3, seed=0)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_generate_command_writes_a_loadable_file(tmp_path: Path, suffix: str) -> None:
    from click.testing import CliRunner

    from evolve.cli import cli

    out = tmp_path / f"gen{suffix}"
    result = CliRunner().invoke(cli, ["generate", "--tools", "25", "--seed", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert load_problem(out) == generate_problem(25, seed=2)
    assert CliRunner().invoke(cli, ["generate", "--tools", "2"]).exit_code == 2


def test_pipeline_example_is_the_generator_output(pipeline_path: Path) -> None:
    """examples/pipeline.yaml is regenerated, never hand-edited: it must match its seed."""
    assert load_problem(pipeline_path) == generate_problem(60, seed=1)


@pytest.mark.parametrize("enabled", [True, False], ids=["collector-on", "collector-off"])
def test_loading_leaves_the_garbage_collector_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    """``load_problem`` holds the cyclic collector back while it reads (see
    ``evolve.model.collector``) and leaves it as the caller had it, also when the file is
    refused; the problem read is the one read with the collector running."""
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(generate_document(60, seed=2)))
    bad = tmp_path / "bad.yaml"
    bad.write_text("tools: 3\n")
    expected = load_problem(path)
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        assert load_problem(path) == expected
        assert gc.isenabled() is enabled
        with pytest.raises(InputError):
            load_problem(bad)
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_a_run_command_tunes_the_collector_for_its_search(tmp_path: Path) -> None:
    """``evolve run`` freezes what it loaded and collects the youngest generation every
    ``GC_YOUNG_THRESHOLD`` allocations (the conftest puts both back after the test)."""
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(generate_document(40, seed=1)))
    gc.unfreeze()
    result = CliRunner().invoke(cli, ["run", str(path), "--generations", "1", "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert gc.get_threshold()[0] == defaults.GC_YOUNG_THRESHOLD
    assert gc.get_freeze_count() > 0


def test_pauses_from_threads_that_end_out_of_order_leave_the_collector_running() -> None:
    """Two threads hold the collector back, the first to start ends first: it stays off while
    the second runs and is on again once both are done (with a per-call memory of whether it
    ran, the second would have switched it off for good), and nested holds end the same way."""
    started, release_first, release_second = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def hold(release: threading.Event, signal: threading.Event | None) -> None:
        with collector_paused():
            if signal is not None:
                signal.set()
            release.wait(10)

    assert gc.isenabled()
    first = threading.Thread(target=hold, args=(release_first, started))
    first.start()
    started.wait(10)
    second_started = threading.Event()
    second = threading.Thread(target=hold, args=(release_second, second_started))
    second.start()
    second_started.wait(10)
    release_first.set()
    first.join(10)
    seen.append(gc.isenabled())
    release_second.set()
    second.join(10)
    seen.append(gc.isenabled())
    with collector_paused():
        with collector_paused():
            seen.append(gc.isenabled())
        seen.append(gc.isenabled())
    seen.append(gc.isenabled())
    assert seen == [False, True, False, False, True]


@pytest.mark.parametrize("name", ["crm.refund", "mcp:github/create_issue", "drive(truck1,city2)",
                                  "do_plane(p2,smooth,red)~when01", "noop()"])
def test_tool_names_include_a_ground_actions_argument_list(name: str) -> None:
    """What HDDL grounding names its tools is a tool name the catalog and plan readers accept."""
    plan = plan_from_dict({"tasks": [{"id": "t1", "tool": name}]})
    assert plan.tasks[0].tool == name


@pytest.mark.parametrize("name", ["drive(truck1, city2)", "drive(truck1", "a)b", "a(b)(c)", "a~", "(a)",
                                  "a(b)c"])
def test_tool_names_still_refuse_spaces_and_unbalanced_lists(name: str) -> None:
    with pytest.raises(InputError, match="is not a valid name"):
        plan_from_dict({"tasks": [{"id": "t1", "tool": name}]})


def test_names_are_long_enough_for_ground_actions_and_no_longer() -> None:
    """A ground action's name with its arguments fits (Entertainment's run to 237 characters);
    past :data:`~evolve.model.limits.MAX_NAME` a name is refused, saying so."""
    longest = "a" * (MAX_NAME - 5) + "(b,c)"
    assert len(longest) == MAX_NAME
    assert plan_from_dict({"tasks": [{"id": "t1", "tool": longest}]}).tasks[0].tool == longest
    with pytest.raises(InputError, match=f"longer than {MAX_NAME} characters"):
        plan_from_dict({"tasks": [{"id": "t1", "tool": "a" + longest}]})
