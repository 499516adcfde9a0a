"""``evolve plan``: the model drafts a whole plan in the typed schema on a real 127.0.0.1
endpoint, a rejected plan goes back with the validator's errors, and the plan that passes seeds
the search, whose best is never worse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.llm.client import ChatClient
from evolve.llm.draft import LLMPlanner, plan_schema
from evolve.llm.operator import Sampling
from evolve.llm.testing import Scripted, ScriptedServer
from evolve.model.problem_file import problem_from_dict

PROBLEM = {
    "name": "two-ways",
    "initial": ["ask"],
    "criteria": ["y"],
    "limits": {"max_tasks": 4},
    "tools": {
        "make_x": {"duration": 5, "inputs": ["ask"], "outputs": ["x"]},
        "make_y": {"duration": 5, "inputs": ["x"], "outputs": ["y"]},
        "slow_y": {"duration": 50, "inputs": ["ask"], "outputs": ["y"]},
    },
}
GOOD = {"tasks": [{"id": "a", "tool": "make_x", "inputs": {"ask": "$ask"}},
                  {"id": "b", "tool": "make_y", "deps": ["a"], "inputs": {"x": "$a.x"}}]}
BAD = {"tasks": [{"id": "a", "tool": "teleport", "inputs": {}}]}


def problem_file(tmp_path: Path) -> Path:
    path = tmp_path / "problem.json"
    path.write_text(json.dumps(PROBLEM))
    return path


def test_the_schema_names_the_tools_and_caps_the_tasks() -> None:
    schema = plan_schema(problem_from_dict(PROBLEM))
    tasks = schema["properties"]["tasks"]
    assert tasks["maxItems"] == 4
    assert tasks["items"]["properties"]["tool"]["enum"] == ["make_x", "make_y", "slow_y"]


def test_the_model_is_sent_the_schema_and_the_quoted_goal() -> None:
    with ScriptedServer(lambda body, seen: Scripted(json.dumps(GOOD))) as server, \
            ChatClient(server.url, "m", timeout=5.0) as client:
        sampling = Sampling(response_format="json_schema")
        planner = LLMPlanner(client, problem_from_dict(PROBLEM), sampling=sampling)
        assert planner('ship "y"\n# now', [], None) == GOOD
        [body] = server.requests
    assert body["response_format"]["json_schema"]["schema"]["properties"]["tasks"]["maxItems"] == 4
    assert '"ship \\"y\\"\\n# now"' in body["messages"][1]["content"]


def test_evolve_plan_feeds_the_errors_back_and_seeds_the_search(tmp_path: Path) -> None:
    def script(body: dict[str, Any], seen: int) -> Scripted:
        rejected = "rejected by the validator" in body["messages"][1]["content"]
        return Scripted(json.dumps(GOOD if rejected else BAD))

    out = tmp_path / "run"
    with ScriptedServer(script) as server:
        result = CliRunner().invoke(cli, ["plan", "--problem", str(problem_file(tmp_path)), "--llm-base-url",
                                          server.url, "--llm-model", "m", "--generations", "2",
                                          "--out", str(out), "--json"])
        second = server.requests[1]["messages"][1]["content"]
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["draft"]["asked"] == 2 and data["draft"]["plan"] == {"tasks": 2, "makespan": 10.0}
    assert "unknown tool 'teleport'" in second
    assert data["best"]["makespan"] <= 10.0 and data["best"]["feasible"]
    assert json.loads((out / "seed.json").read_text())["tasks"][0]["tool"] == "make_x"
    first = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert any(e.get("operator") == "seed" and e.get("generation") == 0 for e in first)


def test_without_a_valid_answer_the_search_goes_on_alone(tmp_path: Path) -> None:
    with ScriptedServer(lambda body, seen: Scripted("not json")) as server:
        result = CliRunner().invoke(cli, ["plan", "--problem", str(problem_file(tmp_path)), "--llm-base-url",
                                          server.url, "--llm-model", "m", "--attempts", "2",
                                          "--generations", "2", "--out", str(tmp_path / "run")])
        asked = len(server.requests)
    assert result.exit_code == 0, result.output
    assert asked == 2
    assert "the model gave no valid plan in 2 answer(s)" in result.output and "not JSON" in result.output
    assert "best plan: 2 tasks, makespan 10" in result.output


def test_evolve_plan_without_a_model_is_the_search(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", "--problem", str(problem_file(tmp_path)), "--generations", "1",
                                      "--out", str(tmp_path / "run")])
    assert result.exit_code == 0, result.output
    assert "best plan: 2 tasks" in result.output and "model" not in result.output


def test_half_the_model_options_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["plan", "--problem", str(problem_file(tmp_path)), "--llm-model", "m"])
    assert result.exit_code == 2 and "--llm-base-url" in result.output
