"""The command line, through click's CliRunner and once through the real console script."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from evolve.cli.main import cli

PLAN_OK = {"tasks": [
    {"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}},
    {"id": "t2", "tool": "policy.search", "inputs": {"complaint": "$complaint"}},
    {"id": "t3", "tool": "payments.lookup", "deps": ["t1"], "inputs": {"order": "$t1.order"}},
]}
PLAN_BAD = {"tasks": [
    {"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}},
    {"id": "t2", "tool": "no.such.tool"},
    {"id": "t3", "tool": "payments.lookup", "inputs": {"order": "$t1.order"}},
]}


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def write_json(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def test_run_writes_the_run_folder(refund_path: Path, run_dir: Path) -> None:
    result = invoke("run", refund_path, "--generations", "3", "--jobs", "1", "--seed", "5",
                    "--out", run_dir)
    assert result.exit_code == 0, result.output
    assert {"best.json", "summary.json", "events.jsonl"} <= {p.name for p in run_dir.iterdir()}
    assert "best plan" in result.stdout and "feasible" in result.stdout
    assert "makespan" in result.stdout and str(run_dir) in result.stdout
    progress = [line for line in result.stderr.splitlines() if line.startswith("gen")]
    assert len(progress) == 4 and "evals" in progress[-1]  # generations 0..3
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["options"]["generations"] == 3 and summary["options"]["seed"] == 5
    best = json.loads((run_dir / "best.json").read_text())
    assert best["tasks"] and set(best["schedule"]) == {t["id"] for t in best["tasks"]}
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert {"generation_start", "generation_end", "candidate"} <= {e["event"] for e in events}


def test_run_json(refund_path: Path, run_dir: Path) -> None:
    result = invoke("run", refund_path, "--generations", "2", "--jobs", "1", "--out", run_dir,
                    "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # nothing but JSON on stdout
    assert data["out"] == str(run_dir)
    assert data["best"]["feasible"] is True
    assert data["evaluations"] > 0
    assert not [line for line in result.stderr.splitlines() if line.startswith("gen")]


def test_run_options_are_checked(refund_path: Path, run_dir: Path) -> None:
    result = invoke("run", refund_path, "--population", "4", "--keep", "4", "--out", run_dir)
    assert result.exit_code == 2
    assert "keep" in result.stderr and "Traceback" not in result.output


def test_validate_exit_codes(refund_path: Path, tmp_path: Path) -> None:
    good = write_json(tmp_path / "good.json", PLAN_OK)
    result = invoke("validate", good, "--problem", refund_path)
    assert result.exit_code == 0 and "valid, status ready (3 tasks)" in result.stdout

    bad = write_json(tmp_path / "bad.json", PLAN_BAD)
    result = invoke("validate", bad, "--problem", refund_path)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith("t2:") and "no.such.tool" in line for line in lines)
    assert any(line.startswith("t3:") and "t1" in line for line in lines)  # ref-dep

    result = invoke("validate", tmp_path / "missing.json", "--problem", refund_path)
    assert result.exit_code == 2 and "missing.json" in result.stderr

    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    result = invoke("validate", broken, "--problem", refund_path)
    assert result.exit_code == 2 and "invalid JSON" in result.stderr


def test_validate_json(refund_path: Path, tmp_path: Path) -> None:
    bad = write_json(tmp_path / "bad.json", PLAN_BAD)
    result = invoke("validate", bad, "--problem", refund_path, "--json")
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["valid"] is False and data["status"] == "blocked"
    expected = {"rule": "tool-registered", "task": "t2", "message": "unknown tool 'no.such.tool'"}
    assert expected in data["errors"]
    good = write_json(tmp_path / "good.json", PLAN_OK)
    result = invoke("validate", good, "--problem", refund_path, "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == {"valid": True, "status": "ready", "errors": []}


def test_validate_the_plan_a_run_wrote(refund_path: Path, run_dir: Path) -> None:
    assert invoke("run", refund_path, "--generations", "2", "--jobs", "1", "--out", run_dir).exit_code == 0
    result = invoke("validate", run_dir / "best.json", "--problem", refund_path)
    assert result.exit_code == 0, result.output


def test_schedule_table_and_json(refund_path: Path, tmp_path: Path) -> None:
    plan = write_json(tmp_path / "plan.json", PLAN_OK)
    result = invoke("schedule", plan, "--problem", refund_path)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["task", "tool", "start", "finish", "slack", "wave"]
    rows = {line.split()[0]: line.split() for line in lines[1:4]}
    assert rows["t1*"][1:5] == ["orders.get", "0", "150", "0"]
    assert rows["t3*"][1:5] == ["payments.lookup", "150", "330", "0"]
    assert rows["t2"][1:5] == ["policy.search", "0", "250", "80"]
    assert "makespan 330" in result.stdout and "t1 -> t3" in result.stdout

    result = invoke("schedule", plan, "--problem", refund_path, "--json")
    data = json.loads(result.stdout)
    assert data["makespan"] == 330 and data["critical_path"] == ["t1", "t3"]
    assert data["slack"]["t2"] == 80 and data["waves"] == [["t1", "t2"], ["t3"]]
    assert data["schedule"]["t3"] == {"start": 150, "finish": 330}


BAD_FILES = [
    pytest.param("tools:\n  orders.get:\n    duration: fast\n    outputs: [x]\ncriteria: [x]\n",
                 'tools.orders.get.duration: expected a number >= 0, got "fast"', id="type"),
    pytest.param("tools:\n  a: {duration: 1, outputs: [x]}\ncriteria: [x]\nlimts: {}\n",
                 "limts: unknown key", id="unknown-key"),
    pytest.param("tools: [\n", "invalid YAML", id="yaml"),
    pytest.param("criteria: [x]\n", "tools: missing", id="missing"),
]


@pytest.mark.parametrize(("content", "message"), BAD_FILES)
@pytest.mark.parametrize("command", ["run", "validate", "schedule"])
def test_bad_problem_file_gives_one_line_and_exit_2(tmp_path: Path, content: str, message: str,
                                                    command: str) -> None:
    problem = tmp_path / "bad.yaml"
    problem.write_text(content)
    plan = write_json(tmp_path / "plan.json", PLAN_OK)
    args: list[str | Path] = [command, problem, "--out", tmp_path / "run"] if command == "run" \
        else [command, plan, "--problem", problem]
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: {problem}: ") and message in lines[0]
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit)


def test_missing_problem_file(tmp_path: Path) -> None:
    result = invoke("run", tmp_path / "nope.yaml", "--out", tmp_path / "run")
    assert result.exit_code == 2 and "nope.yaml" in result.stderr and "cannot read" in result.stderr


def test_fitness_list() -> None:
    result = invoke("fitness", "list", "--json")
    assert result.exit_code == 0
    names = {f["name"] for f in json.loads(result.stdout)}
    assert {"validity", "completeness", "minimality", "makespan"} <= names


def console_script() -> str:
    path = shutil.which("evolve")
    if path is None:
        pytest.skip("the evolve console script is not installed (pip install -e .)")
    return path


def test_console_script_runs_for_real(refund_path: Path, run_dir: Path) -> None:
    proc = subprocess.run(
        [console_script(), "run", str(refund_path), "--generations", "2", "--jobs", "2",
         "--out", str(run_dir), "--json"],
        capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["best"]["feasible"] is True and data["options"]["jobs"] == 2
    assert (run_dir / "best.json").exists() and (run_dir / "events.jsonl").exists()


def test_console_script_bad_problem_has_no_traceback(tmp_path: Path) -> None:
    problem = tmp_path / "bad.yaml"
    problem.write_text(yaml.safe_dump({"criteria": ["x"], "tools": {"a": {"duration": "fast"}}}))
    proc = subprocess.run([console_script(), "run", str(problem), "--out", str(tmp_path / "r")],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f'error: {problem}: tools.a.duration: expected a number >= 0, got "fast"'
    assert proc.stdout == ""
