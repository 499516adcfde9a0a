"""``evolve execute`` as users call it: exit statuses 0 / 1 / 2, the run folder, --resume, tools
found by MODULE:ATTR, by file and by entry point."""

from __future__ import annotations

import json
import os
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import evolve.execute.tools as tools_module
from evolve.cli.main import cli
from evolve.execute.tools import ToolError, load_tools

ROOT = Path(__file__).resolve().parent.parent
REFUND = ROOT / "examples" / "refund.yaml"
REFUND_PLAN = ROOT / "examples" / "refund_plan.yaml"

PROBLEM = """
name: tiny
initial: [x]
criteria: [b]
tools:
  one: {duration: 5, inputs: [x], outputs: [a]}
  two: {duration: 5, inputs: [a], outputs: [b]}
"""
PLAN = {
    "tasks": [
        {"id": "t1", "tool": "one", "inputs": {"x": "$x"}},
        {"id": "t2", "tool": "two", "deps": ["t1"], "inputs": {"a": "$t1.a"}},
    ]
}
TOOLS = """
from evolve import ToolFailure

def one(inputs, call):
    return {"a": inputs["x"] * 2}

def two(inputs, call):
    if inputs["a"] > 10:
        raise ToolFailure("too big", retryable=False)
    return {"b": inputs["a"] + 1}

TOOLS = {"one": one, "two": two}
"""


def invoke(args: list[str], cwd: Path) -> Result:
    here = os.getcwd()
    os.chdir(cwd)
    try:
        return CliRunner().invoke(cli, ["execute", *args])
    finally:
        os.chdir(here)


def run_tiny(tiny: Path, tools: str, x: int, *extra: str) -> Result:
    """``evolve execute`` of the tiny plan with these tools and fact x, into ``run``."""
    args = ["plan.json", "--problem", "problem.yaml", "--tools", tools, "--fact", f"x={x}", "--out", "run"]
    return invoke([*args, *extra], tiny)


def outcome_of(result: Result) -> Any:
    """The outcome ``--json`` printed (after any notes)."""
    return json.loads(result.output[result.output.index("{") :])


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    (tmp_path / "problem.yaml").write_text(PROBLEM)
    (tmp_path / "plan.json").write_text(json.dumps(PLAN))
    (tmp_path / "tiny_tools.py").write_text(TOOLS)
    return tmp_path


def test_goal_met_exits_0_with_the_run_folder(tiny: Path) -> None:
    result = run_tiny(tiny, "tiny_tools.py:TOOLS", 3, "--json")
    assert result.exit_code == 0, result.output
    outcome = outcome_of(result)
    assert (outcome["status"], outcome["reason"]) == ("completed", "goal_met")
    for name in (
        "journal.sqlite",
        "events.jsonl",
        "outcome.json",
        "report.html",
        "problem.json",
        "plan.json",
    ):
        assert (tiny / "run" / name).is_file(), name
    kinds = {json.loads(line)["event"] for line in (tiny / "run" / "events.jsonl").read_text().splitlines()}
    assert {"plan.commit", "step.start", "step.end", "session.complete"} <= kinds


def test_a_failed_run_exits_1_and_names_the_reason(tiny: Path) -> None:
    result = run_tiny(tiny, "tiny_tools.py:TOOLS", 30)
    assert result.exit_code == 1
    assert "failed: task_failed" in result.output and "too big" in result.output


def test_module_attr_tools_from_the_current_folder(tiny: Path) -> None:
    result = run_tiny(tiny, "tiny_tools:TOOLS", 1)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tools", "nowhere:TOOLS"], "cannot import nowhere"),
        (["--tools", "tiny_tools:NOPE"], "has no attribute 'NOPE'"),
        (["--tools", "tiny_tools"], "expected MODULE:ATTR"),
        (["--simulate", "--fail", "three=0.5"], "no tool 'three'"),
        (["--simulate", "--fail", "one=1.5"], "within [0, 1]"),
        (["--tools", "tiny_tools:TOOLS", "--fact", "y=1"], "not an initial fact"),
        (["--tools", "tiny_tools:TOOLS", "--fail", "one=0.5"], "--fail needs --simulate"),
        ([], "give --tools"),
    ],
)
def test_bad_input_exits_2_in_one_line(tiny: Path, args: list[str], message: str) -> None:
    result = invoke(["plan.json", "--problem", "problem.yaml", "--out", "run", *args], tiny)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output


