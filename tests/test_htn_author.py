"""``evolve author``: domains from a trace, against a scripted endpoint on 127.0.0.1.

Only a candidate that passes every synthetic state is written; with none, nothing is."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.llm.testing import Script, Scripted, ScriptedServer
from evolve.llm.trace import read_trace
from evolve.model.errors import InputError
from evolve.problems import load_problem
from evolve.problems.htn import HtnProblem, validate_domain

TRACE = [
    {"tool": "ci.logs", "args": {"run": 7}, "result": {"failure_class": "lint"}},
    {"tool": "lint.fix", "args": {"path": "src/"}, "result": {"changed": 3}},
    {"tool": "git.push", "args": {}, "result": {"sha": "abc"}},
    {"tool": "pr.comment", "args": {"body": "fixed lint"}, "result": {"ok": True}},
]

PASSING = """```yaml
domain: heal-ci
worldState: {failure_class: lint, lint_tried: false}
root:
  name: heal-ci
  type: sequence
  tasks:
    - name: read-logs
      operator: {tool: ci.logs}
      effects: [{set: {logs: $result.log}}]
    - name: repair
      type: select
      tasks:
        - name: m-lint
          type: sequence
          conditions: [{eq: [failure_class, lint]}, {not: {eq: [lint_tried, true]}}]
          tasks:
            - {name: lint-fix, operator: {tool: lint.fix}, effects: [{set: {lint_tried: true}}]}
            - {name: push, operator: {tool: git.push}, effects: [{set: {fixed: true}}]}
        - name: m-comment-only
          type: sequence
          tasks:
            - {name: comment, operator: {tool: pr.comment}, effects: [{set: {fixed: true}}]}
```"""

ONE_STATE_FAILS = PASSING.replace("""        - name: m-comment-only
          type: sequence
          tasks:
            - {name: comment, operator: {tool: pr.comment}, effects: [{set: {fixed: true}}]}
""", "")
"""The lint rung alone: the states where lint was already tried, or the class is not lint, have no
plan (3 of the 4 the guards tell apart)."""

INVALID_YAML = "```yaml\ndomain: heal-ci\nroot: {name: x, type: [sequence\n```"
INVENTED_TOOL = PASSING.replace("tool: pr.comment", "tool: slack.post")


def by_seed(replies: dict[int, str]) -> Script:
    """Answers by the request's seed (one seed per candidate), so order never matters."""
    def script(body: dict[str, Any], seen: int) -> Scripted:
        return Scripted(replies.get(int(body.get("seed", -1)), "no yaml here"))
    return script


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in TRACE))
    return path


def author(server: ScriptedServer, trace: Path, tmp_path: Path, *extra: str) -> Any:
    return CliRunner().invoke(cli, [
        "author", str(trace), "--out", str(tmp_path / "domain.yaml"), "--run-dir", str(tmp_path / "run"),
        "--llm-base-url", server.url, "--llm-model", "scripted", "--llm-cache-dir", str(tmp_path / "cache"),
        *extra])


