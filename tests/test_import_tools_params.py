"""``import-tools --trace`` keeps the schema's parameter names: the facts a session showed feed the
parameters (``inputs: {text: logs}``), the tool is called with its own names, and the optional
arguments the session gave are kept (``arguments: {lines: 500}``). The journey: import OpenAI
functions with a trace, ``evolve run``, ``validate``, ``execute`` with Python tools whose
signatures are exactly the schema's parameters (an unknown keyword is a ``TypeError``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from evolve.model.errors import InputError
from evolve.model.problem_file import problem_from_dict, problem_to_dict
from evolve.problems.toolspec import import_tools

ROOT = Path(__file__).resolve().parent.parent


def function(name: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "parameters": {"type": "object", "properties": props, "required": required}}}


SPEC = {"tools": [
    function("fetch_logs", {"service": {"type": "string"}}, ["service"]),
    function("diagnose", {"text": {"type": "string"}, "lines": {"type": "integer"}}, ["text"]),
    function("post_message", {"channel": {"type": "string"}, "text": {"type": "string"}},
             ["channel", "text"]),
]}
TRACE = [
    {"name": "fetch_logs", "arguments": {"service": "api"}, "result": {"logs": "ERR disk /var full"}},
    {"name": "diagnose", "arguments": {"text": "ERR disk /var full", "lines": 500},
     "result": {"cause": "disk full on /var"}},
    {"name": "post_message", "arguments": {"channel": "#ops", "text": "disk full on /var"},
     "result": {"ts": "171.2"}},
]
TOOLS = '''
import json, os

def fetch_logs(service):
    return {"logs": f"ERR disk /var full ({service})"}

def diagnose(text, lines=100):
    return {"cause": f"disk full, read {lines} lines of: {text}"}

def post_message(channel, text):
    return {"ts": "171.2"}

def called(fn):
    """The runtime's (inputs, call) to the function's own keywords: an unknown one is a TypeError."""
    def tool(inputs, call):
        with open(os.environ["CALLS"], "a") as log:
            log.write(json.dumps({"tool": call.tool, "kwargs": dict(inputs)}) + "\\n")
        result = fn(**inputs)
        return {**result, call.tool + "_result": result}  # the fields, and the whole result
    return tool

TOOLS = {name: called(fn) for name, fn in
         [("fetch_logs", fetch_logs), ("diagnose", diagnose), ("post_message", post_message)]}
'''


@pytest.fixture
def imported(tmp_path: Path) -> tuple[Path, Path]:
    (tmp_path / "tools.json").write_text(json.dumps(SPEC))
    (tmp_path / "trace.json").write_text(json.dumps(TRACE))
    return tmp_path / "tools.json", tmp_path / "trace.json"


def test_the_catalog_maps_facts_to_the_schemas_parameters(imported: tuple[Path, Path]) -> None:
    spec, trace = imported
    result = import_tools(spec, trace_path=trace)
    tools = result.problem.tools
    assert tools["diagnose"].inputs == ("logs",) and dict(tools["diagnose"].params) == {"text": "logs"}
    assert dict(tools["diagnose"].arguments) == {"lines": 500}
    assert dict(tools["post_message"].params) == {"channel": "channel", "text": "cause"}
    assert result.document["tools"]["diagnose"]["inputs"] == {"text": "logs"}
    assert result.document["tools"]["fetch_logs"]["inputs"] == ["service"]  # nothing renamed
    # the callable gets the schema's names, each with its fact's value
    assert tools["diagnose"].call_arguments({"logs": "ERR"}) == {"text": "ERR", "lines": 500}
    assert tools["post_message"].call_arguments({"channel": "#ops", "cause": "disk"}) == {
        "channel": "#ops", "text": "disk"}
    assert any("lines = 500" in note for note in result.notes)
    # the problem as a run folder keeps it (problem.json is what --resume reads)
    assert problem_from_dict(problem_to_dict(result.problem)).tools == tools


def test_a_task_literal_wins_over_the_catalogs_argument() -> None:
    problem = problem_from_dict({"criteria": ["b"], "initial": ["a"], "tools": {
        "t": {"duration": 1, "inputs": {"x": "a", "y": "a"}, "arguments": {"n": 1}, "outputs": ["b"]}}})
    tool = problem.tools["t"]
    assert tool.inputs == ("a",)  # one fact, two parameters read it
    assert tool.call_arguments({"a": 7, "n": 2}) == {"x": 7, "y": 7, "n": 2}


@pytest.mark.parametrize(("tool", "message"), [
    ({"duration": 1, "inputs": {"x": "a"}, "arguments": {"x": 1}}, "tools.t.arguments.x: also an input"),
    ({"duration": 1, "inputs": ["a"], "arguments": {"a": 1}}, "tools.t.arguments.a: also an input"),
    ({"duration": 1, "inputs": {"x": "no such"}}, "tools.t.inputs.x"),
])
def test_bad_mappings_name_the_field(tool: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message.replace(".", r"\.")):
        problem_from_dict({"criteria": ["a"], "tools": {"t": tool}}, "p.yaml")


def evolve(*args: str | Path, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evolve", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)


def test_import_run_validate_execute_with_the_schemas_names(imported: tuple[Path, Path],
                                                            tmp_path: Path) -> None:
    spec, trace = imported
    (tmp_path / "incident_tools.py").write_text(TOOLS)
    env = {**os.environ, "CALLS": str(tmp_path / "calls.jsonl"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = evolve("import-tools", spec, "--trace", trace, "--out", "problem.yaml", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    written = yaml.safe_load((tmp_path / "problem.yaml").read_text())
    assert written["tools"]["diagnose"]["arguments"] == {"lines": 500}
    done = evolve("run", "problem.yaml", "--out", "run", "--generations", "3", "--jobs", "1", "--no-report",
                  cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    done = evolve("validate", "run/best.json", "--problem", "problem.yaml", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout
    done = evolve("execute", "run/best.json", "--problem", "problem.yaml",
                  "--tools", "incident_tools.py:TOOLS", "--fact", "service=api", "--fact", "channel=#ops",
                  "--out", "exec", "--no-report", "--json",
                  cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
    lines = (tmp_path / "calls.jsonl").read_text().splitlines()
    calls = {c["tool"]: c["kwargs"] for c in map(json.loads, lines)}
    assert calls["fetch_logs"] == {"service": "api"}
    assert calls["diagnose"] == {"text": "ERR disk /var full (api)", "lines": 500}
    assert calls["post_message"]["channel"] == "#ops"
    assert calls["post_message"]["text"].startswith("disk full, read 500 lines")
