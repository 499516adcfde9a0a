"""People in the loop: a run that waits for a person (exit 4), ``evolve pending``, ``approve``,
``reject``, ``answer``, and ``--resume`` going on from the decision.

The refund example runs with the manager's approval owned by a person (``approvals.manager`` is
``by: human`` in examples/refund.yaml) and the tools of the plain case (no refund yet). Its
writes go through the example's ledger kept in a file (``EVOLVE_REFUND_LEDGER``), the provider's
record of refunds, which is what the tests count. A crash between the approval and the write is
a real SIGKILL of another process.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from evolve.cli.main import cli
from evolve.execute import ExecuteOptions, Executor, ToolFailure, resume_run, start_run
from evolve.execute.replan import Proposal, Situation
from evolve.execute.state import RunState
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem_file import problem_from_dict

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TOOLS = f"{EXAMPLES / 'refund_tools.py'}:NO_PRIOR_REFUND"


def evolve(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def outcome_of(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "outcome.json").read_text())
    return data


def refunds(ledger: Path) -> list[dict[str, Any]]:
    """The refunds the provider made (once per idempotency key)."""
    if not ledger.exists():
        return []
    entries = json.loads(ledger.read_text())
    return [e["outputs"] for e in entries.values() if e["tool"] == "payments.issue_refund"]


def dump(folder: Path) -> list[str]:
    """Every row of the journal, to show that nothing changed."""
    db = sqlite3.connect(folder / "journal.sqlite")
    try:
        return list(db.iterdump())
    finally:
        db.close()


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "ledger.json"
    monkeypatch.setenv("EVOLVE_REFUND_LEDGER", str(path))
    return path


@pytest.fixture
def waiting_run(tmp_path: Path, ledger: Path) -> Path:
    """The refund run, stopped before the refund: it waits for the manager."""
    folder = tmp_path / "run"
    result = evolve(
        "execute", EXAMPLES / "refund_human_plan.yaml", "--problem", EXAMPLES / "refund.yaml",
        "--tools", TOOLS, "--out", folder, "--no-report",
    )
    assert result.exit_code == 4, result.output
    return folder


def test_the_run_stops_waiting_before_the_refund(waiting_run: Path, ledger: Path) -> None:
    outcome = outcome_of(waiting_run)
    assert (outcome["status"], outcome["reason"]) == ("waiting", "waiting")
    assert outcome["calls_by_risk"]["write"] == 0 and refunds(ledger) == []
    assert outcome["tasks"]["t6"]["status"] == "waiting"
    assert outcome["tasks"]["t7"]["status"] == "pending"
    [item] = outcome["pending"]
    assert (item["task"], item["tool"], item["kind"]) == ("t6", "approvals.manager", "approval")
    [write] = item["action"]["writes"]
    assert (write["task"], write["tool"]) == ("t7", "payments.issue_refund")
    assert write["inputs"]["decision"]["refund_inr"] == 1499


def test_pending_names_the_refund_with_its_amount(waiting_run: Path) -> None:
    shown = evolve("pending", waiting_run)
    assert shown.exit_code == 0, shown.output
    assert "t6" in shown.output and "approvals.manager" in shown.output
    [line] = [row for row in shown.output.splitlines() if "approves" in row]
    assert "t7 payments.issue_refund" in line and '"refund_inr": 1499' in line
    as_json = json.loads(evolve("pending", waiting_run, "--json").output)
    assert as_json[0]["action_hash"][:12] in shown.output
    assert as_json[0]["since"].endswith("+00:00")


def test_approve_then_resume_issues_exactly_one_refund(waiting_run: Path, ledger: Path) -> None:
    approved = evolve("approve", waiting_run, "t6", "--as", "asha", "--note", "duplicate capture")
    assert approved.exit_code == 0, approved.output
    assert evolve("pending", waiting_run).output.strip() == "nothing pending"
    resumed = evolve("execute", "--resume", waiting_run, "--no-report", "--json")
    assert resumed.exit_code == 0, resumed.output
    outcome = outcome_of(waiting_run)
    assert (outcome["status"], outcome["reason"]) == ("completed", "goal_met")
    [refund] = refunds(ledger)
    assert refund["receipt"]["amount_inr"] == 1499
    assert outcome["calls_by_risk"]["write"] == 1
    [made] = outcome["decisions"]
    assert (made["task"], made["verdict"], made["by"]) == ("t6", "approved", "asha")
    assert made["note"] == "duplicate capture"
    assert made["writes"][0]["tool"] == "payments.issue_refund"
    assert outcome["waiting_s"] >= 0 and outcome["rejected_actions"] == []
    events = [json.loads(line) for line in (waiting_run / "events.jsonl").read_text().splitlines()]
    names = [e["event"] for e in events]
    assert names.index("awaiting_approval") < names.index("person.approved") < names.index("session.resume")
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))


def test_reject_then_resume_issues_no_refund_and_replies(waiting_run: Path, ledger: Path) -> None:
    rejected = evolve("reject", waiting_run, "t6", "--as", "ravi", "--note", "the customer asked for credit")
    assert rejected.exit_code == 0, rejected.output
    resumed = evolve("execute", "--resume", waiting_run, "--no-report", "--json")
    assert resumed.exit_code == 0, resumed.output
    outcome = outcome_of(waiting_run)
    assert (outcome["status"], outcome["reason"]) == ("completed", "goal_met")
    assert refunds(ledger) == [] and outcome["calls_by_risk"]["write"] == 0
    assert outcome["tasks"]["t6"]["status"] == "failed"
    assert "rejected by ravi: the customer asked for credit" in outcome["tasks"]["t6"]["error"]
    [rejection] = outcome["rejected_actions"]
    assert rejection["by"] == "ravi" and rejection["writes"][0]["tool"] == "payments.issue_refund"
    # the replan tried the same refund through the automatic approval: refused, never run
    refused = [t for t in outcome["tasks"].values() if t["tool"] == "approvals.auto"]
    assert refused and all(t["status"] == "invalidated" for t in refused)
    assert any("refused" in d["reason"] for d in outcome["revisions"])
    reply_by = outcome["criteria"]["reply"]
    assert outcome["tasks"][reply_by]["status"] == "done"
    from evolve.report import write_execution_report

    page = write_execution_report(waiting_run).read_text()
    section = page[page.index('<section id="people">'):]
    section = section[: section.index("</section>")]
    assert "rejected" in section and "ravi" in section and "payments.issue_refund" in section
    assert "rejected actions (final" in section and "waited" in section


RESUMER = """
import os, signal, sys
from pathlib import Path
from evolve.execute import resume_run

