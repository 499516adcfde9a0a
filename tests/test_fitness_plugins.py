"""The worked examples in ``examples/plugins/``: they keep the contract and run with ``evolve run``.

The package ``examples/plugins/evolve-budget`` is made discoverable the way
``pip install`` would make it, without installing it: a ``*.dist-info`` folder
built from the package's own ``pyproject.toml`` (so a typo in its entry-point
table fails here) is put on ``sys.path`` next to its ``src`` folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.fitness.testing import check_fitness
from evolve.model.plan import Plan, Task
from evolve.problems import load_problem
from fitness import Context, resolve

REPO = Path(__file__).resolve().parents[1]
PLUGINS = REPO / "examples" / "plugins"
BUDGET = PLUGINS / "evolve-budget"
REFUND = REPO / "examples" / "refund.yaml"


@pytest.fixture
def budget_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Make ``evolve-budget`` discoverable as if pip-installed; return its distribution name."""
    tomllib = pytest.importorskip("tomllib", reason="reading pyproject.toml needs Python 3.11")
    project = tomllib.loads((BUDGET / "pyproject.toml").read_text())["project"]
    info = tmp_path / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    groups = "".join(
        f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in table.items())
        for group, table in project["entry-points"].items())
    (info / "entry_points.txt").write_text(groups)
    monkeypatch.syspath_prepend(str(BUDGET / "src"))
    monkeypatch.syspath_prepend(str(tmp_path))
    return str(project["name"])


@pytest.fixture
def at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the checkout, as the README's commands do (``examples.plugins.slo`` is found there)."""
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sys, "path", list(sys.path))  # undo what resolve adds for the cwd


def test_the_plain_module_plugin_keeps_the_contract(at_repo_root: None) -> None:
    check_fitness(resolve("examples.plugins.slo:approval_wait"), max_examples=30)


def test_the_packaged_plugin_keeps_the_contract(budget_installed: str) -> None:
    check_fitness(resolve("dollars"), max_examples=30)


def test_the_packaged_plugin_is_listed_with_where_it_comes_from(budget_installed: str) -> None:
    result = CliRunner().invoke(cli, ["fitness", "list", "--json"])
    assert result.exit_code == 0, result.output
    listed = {entry["name"]: entry for entry in json.loads(result.stdout)}
    assert listed["dollars"]["source"] == f"entry point evolve_budget:dollars ({budget_installed})"
    assert listed["dollars"]["direction"] == "min"
    assert listed["cost"]["source"] == "builtin"


def test_approval_wait_counts_only_approvals_on_the_critical_path(at_repo_root: None) -> None:
    approval_wait = resolve("examples.plugins.slo:approval_wait")
    problem = load_problem(REFUND)
    chain = Plan(tasks=(
        Task(id="a", tool="analytics.log_contact", inputs={"complaint": "$complaint"}),
        Task(id="b", tool="approvals.manager", deps=("a",)),
    ))
    side = Plan(tasks=(
        Task(id="a", tool="policy.fetch_all"),  # 900, alone on the critical path
        Task(id="b", tool="approvals.auto"),  # 300, in parallel
    ))
    assert approval_wait(problem, chain, Context(problem, chain)) == 4000
    assert approval_wait(problem, side, Context(problem, side)) == 0


def run(args: list[str], out: Path) -> dict[str, object]:
    result = CliRunner().invoke(cli, ["run", str(REFUND), "--generations", "2", "--population", "6",
                                      "--jobs", "1", "--out", str(out), "--json", *args])
    assert result.exit_code == 0, result.output
    summary: dict[str, object] = json.loads(result.stdout)
    return summary


def test_evolve_run_with_both_plugins_in_priority_order(
        budget_installed: str, at_repo_root: None, tmp_path: Path) -> None:
    summary = run(["--fitness", "validity", "--fitness", "completeness",
                   "--fitness", "examples.plugins.slo:approval_wait", "--fitness", "dollars"],
                  tmp_path / "lexicographic")
    best = summary["best"]
    assert isinstance(best, dict)
    assert "failed" not in best, best
    assert list(best["values"]) == ["validity", "completeness", "approval_wait", "dollars"]
    assert summary["ranking"] == ("lexicographic: validity (min) > completeness (max) > "
                                  "approval_wait (min) > dollars (min)")


def test_evolve_run_with_plugins_and_weights(budget_installed: str, at_repo_root: None,
                                             tmp_path: Path) -> None:
    summary = run(["--fitness", "validity", "--fitness", "dollars", "--fitness", "makespan",
                   "--weights", "1000,100,0.001"], tmp_path / "weighted")
    assert str(summary["ranking"]).startswith("weighted: 1000*validity (min) + 100*dollars (min)")


def test_a_plugin_that_cannot_be_imported_stops_the_run_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["run", str(REFUND), "--out", str(tmp_path / "never"),
                                      "--fitness", "examples.plugins.no_such_module:fn"])
    assert result.exit_code == 2
    assert "error: fitness plugin 'examples.plugins.no_such_module:fn': cannot import" in result.output
    assert "Traceback" not in result.output