def test_three_candidates_the_passer_is_saved(serve: Callable[[Script], ScriptedServer], trace: Path,
                                              tmp_path: Path) -> None:
    server = serve(by_seed({0: INVALID_YAML, 1: ONE_STATE_FAILS, 2: PASSING}))
    result = author(server, trace, tmp_path, "--n", "3", "--generations", "2")
    assert result.exit_code == 0, result.output
    assert "wrote" in result.output and "g0c3 (generation 0)" in result.output
    assert len(server.requests) == 3  # a passer in generation 0: no mutation asked for
    written = load_problem(tmp_path / "domain.yaml")
    assert isinstance(written, HtnProblem)
    report = validate_domain(written.htn())
    assert not report.failures and len(report.results) == 4
    rows = [json.loads(line) for line in (tmp_path / "run" / "candidates.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == ["g0c1", "g0c2", "g0c3"]
    assert rows[0]["score"] < 0 and "invalid YAML" in rows[0]["failures"][0]
    assert not rows[1]["valid"] and rows[1]["planned"] < rows[1]["states"]
    assert rows[1]["score"] == pytest.approx(1000 * rows[1]["planned"] - len(rows[1]["failures"]), abs=1)
    assert rows[2]["valid"] and rows[2]["score"] > 4000
    prompt = json.loads((tmp_path / "run" / "prompt.json").read_text())
    assert "lint.fix" in prompt[1]["content"] and "Generalise it, do not replay it" in prompt[0]["content"]
    assert (tmp_path / "run" / "candidates" / "g0c2.yaml").is_file()
    again = author(server, trace, tmp_path, "--n", "3", "--generations", "2")
    assert again.exit_code == 0 and len(server.requests) == 3  # the cache answers a rerun


def test_no_passer_nothing_written(serve: Callable[[Script], ScriptedServer], trace: Path,
                                   tmp_path: Path) -> None:
    server = serve(by_seed({0: ONE_STATE_FAILS, 1: INVALID_YAML}))
    result = author(server, trace, tmp_path, "--n", "2", "--generations", "1")
    assert result.exit_code == 1, result.output
    assert not (tmp_path / "domain.yaml").exists()
    assert "no candidate passes every state; nothing written" in result.output
    assert "no plan in state" in result.output
    assert len(server.requests) == 4  # two candidates, then two mutations of the best
    mutation = server.requests[2]["messages"][1]["content"]
    assert "The validator" in mutation and "no plan in state" in mutation and "m-lint" in mutation
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["written"] is None and summary["candidates"] == 4


def test_an_invented_tool_never_passes(serve: Callable[[Script], ScriptedServer], trace: Path,
                                       tmp_path: Path) -> None:
    """It plans in every state, so it ranks first, but the gate holds."""
    server = serve(by_seed({0: ONE_STATE_FAILS, 1: INVENTED_TOOL}))
    result = author(server, trace, tmp_path, "--n", "2", "--generations", "0")
    assert result.exit_code == 1 and not (tmp_path / "domain.yaml").exists()
    assert "The best, g0c2" in result.output
    assert "uses tool 'slack.post', which the trace does not" in result.output


def test_a_mutation_mends_the_best(serve: Callable[[Script], ScriptedServer], trace: Path,
                                   tmp_path: Path) -> None:
    """Generation 0 fails a state; the mutation (seed n + i) returns the mended domain."""
    server = serve(by_seed({0: ONE_STATE_FAILS, 1: INVALID_YAML, 3: PASSING}))
    result = author(server, trace, tmp_path, "--n", "2", "--generations", "3")
    assert result.exit_code == 0, result.output
    assert "g1c2 (generation 1)" in result.output
    assert len(server.requests) == 4
    rows = [json.loads(line) for line in (tmp_path / "run" / "candidates.jsonl").read_text().splitlines()]
    assert rows[3]["parent"] == "g0c1" and rows[3]["valid"]
    assert (tmp_path / "run" / "candidates" / "g1c2.prompt.json").is_file()


def test_a_failing_endpoint_writes_nothing(serve: Callable[[Script], ScriptedServer], trace: Path,
                                           tmp_path: Path) -> None:
    server = serve(lambda body, seen: Scripted(None, status=400))
    result = author(server, trace, tmp_path, "--n", "2", "--generations", "0")
    assert result.exit_code == 1 and not (tmp_path / "domain.yaml").exists()
    assert "the call failed: http" in result.output


def test_messages_traces(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    path.write_text(json.dumps({"messages": [
        {"role": "user", "content": "CI is red"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "ci.logs", "arguments": '{"run": 7}'}}]},
        {"role": "tool", "tool_call_id": "a", "content": '{"failure_class": "lint"}'},
        {"role": "assistant", "tool_calls": [
            {"id": "b", "type": "function", "function": {"name": "lint.fix", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "b", "content": "done"},
    ]}))
    calls = read_trace(path)
    assert [(c.tool, dict(c.args), c.result) for c in calls] == [
        ("ci.logs", {"run": 7}, {"failure_class": "lint"}), ("lint.fix", {}, "done")]


@pytest.mark.parametrize(("text", "message"), [
    ('{"tool": "a"}\nnot json\n', "t.jsonl: line 2: not JSON"),
    ('{"tool": "a", "arg": {}}\n', "t.jsonl: line 1.arg: unknown key (allowed: tool, args, result)"),
    ('{"tool": 3}\n', "t.jsonl: line 1.tool: expected a tool name, got 3"),
    ('{"tool": "a", "args": [1]}\n', "t.jsonl: line 1.args: expected an object of arguments, got [1]"),
    ("\n", "t.jsonl: no tool calls in the trace"),
])
def test_bad_traces_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(text)
    with pytest.raises(InputError) as caught:
        read_trace(path)
    assert str(caught.value).replace(str(tmp_path) + "/", "").startswith(message)
    result = CliRunner().invoke(cli, ["author", str(path), "--out", str(tmp_path / "d.yaml"),
                                      "--llm-base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"])
    assert result.exit_code == 2 and not (tmp_path / "d.yaml").exists()