point, target, out = sys.argv[1:4]
def hook(p, t):
    if p == point and t == target:
        os.kill(os.getpid(), signal.SIGKILL)

resume_run(Path(out), hook=hook).run()
"""


@pytest.mark.parametrize(("point", "reconciled"), [("dispatched", 0), ("before_commit", 1)])
def test_a_crash_between_approve_and_the_write_still_refunds_once(
    waiting_run: Path, ledger: Path, tmp_path: Path, point: str, reconciled: int
) -> None:
    assert evolve("approve", waiting_run, "t6", "--as", "asha").exit_code == 0
    (tmp_path / "resumer.py").write_text(textwrap.dedent(RESUMER))
    killed = subprocess.run(
        [sys.executable, str(tmp_path / "resumer.py"), point, "t7", str(waiting_run)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    resumed = evolve("execute", "--resume", waiting_run, "--no-report", "--json")
    assert resumed.exit_code == 0, resumed.output
    outcome = outcome_of(waiting_run)
    assert (outcome["status"], outcome["reason"]) == ("completed", "goal_met")
    assert len(refunds(ledger)) == 1
    assert outcome["reconciled"] == reconciled


# -- hostile input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("approve", "{run}", "t99"), "no task 't99'"),
        (("approve", "{run}", "t7"), "t7 is not waiting for a person"),
        (("reject", "{run}", "t1", "--note", "no"), "t1 is not waiting for a person"),
        (("approve", "{run}", "t6", "--action", "0123456789abcdef"), "is not the action pending"),
        (("approve", "{run}", "t6", "--action", "e3"), "is not the action pending"),
        (("answer", "{run}", "t6", "--output", '{"approval": 1}'), "waits for an approval"),
        (("approve", "{run}/nowhere", "t6"), "no journal.sqlite"),
    ],
)
def test_a_bad_decision_is_one_line_exit_2_and_changes_nothing(
    waiting_run: Path, args: tuple[str, ...], said: str
) -> None:
    before = dump(waiting_run)
    result = evolve(*(a.replace("{run}", str(waiting_run)) for a in args))
    assert result.exit_code == 2, result.output
    assert said in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert dump(waiting_run) == before


def test_a_run_folder_from_another_version_is_refused(waiting_run: Path) -> None:
    db = sqlite3.connect(waiting_run / "journal.sqlite")
    db.execute("PRAGMA user_version = 2")
    db.close()
    before = dump(waiting_run)
    for args in (("pending", waiting_run), ("approve", waiting_run, "t6"),
                 ("execute", "--resume", waiting_run)):
        result = evolve(*args)
        assert result.exit_code == 2, result.output
        assert "journal schema version 2" in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output
    assert dump(waiting_run) == before


def test_approving_twice_is_refused(waiting_run: Path) -> None:
    assert evolve("approve", waiting_run, "t6").exit_code == 0
    before = dump(waiting_run)
    again = evolve("reject", waiting_run, "t6", "--note", "changed my mind")
    assert again.exit_code == 2 and "approved by" in again.output
    assert dump(waiting_run) == before


# -- a task a person owns: evolve answer --------------------------------------------------------

ASK = """
name: address
initial: [order]
criteria: [label]
tools:
  ask_customer: {duration: 1, inputs: [order], outputs: [address, phone], by: human}
  print_label: {duration: 1, inputs: [address], outputs: [label]}
