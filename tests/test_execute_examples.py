"""The runtime's examples, run for real: the refund that must not be issued twice, the five
workflow patterns, and the execution report drawn from their run folders."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from evolve.cli.main import cli
from evolve.model.plan_file import load_plan
from evolve.model.problem_file import read_problem
from evolve.model.validate import plan_status, validate

pytest.importorskip("evolve.execute")

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
PATTERNS = EXAMPLES / "patterns"
NAMES = ("chaining", "routing", "voting", "orchestrator", "evaluator")


def execute(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, ["execute", *map(str, args)])


def outcome_of(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "outcome.json").read_text())
    return data


def outputs_of(folder: Path) -> dict[str, Any]:
    """Each done task's outputs, read from the journal (opened read-only)."""
    db = sqlite3.connect(f"file:{folder / 'journal.sqlite'}?mode=ro", uri=True)
    try:
        rows = db.execute("SELECT task_id, outputs FROM tasks WHERE status = 'done'").fetchall()
    finally:
        db.close()
    return {tid: json.loads(out) for tid, out in rows}


def statuses(outcome: dict[str, Any]) -> dict[str, str]:
    return {tid: task["status"] for tid, task in outcome["tasks"].items()}


@pytest.fixture(scope="module")
def refund_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("refund") / "run"
    result = execute(EXAMPLES / "refund_plan.yaml", "--problem", EXAMPLES / "refund.yaml",
                     "--tools", f"{EXAMPLES / 'refund_tools.py'}:TOOLS", "--out", folder)
    assert result.exit_code == 0, result.output
    return folder


def test_the_refund_already_issued_is_not_issued_again(refund_run: Path) -> None:
    outcome = outcome_of(refund_run)
    assert (outcome["status"], outcome["reason"], outcome["replans"]) == ("completed", "goal_met", 1)
    assert outcome["calls_by_risk"]["write"] == 0  # no refund, no second refund
    [revision] = outcome["revisions"]
    assert {"t6", "t7"} <= set(revision["removed"])  # the approval and the refund
    assert "assumes len($t2.refunds) == 0" in revision["reason"]
    tasks = outcome["tasks"]
    assert tasks["t6"]["status"] == tasks["t7"]["status"] == "invalidated"
    added = {tasks[tid]["tool"] for tid in revision["added"]}
    assert "payments.trace_settlement" in added
    reply_by = outcome["criteria"]["reply"]
    reply = outputs_of(refund_run)[reply_by]["reply"]
    assert "already refunded (rf_9001)" in reply


