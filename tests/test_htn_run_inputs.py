"""``evolve run DOMAIN --input KEY=VALUE``: the world state seeded before planning, as
``evolve execute DOMAIN`` does; bad keys and files are one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from evolve.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
LADDER = ROOT / "examples" / "htn" / "ladder.yaml"
QUICK = ["--generations", "0", "--jobs", "1", "--no-report"]


def run(tmp_path: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["run", *args, *QUICK, "--out", str(tmp_path / "run")])
    return result.exit_code, result.output


def tools(tmp_path: Path) -> list[str]:
    return [t["tool"] for t in json.loads((tmp_path / "run" / "best.json").read_text())["tasks"]]


def test_an_input_selects_the_rung_the_plan_takes(tmp_path: Path) -> None:
    code, output = run(tmp_path / "a", str(LADDER))
    assert code == 0, output
    assert tools(tmp_path / "a")[:2] == ["lint_fix", "push_fix"]  # the domain's own state: lint
    code, output = run(tmp_path / "b", str(LADDER), "--input", "failure_class=flaky")
    assert code == 0, output
    assert tools(tmp_path / "b")[0] == "rerun_ci"
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"failure_class": "flaky", "ci_red": True}))
    code, output = run(tmp_path / "c", str(LADDER), "--input-file", str(state))
    assert code == 0, output
    assert tools(tmp_path / "c") == tools(tmp_path / "b")


def test_bad_inputs_are_one_line(tmp_path: Path) -> None:
    code, output = run(tmp_path, str(LADDER), "--input", "nope=1")
    assert code == 2 and "--input: nope: not a key of the domain" in output
    assert "Traceback" not in output and len(output.strip().splitlines()) == 1
    code, output = run(tmp_path, str(LADDER), "--input", "failure_class")
    assert code == 2 and "expected KEY=VALUE" in output
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    code, output = run(tmp_path, str(LADDER), "--input-file", str(listed))
    assert code == 2 and str(listed) in output and "expected a mapping" in output
    code, output = run(tmp_path, str(ROOT / "examples" / "refund.yaml"), "--input", "a=1")
    assert code == 2 and "seed the world state of an HTN domain" in output
    assert not (tmp_path / "run").exists()