"""

ASK_TOOLS = """
def print_label(inputs, call):
    return {"label": "TO: " + inputs["address"]}

TOOLS = {"print_label": print_label}
"""

ASK_PLAN = {
    "tasks": [
        {"id": "q", "tool": "ask_customer", "inputs": {"order": "$order"}},
        {"id": "p", "tool": "print_label", "deps": ["q"], "inputs": {"address": "$q.address"}},
    ]
}


@pytest.fixture
def asking_run(tmp_path: Path) -> Path:
    (tmp_path / "address.yaml").write_text(ASK)
    (tmp_path / "address_tools.py").write_text(ASK_TOOLS)
    (tmp_path / "plan.json").write_text(json.dumps(ASK_PLAN))
    folder = tmp_path / "run"
    result = evolve(
        "execute", tmp_path / "plan.json", "--problem", tmp_path / "address.yaml",
        "--tools", f"{tmp_path / 'address_tools.py'}:TOOLS", "--out", folder, "--no-report",
    )
    assert result.exit_code == 4, result.output
    return folder


@pytest.mark.parametrize(
    ("output", "said"),
    [
        ("{not json", "--output: not JSON"),
        ('["a list"]', "expected a JSON object"),
        ('{"address": "12 MG Road"}', "missing phone"),
        ('{"address": "x", "phone": "1", "label": "forged"}', "not an output of ask_customer: label"),
        ("missing.json", "cannot be read"),
    ],
)
def test_a_malformed_answer_is_one_line_exit_2(asking_run: Path, output: str, said: str) -> None:
    before = dump(asking_run)
    result = evolve("answer", asking_run, "q", "--output", output)
    assert result.exit_code == 2, result.output
    assert said in result.output and len(result.output.strip().splitlines()) == 1, result.output
    assert dump(asking_run) == before
    assert evolve("approve", asking_run, "q").exit_code == 2  # an answer is not an approval


def test_an_answer_gives_the_task_its_outputs(asking_run: Path, tmp_path: Path) -> None:
    [item] = json.loads(evolve("pending", asking_run, "--json").output)
    assert (item["task"], item["kind"], item["action"]) == ("q", "answer", None)
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"address": "12 MG Road", "phone": "+91 80 1234"}))
    assert evolve("answer", asking_run, "q", "--output", answer, "--as", "desk").exit_code == 0
    resumed = evolve("execute", "--resume", asking_run, "--no-report")
    assert resumed.exit_code == 0, resumed.output
    db = sqlite3.connect(asking_run / "journal.sqlite")
    [(label,)] = db.execute("SELECT outputs FROM tasks WHERE task_id = 'p'").fetchall()
    db.close()
    assert json.loads(label) == {"label": "TO: 12 MG Road"}


def test_wait_polls_the_journal_for_the_answer(asking_run: Path) -> None:
    """``--wait``: a session that keeps waiting goes on as soon as the answer is committed by
    another process."""
    answerer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import time, sys
            from click.testing import CliRunner
            from evolve.cli.main import cli
            time.sleep(1.5)
            r = CliRunner().invoke(cli, ["answer", {str(asking_run)!r}, "q", "--output",
                                         '{{"address": "1 Park St", "phone": "2"}}'])
            sys.exit(r.exit_code)
        """)],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT,
    )
    started = time.monotonic()
    resumed = evolve("execute", "--resume", asking_run, "--wait", "60", "--no-report")
    assert answerer.wait(timeout=60) == 0
    assert resumed.exit_code == 0, resumed.output
    assert time.monotonic() - started < 55
    assert outcome_of(asking_run)["tasks"]["p"]["status"] == "done"


