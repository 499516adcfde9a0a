"""The HTML report's content, and the ``report``, ``plot`` and ``show`` commands end to end."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from evolve.cli.report import COMMANDS, report, show
from evolve.model.problem import Problem
from evolve.report import write_report
from evolve.run.folder import RunOutcome, run_search
from evolve.search.options import SearchOptions


@pytest.fixture(scope="module")
def outcome(refund: Problem, tmp_path_factory: pytest.TempPathFactory) -> RunOutcome:
    folder = tmp_path_factory.mktemp("report-html") / "run"
    return run_search(refund, options=SearchOptions(generations=10, seed=2, jobs=1), out_dir=folder)


def copy_run(outcome: RunOutcome, dest: Path, with_problem: bool) -> Path:
    dest.mkdir()
    names = ["best.json", "summary.json", "events.jsonl"] + (["problem.json"] if with_problem else [])
    for name in names:
        (dest / name).write_bytes((outcome.out_dir / name).read_bytes())
    return dest


def test_report_has_every_part_and_needs_no_network(outcome: RunOutcome, tmp_path: Path) -> None:
    path = write_report(copy_run(outcome, tmp_path / "run", with_problem=True))
    assert path == tmp_path / "run" / "report.html"
    page = path.read_text()
    best = json.loads((tmp_path / "run" / "best.json").read_text())
    assert page.count('class="gantt-bar') == len(best["tasks"])
    assert page.count('<g class="node') == len(best["tasks"])
    critical = outcome.summary["best"]["critical_path"]
    assert page.count('class="gantt-bar critical"') == len(critical)
    assert page.count('class="edge critical"') == len(critical) - 1
    for objective in ("validity", "completeness", "makespan", "minimality"):
        panel = re.search(f'data-objective="{objective}".*?</svg>', page)
        assert panel is not None and panel.group().count("conv-point") == 11
    for section in ("plan", "gantt", "convergence", "lineage", "population", "run"):
        assert f'<section id="{section}">' in page
    assert 'data-resource="llm_api"' in page  # resources are known from problem.json
    assert "Content-Security-Policy" in page
    assert not re.search(r'(src|href)="(?!data:)', page), "the page must not load anything"
    assert "http://" not in page and "https://" not in page
    population = page.split('<section id="population">')[1].split("</section>")[0]
    assert population.count("<tr") == 1 + 6
    for candidate in outcome.result.population:
        assert f"<code>{candidate.id}</code>" in population


def test_a_plan_built_from_scratch_counts_its_tasks(outcome: RunOutcome, tmp_path: Path) -> None:
    """Not the patch's lines: its priority line is no task (a 9-task plan read "10 tasks")."""
    page = write_report(copy_run(outcome, tmp_path / "run", with_problem=True)).read_text()
    best = json.loads((tmp_path / "run" / "best.json").read_text())
    lineage = page.split('<section id="lineage">')[1].split("</section>")[0]
    found = re.search(r"built from scratch: (\d+) tasks", lineage)
    assert found is not None and outcome.result.best.generation == 0
    assert int(found.group(1)) == len(best["tasks"]) == 9


def test_without_the_problem_the_stored_schedule_is_drawn(outcome: RunOutcome, tmp_path: Path,
                                                          refund_path: Path) -> None:
    bare = copy_run(outcome, tmp_path / "bare", with_problem=False)
    page = write_report(bare).read_text()
    assert "no problem.json" in page and 'data-resource="llm_api"' not in page
    page = write_report(bare, problem=refund_path, out=tmp_path / "r.html").read_text()
    assert 'data-resource="llm_api"' in page and str(refund_path) in page


def test_llm_metadata_and_summary_reach_the_report(outcome: RunOutcome, tmp_path: Path) -> None:
    run = copy_run(outcome, tmp_path / "run", with_problem=True)
    best = outcome.result.best.id
    lines = []
    for line in (run / "events.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("id") == best:
            event["llm"] = {"model": "tiny-model", "tokens": {"prompt": 812, "completion": 64},
                            "accepted": True, "reason": "render the reply from a template"}
        lines.append(json.dumps(event))
    (run / "events.jsonl").write_text("\n".join(lines) + "\n")
    summary = json.loads((run / "summary.json").read_text())
    summary["llm"] = {"calls": 7, "tokens": {"total": 5123}}
    (run / "summary.json").write_text(json.dumps(summary))
    page = write_report(run).read_text()
    lineage = page.split('<section id="lineage">')[1].split("</section>")[0]
    assert "render the reply from a template" in lineage and "tiny-model" in lineage
    assert "<dt>llm.calls</dt><dd>7</dd>" in page and "<dt>llm.tokens.total</dt><dd>5123</dd>" in page


def test_commands_register_on_a_group(outcome: RunOutcome, tmp_path: Path, refund_path: Path) -> None:
    group = click.Group()
    for command in COMMANDS:
        group.add_command(command)
    assert set(group.commands) == {"report", "plot", "show"}
    runner = CliRunner()
    run = copy_run(outcome, tmp_path / "run", with_problem=False)
    done = runner.invoke(report, [str(run), "--problem", str(refund_path)])
    assert done.exit_code == 0, done.output
    assert Path(done.output.strip()) == run / "report.html"

    shown = runner.invoke(show, [str(run / "best.json"), "--problem", str(refund_path), "--width", "90"])
    assert shown.exit_code == 0, shown.output
    assert "critical path: " + " -> ".join(outcome.summary["best"]["critical_path"]) in shown.output
    assert max(len(line) for line in shown.output.splitlines()) <= 90


def test_bad_input_is_one_line_and_status_2(tmp_path: Path) -> None:
    runner = CliRunner()
    done = runner.invoke(report, [str(tmp_path / "missing")])
    assert done.exit_code == 2
    assert done.output.startswith("error: ") and "no such directory" in done.output
    done = runner.invoke(show, [str(tmp_path)])
    assert done.exit_code == 2 and "--problem is required" in done.output