def test_an_invalid_plan_exits_2(tiny: Path) -> None:
    (tiny / "bad.json").write_text(
        json.dumps({"tasks": [{"id": "t1", "tool": "two", "inputs": {"a": "$a"}}]})
    )
    result = invoke(["bad.json", "--problem", "problem.yaml", "--simulate", "--out", "run"], tiny)
    assert result.exit_code == 2
    assert "the plan is not valid" in result.output and "$a is not an initial fact" in result.output


def test_resume_of_a_folder_without_a_journal_exits_2(tiny: Path) -> None:
    (tiny / "empty").mkdir()
    result = invoke(["--resume", "empty"], tiny)
    assert result.exit_code == 2 and "no journal.sqlite" in result.output


def test_a_second_run_into_the_same_folder_is_refused(tiny: Path) -> None:
    args = ["plan.json", "--problem", "problem.yaml", "--simulate", "--out", "run"]
    assert invoke(args, tiny).exit_code == 0
    again = invoke(args, tiny)
    assert again.exit_code == 2 and "--resume" in again.output


def test_the_refund_example_replans_and_issues_no_refund(tmp_path: Path) -> None:
    result = invoke(
        [
            str(REFUND_PLAN),
            "--problem",
            str(REFUND),
            "--tools",
            "examples.refund_tools:TOOLS",
            "--out",
            str(tmp_path / "run"),
            "--json",
        ],
        ROOT,
    )
    assert result.exit_code == 0, result.output
    outcome = outcome_of(result)
    (diff,) = outcome["revisions"]
    assert {"t6", "t7"} <= set(diff["removed"])
    added = {outcome["tasks"][t]["tool"] for t in diff["added"]}
    assert "payments.trace_settlement" in added
    assert outcome["calls_by_risk"]["write"] == 0
    assert outcome["tasks"]["t7"]["status"] == "invalidated"


def test_simulate_is_a_dry_run_on_the_catalog_durations(tmp_path: Path) -> None:
    result = invoke(
        [str(REFUND_PLAN), "--problem", str(REFUND), "--simulate", "--out", str(tmp_path / "run"), "--json"],
        ROOT,
    )
    assert result.exit_code == 0, result.output
    outcome = outcome_of(result)
    assert outcome["clock"] == "virtual" and outcome["elapsed"] == 1200  # the planned makespan


def test_simulated_failures_with_a_seed(tmp_path: Path) -> None:
    args = [
        str(REFUND_PLAN),
        "--problem",
        str(REFUND),
        "--simulate",
        "--fail",
        "orders.get=0.6",
        "--seed",
        "4",
        "--json",
    ]
    first = invoke([*args, "--out", str(tmp_path / "a")], ROOT)
    second = invoke([*args, "--out", str(tmp_path / "b")], ROOT)
    one = outcome_of(first)
    two = outcome_of(second)
    assert first.exit_code == second.exit_code
    assert one["tasks"]["t1"]["attempts"] == two["tasks"]["t1"]["attempts"]
    assert (one["reason"], one["steps"]) == (two["reason"], two["steps"])


# -- tools from entry points -------------------------------------------------------------------


def fake_entry_points(points: list[EntryPoint]) -> Any:
    def entry_points(group: str) -> list[EntryPoint]:
        return [p for p in points if p.group == group]

    return entry_points


def test_entry_point_tools_fill_in_what_the_mapping_lacks(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(tiny))
    points = [
        EntryPoint("two", "tiny_tools:two", "evolve.tools"),
        EntryPoint("one", "tiny_tools:nope", "evolve.tools"),
    ]  # hidden by the mapping: never loaded
    monkeypatch.setattr(tools_module, "entry_points", fake_entry_points(points))
    (tiny / "partial.py").write_text("from tiny_tools import one\nTOOLS = {'one': one}\n")
    table = load_tools("partial:TOOLS", ["one", "two"])
    assert table["two"].__name__ == "two" and table["one"].__name__ == "one"


def test_a_broken_entry_point_is_named(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tiny))
    points = [EntryPoint("two", "tiny_tools:missing", "evolve.tools")]
    monkeypatch.setattr(tools_module, "entry_points", fake_entry_points(points))
    with pytest.raises(ToolError, match=r"entry point two = tiny_tools:missing \(evolve.tools\) failed"):
        load_tools(None, ["two"])
    assert load_tools(None, ["one"]) == {}  # not needed: not loaded