# -- an approval of another action never lets a write run ----------------------------------------


def pay_problem(approval_required: bool = True) -> dict[str, Any]:
    return {
        "name": "pay",
        "initial": ["x"],
        "criteria": ["receipt"],
        "policy": {"write_requires_approval": approval_required},
        "tools": {
            "quote": {"duration": 1, "inputs": ["x"], "outputs": ["amount"]},
            "requote": {"duration": 1, "inputs": ["x"], "outputs": ["amount"]},
            "approve": {"duration": 1, "inputs": ["amount"], "outputs": ["approval"], "risk": "approval",
                        "by": "human"},
            "check": {"duration": 1, "inputs": ["amount"], "outputs": ["ok"]},
            "pay": {"duration": 1, "inputs": ["amount"], "outputs": ["receipt"], "risk": "write"},
        },
    }


def pay_plan(approval_fails: str = "fail_plan") -> dict[str, Any]:
    return {
        "tasks": [
            {"id": "t1", "tool": "quote", "inputs": {"x": "$x"}},
            {"id": "t2", "tool": "approve", "deps": ["t1"], "inputs": {"amount": "$t1.amount"},
             "on_failure": approval_fails},
            {"id": "t3", "tool": "check", "deps": ["t1", "t2"], "inputs": {"amount": "$t1.amount"},
             "on_failure": "replan"},
            {"id": "t4", "tool": "pay", "deps": ["t1", "t2", "t3"], "inputs": {"amount": "$t1.amount"},
             "idempotency_key": "pay:1"},
        ]
    }


class Fixed:
    """A replanner that proposes one plan, always (its tasks may depend on the live plan's)."""

    name = "fixed"

    def __init__(self, plan: dict[str, Any]) -> None:
        self.plan = plan_from_dict(plan)

    def propose(self, situation: Situation, revision: int, seed: int, folder: Path) -> Proposal | None:
        return Proposal(plan=self.plan, source=self.name)


REQUOTED = {
    "tasks": [
        {"id": "r1", "tool": "requote", "inputs": {"x": "$x"}},
        {"id": "r2", "tool": "pay", "deps": ["r1", "t2"], "inputs": {"amount": "$r1.amount"},
         "idempotency_key": "pay:2"},
    ]
}