def test_without_a_prior_refund_the_plan_runs_as_written(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    result = execute(EXAMPLES / "refund_plan.yaml", "--problem", EXAMPLES / "refund.yaml",
                     "--tools", f"{EXAMPLES / 'refund_tools.py'}:NO_PRIOR_REFUND", "--out", folder)
    assert result.exit_code == 0, result.output
    outcome = outcome_of(folder)
    assert outcome["replans"] == 0 and outcome["calls_by_risk"]["write"] == 1
    assert all(status == "done" for status in statuses(outcome).values())
    assert "we have refunded the duplicate charge of INR 1499" in outputs_of(folder)["t9"]["reply"]


def test_refund_tools_write_once_per_key(tmp_path: Path) -> None:
    """The example's ledger is what makes a repeated write harmless, in memory or on disk."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("refund_tools_under_test", EXAMPLES / "refund_tools.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp_path / "ledger.json"
    tools = module.make_tools(prior_refund=False, ledger_path=path)
    refund = tools["payments.issue_refund"]

    class Call:
        task_id, attempt, idempotency_key, deadline = "t7", 1, "refund:1", 0.0

    decision = {"action": "refund", "refund_inr": 1499, "capture_id": "cap_2"}
    first = refund({"decision": decision}, Call())
    again = refund({"decision": decision}, Call())
    assert first == again and len(refund.ledger.calls) == 2 and len(refund.ledger.made(refund.name)) == 1
    reopened = module.make_tools(ledger_path=path)["payments.issue_refund"]
    assert reopened.reconcile("refund:1") == first and reopened.reconcile("refund:2") is None
    with pytest.raises(module.ToolFailure, match="not a refund"):
        refund({"decision": {"action": "none"}}, type("C", (), {"idempotency_key": "k2"})())


@pytest.mark.parametrize("name", NAMES)
def test_every_pattern_plan_is_valid_and_ready(name: str) -> None:
    problem = read_problem(PATTERNS / f"{name}.yaml")
    errors = validate(problem, load_plan(PATTERNS / f"{name}_plan.yaml"))
    assert errors == [] and plan_status(errors) == "ready"


@pytest.fixture(scope="module")
def pattern_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folders = {}
    for name in NAMES:
        folder = tmp_path_factory.mktemp(name) / "run"
        result = execute(PATTERNS / f"{name}_plan.yaml", "--problem", PATTERNS / f"{name}.yaml",
                         "--tools", f"{PATTERNS / 'scripted.py'}:TOOLS", "--out", folder)
        assert result.exit_code == 0, (name, result.output)
        assert outcome_of(folder)["reason"] == "goal_met"
        folders[name] = folder
    return folders


def test_prompt_chaining_runs_each_step_once_in_order(pattern_runs: dict[str, Path]) -> None:
    folder = pattern_runs["chaining"]
    starts = [e["task"] for e in events_of(folder) if e["event"] == "step.start"]
    assert starts == ["outline", "gate", "draft", "polish"]
    assert outputs_of(folder)["polish"]["article"].startswith("What evolve 0.2")


def test_routing_runs_exactly_the_handler_its_label_names(pattern_runs: dict[str, Path],
                                                          tmp_path: Path) -> None:
    assert statuses(outcome_of(pattern_runs["routing"])) == {
        "classify": "done", "billing": "done", "technical": "skipped", "human": "skipped"}
    for ticket, handler in (("the app crashes on start", "technical"), ("where is my parcel", "human")):
        folder = tmp_path / handler
        result = execute(PATTERNS / "routing_plan.yaml", "--problem", PATTERNS / "routing.yaml",
                         "--tools", f"{PATTERNS / 'scripted.py'}:TOOLS", "--fact", f"ticket={ticket}",
                         "--out", folder)
        assert result.exit_code == 0, result.output
        done = {t for t, s in statuses(outcome_of(folder)).items() if s == "done"}
        assert done == {"classify", handler}
    assert outputs_of(tmp_path / "human")["human"]["reply"]["text"] == "escalate to human"


def test_parallel_vote_counts_five_samples(pattern_runs: dict[str, Path]) -> None:
    folder = pattern_runs["voting"]
    assert outputs_of(folder)["vote"]["verdict"] == {"answer": "no", "votes": 3, "of": 5}
    # the five samples run side by side: all have started before the first one ends
    events = events_of(folder)
    first_end = next(i for i, e in enumerate(events) if e["event"] == "step.end")
    started = {e["task"] for e in events[:first_end] if e["event"] == "step.start"}
    assert started == {f"v{k}" for k in range(1, 6)}


def test_orchestrator_workers_run_only_the_picked_specialists(pattern_runs: dict[str, Path]) -> None:
    folder = pattern_runs["orchestrator"]
    assert statuses(outcome_of(folder))["docs"] == "skipped"
    assert outputs_of(folder)["synth"]["report"] == {"from": ["notes", "patch"], "skipped": ["docs"]}


def test_evaluator_optimizer_stops_at_the_first_pass(pattern_runs: dict[str, Path]) -> None:
    folder = pattern_runs["evaluator"]
    state = statuses(outcome_of(folder))
    assert [state[f"p{k}"] for k in range(1, 6)] == ["done"] * 3 + ["skipped"] * 2
    final = outputs_of(folder)["final"]["final"]
    assert final["passed"] is True and final["rounds"] == 3 and final["draft"]["revision"] == 3


def events_of(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]


# -- the execution report -----------------------------------------------------------------------

def bars(html: str) -> int:
    return len(re.findall(r'<rect class="gantt-bar ', html))


def test_the_report_of_a_replanned_run(refund_run: Path) -> None:
    html = (refund_run / "report.html").read_text()  # written by evolve execute
    assert "Planned against actual" in html and "Revisions" in html
    assert "t7 assumes len($t2.refunds) == 0, which is false" in html
    assert 'data-task="t7" data-status="invalidated"' in html
    segments = [e for e in events_of(refund_run) if e["event"] in ("step.end", "step.error")
                and e.get("kind") != "assumption"]
    assert bars(html) == len(segments)
    assert 'class="revision-line"' in html and "revision 1: the plan's schedule" in html
    assert "http://" not in html.replace("http://www.w3.org", "") and "Content-Security-Policy" in html


def test_the_report_of_a_simulated_run_with_retries_and_a_replan(tmp_path: Path) -> None:
    folder = tmp_path / "run"
    result = execute(EXAMPLES / "refund_plan.yaml", "--problem", EXAMPLES / "refund.yaml", "--simulate",
                     "--fail", "payments.issue_refund=1", "--seed", "1", "--out", folder)
    assert result.exit_code == 0, result.output
    from evolve.report import load_execution, write_execution_report

    path = write_execution_report(folder, out=tmp_path / "again.html")
    html = path.read_text()
    assert html == (folder / "report.html").read_text()  # a report is a function of the folder
    execution = load_execution(folder)
    assert execution.virtual and bars(html) == execution.segment_count()
    t7 = next(row for row in execution.rows if row.id == "t7")
    assert t7.status == "failed" and t7.planned == (710.0, 1110.0)
    assert 'class="gantt-bar exec-failed' in html and "simulated failure of payments.issue_refund" in html


def test_the_report_refuses_what_is_not_a_run_folder(tmp_path: Path) -> None:
    from evolve.report import ExecutionReportError, write_execution_report

    with pytest.raises(ExecutionReportError, match="not an evolve execute run folder"):
        write_execution_report(tmp_path)
    (tmp_path / "events.jsonl").write_text('{"event": "plan.commit"}\nnot json\n')
    with pytest.raises(ExecutionReportError, match=r"events.jsonl: line 2: invalid JSON"):
        write_execution_report(tmp_path)
    (tmp_path / "events.jsonl").write_text('{"event": "plan.commit", "revision": 0, "tasks": 1, '
                                           '"planned": {"t1": {"start": 0, "finish": 5}}}\n')
    html = write_execution_report(tmp_path).read_text()
    assert "the run has not ended" in html and 'data-task="t1"' in html
