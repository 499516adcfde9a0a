"""``evolve bound``: a proven bound, a plan's gap to it checked by validator and scheduler, and
clean errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve import load_problem, schedule
from evolve.cli.main import cli
from evolve.model.plan_file import load_plan
from evolve.problems.synthetic import generate_document

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A generated 3-slot problem and the run folder of a short search on it."""
    folder = tmp_path_factory.mktemp("bound")
    doc = generate_document(40, 3)
    doc.setdefault("limits", {})["max_parallel"] = 3
    problem = folder / "p.json"
    problem.write_text(json.dumps(doc), encoding="utf-8")
    res = CliRunner().invoke(cli, ["run", str(problem), "--generations", "2", "--seed", "3",
                                   "--out", str(folder / "run")])
    assert res.exit_code == 0, res.output
    return problem, folder / "run"


def test_the_bound_is_below_the_plan_and_the_gap_is_the_schedulers(generated: tuple[Path, Path]) -> None:
    problem_file, run = generated
    res = CliRunner().invoke(cli, ["bound", str(problem_file), "--plan", str(run), "--json",
                                   "--mip-seconds", "2", "--path-seconds", "5"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert set(doc["parts"]) >= {"critical-path", "energy", "energy-mip", "path-mip"}
    assert doc["bound"] == max(doc["parts"].values())
    made = schedule(load_problem(problem_file), load_plan(run / "best.json")).makespan
    assert doc["plan"]["valid"] and doc["plan"]["makespan"] == made
    assert doc["bound"] <= made + 1e-6
    assert doc["plan"]["gap_pct"] == pytest.approx((made / doc["bound"] - 1) * 100)
    text = CliRunner().invoke(cli, ["bound", str(problem_file), "--plan", str(run / "best.json"),
                                    "--mip-seconds", "0", "--path-seconds", "0"])
    assert text.exit_code == 0, text.output
    assert text.output.startswith("lower bound ") and "gap to the bound" in text.output
    assert "path-mip" not in text.output  # --path-seconds 0 skips it


def test_a_plan_that_does_not_validate_is_not_measured(generated: tuple[Path, Path], tmp_path: Path) -> None:
    """A plan with a task the catalog lacks cannot have its makespan (nor its gap) reported."""
    problem_file, run = generated
    doc = json.loads((run / "best.json").read_text(encoding="utf-8"))
    doc["tasks"][0]["tool"] = "no.such.tool"
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(doc), encoding="utf-8")
    res = CliRunner().invoke(cli, ["bound", str(problem_file), "--plan", str(broken), "--json",
                                   "--mip-seconds", "0", "--path-seconds", "0"])
    assert res.exit_code == 1
    out = json.loads(res.stdout)
    assert out["plan"]["valid"] is False and "makespan" not in out["plan"]
    assert any("no.such.tool" in e for e in out["plan"]["errors"])


def test_bad_input_is_one_clear_line(tmp_path: Path) -> None:
    runner = CliRunner()
    missing = runner.invoke(cli, ["bound", str(tmp_path / "nope.yaml")])
    assert missing.exit_code == 2 and "nope.yaml" in missing.output
    graph = tmp_path / "graph.yaml"  # a fixed task graph: a template and no criteria
    graph.write_text("tools:\n  a: {duration: 3, inputs: [x], outputs: [y]}\ninitial: [x]\n"
                     "criteria: []\ntemplate:\n  tasks:\n    - {id: t1, tool: a, inputs: {x: $x}}\n",
                     encoding="utf-8")
    fixed = runner.invoke(cli, ["bound", str(graph)])
    assert fixed.exit_code == 2 and "nothing to bound" in fixed.output, fixed.output
    htn = runner.invoke(cli, ["bound", str(ROOT / "examples" / "htn" / "ladder.yaml")])
    assert htn.exit_code == 2 and "an HTN domain" in htn.output, htn.output
    empty = runner.invoke(cli, ["bound", str(ROOT / "examples" / "refund.yaml"), "--plan", str(tmp_path)])
    assert empty.exit_code == 2 and "without best.json" in empty.output
    negative = runner.invoke(cli, ["bound", str(ROOT / "examples" / "refund.yaml"), "--mip-seconds", "-1"])
    assert negative.exit_code == 2