def pay_tools(paid: list[dict[str, Any]], requoted: int = 250) -> dict[str, Any]:
    def check(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
        raise ToolFailure("the quote expired", retryable=False)

    def pay(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
        paid.append(dict(inputs))
        return {"receipt": {"amount": inputs["amount"]}}

    return {
        "quote": lambda inputs, call: {"amount": 100},
        "requote": lambda inputs, call: {"amount": requoted},
        "check": check,
        "pay": pay,
    }


def folds(session: Executor) -> None:
    """The session's state in memory is the journal's fold (asks and decisions included)."""
    fold = RunState.restore(session.journal)
    for name in ("status", "outputs", "asked", "latest", "decided", "rejected", "excluded", "revision"):
        assert getattr(fold, name) == getattr(session.state, name), name


def test_a_replan_that_changes_the_amount_asks_again(tmp_path: Path) -> None:
    paid: list[dict[str, Any]] = []
    tools = pay_tools(paid)
    folder = tmp_path / "run"
    session = start_run(problem_from_dict(pay_problem()), plan_from_dict(pay_plan()), folder,
                        plan_source="plan", tools_spec=None, tools=tools)
    first = session.run()
    folds(session)
    assert first["status"] == "waiting"
    [asked] = first["pending"]
    old_hash = asked["action_hash"]
    assert asked["action"]["writes"][0]["inputs"] == {"amount": 100}
    assert evolve("approve", folder, "t2", "--action", old_hash[:12]).exit_code == 0

    session = resume_run(folder, tools=tools, replanner=Fixed(REQUOTED))
    second = session.run()
    folds(session)
    assert second["status"] == "waiting", second["message"]  # the check failed, the replan requoted
    assert paid == []  # never on the approval of 100
    [again] = second["pending"]
    assert again["task"] == "t2" and again["action_hash"] != old_hash
    [write] = again["action"]["writes"]
    assert write["tool"] == "pay" and write["inputs"] == {"amount": 250}

    before = dump(folder)
    stale = evolve("approve", folder, "t2", "--action", old_hash)
    assert stale.exit_code == 2 and "is not the action pending" in stale.output
    assert dump(folder) == before
    assert evolve("approve", folder, "t2", "--action", again["action_hash"]).exit_code == 0

    session = resume_run(folder, tools=tools, replanner=Fixed(REQUOTED))
    third = session.run()
    folds(session)
    assert (third["status"], third["reason"]) == ("completed", "goal_met"), third["message"]
    assert paid == [{"amount": 250}]
    assert [d["action_hash"] for d in third["decisions"]] == [old_hash, again["action_hash"]]


def test_a_replan_waits_for_the_person_then_asks_again(tmp_path: Path) -> None:
    """The check (a sibling of the approval) fails while the manager is asked: the replan waits
    for the decision, then requotes, and the approval is asked again for the new amount."""
    paid: list[dict[str, Any]] = []
    tools = pay_tools(paid)
    plan = pay_plan()
    plan["tasks"][2]["deps"] = ["t1"]  # t3 no longer waits for the approval
    folder = tmp_path / "run"
    session = start_run(problem_from_dict(pay_problem()), plan_from_dict(plan), folder,
                        plan_source="plan", tools_spec=None, tools=tools, replanner=Fixed(REQUOTED))
    first = session.run()
    folds(session)
    assert (first["status"], first["replans"]) == ("waiting", 0)
    assert first["tasks"]["t3"]["status"] == "failed" and session.state.replan is not None
    assert evolve("approve", folder, "t2").exit_code == 0
    second = resume_run(folder, tools=tools, replanner=Fixed(REQUOTED)).run()
    assert (second["status"], second["replans"]) == ("waiting", 1)
    [again] = second["pending"]
    assert again["task"] == "t2" and again["action"]["writes"][0]["inputs"] == {"amount": 250}
    assert paid == []


def test_a_rejection_under_fail_plan_ends_the_run_without_the_write(tmp_path: Path) -> None:
    paid: list[dict[str, Any]] = []
    tools = pay_tools(paid)
    folder = tmp_path / "run"
    start_run(problem_from_dict(pay_problem()), plan_from_dict(pay_plan()), folder,
              plan_source="plan", tools_spec=None, tools=tools).run()
    assert evolve("reject", folder, "t2", "--note", "too much").exit_code == 0
    outcome = resume_run(folder, tools=tools).run()
    assert (outcome["status"], outcome["reason"]) == ("failed", "task_failed")
    assert "rejected by" in outcome["message"] and paid == []


def test_a_rejected_write_is_refused_at_dispatch_even_without_an_approval(tmp_path: Path) -> None:
    """Where the policy lets a write run without an approval, the write a person rejected is
    still refused when a replan proposes it again (another task, another source of the same
    amount: the same action): named, and never called."""
    paid: list[dict[str, Any]] = []
    tools = pay_tools(paid, requoted=100)
    folder = tmp_path / "run"
    start_run(problem_from_dict(pay_problem(approval_required=False)), plan_from_dict(pay_plan("replan")),
              folder, plan_source="plan", tools_spec=None, tools=tools).run()
    assert evolve("reject", folder, "t2", "--as", "ravi", "--note", "too much").exit_code == 0
    again = {"tasks": [{"id": "r1", "tool": "requote", "inputs": {"x": "$x"}},
                       {"id": "r2", "tool": "pay", "deps": ["r1"], "inputs": {"amount": "$r1.amount"},
                        "idempotency_key": "pay:2"}]}
    outcome = resume_run(folder, tools=tools, replanner=Fixed(again)).run()
    assert paid == []
    assert outcome["status"] == "failed"
    events = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()]
    [refused] = [e for e in events if e["event"] == "step.error" and e["kind"] == "refused"]
    assert refused["tool"] == "pay" and "ravi rejected" in refused["error"]


# -- thresholds: policy.approval_required ------------------------------------------------------


def threshold_problem() -> dict[str, Any]:
    doc = pay_problem(approval_required=False)
    doc["tools"]["auto"] = {"duration": 1, "inputs": ["amount"], "outputs": ["approval"], "risk": "approval"}
    doc["policy"]["approval_required"] = {"pay": "$amount > 150"}
    return doc


def threshold_plan(approval_when: str | None) -> dict[str, Any]:
    approve: dict[str, Any] = {"id": "t2", "tool": "auto", "deps": ["t1"], "inputs": {"amount": "$t1.amount"}}
    if approval_when is not None:
        approve["when"] = approval_when
    return {
        "tasks": [
            {"id": "t1", "tool": "quote", "inputs": {"x": "$x"}},
            approve,
            {"id": "t4", "tool": "pay", "deps": ["t1", "t2"], "inputs": {"amount": "$t1.amount"},
             "idempotency_key": "pay:1"},
        ]
    }


def test_the_validator_asks_for_an_approval_where_the_threshold_can_hold() -> None:
    from evolve.model.validate import validate

    problem = problem_from_dict(threshold_problem())
    unapproved = {"tasks": [
        {"id": "t1", "tool": "quote", "inputs": {"x": "$x"}},
        {"id": "t4", "tool": "pay", "deps": ["t1"], "inputs": {"amount": "$t1.amount"},
         "idempotency_key": "k"},
    ]}
    [error] = validate(problem, plan_from_dict(unapproved))
    assert error.rule == "approval-threshold" and "$amount > 150" in str(error)
    assert validate(problem, plan_from_dict(threshold_plan(None))) == []


@pytest.mark.parametrize(("amount", "paid_expected"), [(200, False), (120, True)])
def test_a_write_over_the_threshold_without_an_approval_is_refused_at_dispatch(
    tmp_path: Path, amount: int, paid_expected: bool
) -> None:
    """The plan's approval runs only above 1000 (its author's guess); the policy says 150. With
    the actual amount of 200 the approval is skipped and the payment refused, named with the
    value; 120 is under the threshold and is paid without an approval."""
    paid: list[dict[str, Any]] = []
    tools = {**pay_tools(paid), "quote": lambda inputs, call: {"amount": amount},
             "auto": lambda inputs, call: {"approval": True}}
    plan = plan_from_dict(threshold_plan("$t1.amount > 1000"))
    outcome = start_run(problem_from_dict(threshold_problem()), plan, tmp_path / "run", plan_source="plan",
                        tools_spec=None, tools=tools).run()
    assert outcome["tasks"]["t2"]["status"] == "skipped"
    if paid_expected:
        assert paid == [{"amount": amount}] and outcome["reason"] == "goal_met"
        return
    assert paid == [] and (outcome["status"], outcome["reason"]) == ("failed", "task_failed")
    error = outcome["tasks"]["t4"]["error"]
    assert "$amount > 150 holds ($amount = 200)" in error and "no approval upstream" in error


def test_a_threshold_names_a_write_tool() -> None:
    from evolve.model.errors import EvolveError

    doc = threshold_problem()
    doc["policy"]["approval_required"] = {"quote": "$x > 1"}
    with pytest.raises(EvolveError, match=r"approval_required\.quote: not a write tool"):
        problem_from_dict(doc)
    doc["policy"]["approval_required"] = {"pay": "$amount >"}
    with pytest.raises(EvolveError, match=r"approval_required\.pay"):
        problem_from_dict(doc)


# -- run limits: limits.deadline_s and limits.max_llm_calls --------------------------------------

CHAIN3 = {
    "name": "chain3",
    "initial": ["x"],
    "criteria": ["c"],
    "tools": {
        "make_a": {"duration": 10, "inputs": ["x"], "outputs": ["a"], "llm_calls": 2},
        "make_b": {"duration": 10, "inputs": ["a"], "outputs": ["b"], "llm_calls": 2},
        "make_c": {"duration": 10, "inputs": ["b"], "outputs": ["c"]},
    },
}
CHAIN3_PLAN = {
    "tasks": [
        {"id": "t1", "tool": "make_a", "inputs": {"x": "$x"}},
        {"id": "t2", "tool": "make_b", "deps": ["t1"], "inputs": {"a": "$t1.a"}},
        {"id": "t3", "tool": "make_c", "deps": ["t2"], "inputs": {"b": "$t2.b"}},
    ]
}


def simulated(tmp_path: Path, limits: dict[str, Any]) -> dict[str, Any]:
    doc = {**CHAIN3, "limits": limits}
    plan = plan_from_dict(CHAIN3_PLAN)
    return start_run(problem_from_dict(doc), plan, tmp_path / "run", plan_source="plan", tools_spec=None,
                     simulate=True).run()


def test_the_deadline_stops_the_run_before_a_call_past_it(tmp_path: Path) -> None:
    outcome = simulated(tmp_path, {"deadline_s": 15})  # the virtual clock: t3 would start at 20
    assert (outcome["status"], outcome["reason"]) == ("failed", "deadline")
    assert "limits.deadline_s 15 reached after 20.000 s (waiting excluded)" in outcome["message"]
    assert [outcome["tasks"][t]["status"] for t in ("t1", "t2", "t3")] == ["done", "done", "pending"]


def test_the_llm_budget_stops_the_call_that_would_spend_past_it(tmp_path: Path) -> None:
    outcome = simulated(tmp_path, {"max_llm_calls": 3})
    assert (outcome["status"], outcome["reason"]) == ("failed", "llm_budget")
    assert "2 made (tools 2, replan 0), and t2 (make_b) needs 2 more" in outcome["message"]
    assert outcome["model_calls"] == {"tools": 2, "replan": 0, "decide": 0, "argfill": 0}
    assert simulated(tmp_path / "more", {"max_llm_calls": 4})["reason"] == "goal_met"


@pytest.mark.parametrize(("includes", "reason"), [(False, "goal_met"), (True, "deadline")])
def test_waiting_for_people_counts_against_the_deadline_only_if_asked(
    tmp_path: Path, includes: bool, reason: str
) -> None:
    doc = {**problem_from_doc_text(ASK), "limits": {"deadline_s": 2.0}}
    (tmp_path / "address_tools.py").write_text(ASK_TOOLS)
    folder = tmp_path / "run"
    first = start_run(problem_from_dict(doc), plan_from_dict(ASK_PLAN), folder, plan_source="plan",
                      tools_spec=f"{tmp_path / 'address_tools.py'}:TOOLS",
                      options=ExecuteOptions(deadline_includes_waiting=includes)).run()
    assert first["status"] == "waiting"
    time.sleep(2.2)  # the person takes longer than the whole deadline
    assert evolve("answer", folder, "q", "--output", '{"address": "a", "phone": "b"}').exit_code == 0
    outcome = resume_run(folder).run()
    assert outcome["reason"] == reason, outcome["message"]
    assert outcome["waiting_s"] >= 2.2


def problem_from_doc_text(text: str) -> dict[str, Any]:
    import yaml

    doc: dict[str, Any] = yaml.safe_load(text)
    return doc


# -- authorization at dispatch -----------------------------------------------------------------


def test_a_run_resumed_without_the_write_scope_refuses_the_write(
    waiting_run: Path, ledger: Path, tmp_path: Path
) -> None:
    assert evolve("approve", waiting_run, "t6", "--as", "asha").exit_code == 0
    narrower = (EXAMPLES / "refund.yaml").read_text().replace(
        "scopes: [orders:read, payments:read, policy:read, refunds:write, llm, crm:read]",
        "scopes: [orders:read, payments:read, policy:read, llm, crm:read]",
    )
    assert "refunds:write" not in narrower.split("tools:")[0]
    (tmp_path / "narrower.yaml").write_text(narrower)
    resumed = evolve("execute", "--resume", waiting_run, "--problem", tmp_path / "narrower.yaml",
                     "--no-report", "--json")
    assert resumed.exit_code in (0, 1), resumed.output
    outcome = outcome_of(waiting_run)
    assert refunds(ledger) == [] and outcome["calls_by_risk"]["write"] == 0
    error = outcome["tasks"]["t7"]["error"]
    assert "scope 'refunds:write' of payments.issue_refund is not granted to this run" in error


# -- write conflicts: writes and the rule write-order ---------------------------------------------

WRITERS = {
    "name": "writers",
    "initial": ["order_id", "customer_id"],
    "criteria": ["r1", "r2"],
    "tools": {
        "refund": {"duration": 1, "inputs": ["order_id"], "outputs": ["r1"], "risk": "write",
                   "writes": "order:$order_id"},
        "cancel": {"duration": 1, "inputs": ["order_id"], "outputs": ["r2"], "risk": "write",
                   "writes": "order:$order_id"},
        "notify": {"duration": 1, "inputs": ["customer_id"], "outputs": ["r2"], "risk": "write",
                   "writes": "customer:$customer_id"},
    },
}


def writers_plan(second: str, deps: list[str]) -> dict[str, Any]:
    inputs = {"customer_id": "$customer_id"} if second == "notify" else {"order_id": "$order_id"}
    return {"tasks": [
        {"id": "w1", "tool": "refund", "inputs": {"order_id": "$order_id"}, "idempotency_key": "a"},
        {"id": "w2", "tool": second, "deps": deps, "inputs": inputs, "idempotency_key": "b"},
    ]}


def test_two_writes_of_the_same_object_must_be_ordered() -> None:
    from evolve.model.validate import validate

    problem = problem_from_dict(WRITERS)
    [error] = validate(problem, plan_from_dict(writers_plan("cancel", [])))
    assert error.rule == "write-order" and error.task == "w2"
    assert "order:$order_id" in str(error) and "w1" in str(error)
    assert validate(problem, plan_from_dict(writers_plan("cancel", ["w1"]))) == []  # an edge orders them
    assert validate(problem, plan_from_dict(writers_plan("notify", []))) == []  # another object
    assert problem_from_dict(WRITERS).tools["refund"].writes == "order:$order_id"
