"""The on-call incident agent, from the problem file to the report, as a user drives it.

Each test is one user's path through the command line with real subprocesses: ``run`` searches
the catalog, ``validate`` accepts what it called feasible, ``execute`` runs the plan with Python
tools that fail (once, retryably; for good), stops for the person on call, and goes on after
``approve``, ``reject`` or ``resolve``; SIGKILL inside a write and ``--resume``; ``report``,
``show`` and ``pending | head -1`` on what the run left. Each checks what a user would: exit
statuses, that no write reached the world twice (the tools' own ledger), and that every command
took what the one before it wrote.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import Journey, make_journey

FACTS = ("--fact", "alert_id=A-311", "--fact", "service=checkout")


def search(journey: Journey, out: str = "search") -> Path:
    """``evolve run`` then ``evolve validate`` of its best plan: both must say yes."""
    ran = journey.evolve("run", "incident.yaml", "--generations", "2", "--seed", "1", "--out", out)
    assert "feasible" in ran.stdout and "NOT feasible" not in ran.stdout, ran.stdout
    best = journey.home / out / "best.json"
    journey.evolve("validate", best, "--problem", "incident.yaml")
    return best


@pytest.fixture(scope="module")
def searched(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The search's best plan, made and validated once for the journeys that start from it
    (the first journey makes its own)."""
    journey = make_journey(tmp_path_factory.mktemp("searched"))
    return search(journey)


def searched_plan(journey: Journey, best: Path) -> Path:
    """The searched plan in this user's folder, as the search left it."""
    mine = journey.home / "search" / "best.json"
    mine.parent.mkdir()
    shutil.copy(best, mine)
    return mine


def execute(journey: Journey, plan: Path, out: str, *more: str, status: int = 4) -> dict[str, Any]:
    journey.evolve("execute", plan, "--problem", "incident.yaml", "--tools", journey.tools,
                   "--out", out, *FACTS, *more, status=status)
    outcome: dict[str, Any] = journey.json(f"{out}/outcome.json")
    return outcome


def pending(journey: Journey, run: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(journey.evolve("pending", run, "--json").stdout)
    return items


def approve_oncall(journey: Journey, run: str) -> str:
    """The person on call reads ``evolve pending`` and approves the restart it names."""
    [item] = pending(journey, run)
    assert item["tool"] == "approvals.oncall", item
    assert [w["tool"] for w in item["action"]["writes"]] == ["service.restart"], item
    journey.evolve("approve", run, item["task"], "--as", "asha", "--note", "OOM, restart once")
    return str(item["task"])


def resume(journey: Journey, run: str, *more: str, status: int = 0) -> dict[str, Any]:
    journey.evolve("execute", "--resume", run, "--tools", journey.tools, *more, status=status)
    outcome: dict[str, Any] = journey.json(f"{run}/outcome.json")
    return outcome


def kill_inside(journey: Journey, run: str, switch: str, *command: str) -> None:
    """Resume ``run`` (or run ``command``) with ``switch`` on, SIGKILL it inside the write,
    switch it off again."""
    journey.switch(switch)
    process = journey.start(*(command or ("execute", "--resume", run, "--tools", journey.tools)))
    entered = journey.home / f"{switch}.entered"
    deadline = time.monotonic() + 120
    while not entered.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the write was never entered"
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    (journey.home / switch).unlink()


def test_search_validate_execute_approve_report(journey: Journey) -> None:
    best = search(journey)
    plan = json.loads(best.read_text())
    tools = {task["tool"] for task in plan["tasks"]}
    assert "approvals.oncall" in tools  # the policy's approval, put in by the search itself
    journey.switch("logs-503")  # the log API fails once: the catalog's retries: 2 apply
    waiting = execute(journey, best, "incident-1", "--request-id", "alert-A-311")
    assert waiting["status"] == "waiting"
    head = journey.shell("evolve pending incident-1 | head -1; echo \"status ${PIPESTATUS[0]}\"")
    assert "Traceback" not in head.stderr and head.stdout.splitlines()[-1] == "status 0", head
    approve_oncall(journey, "incident-1")
    done = resume(journey, "incident-1")
    assert (done["status"], done["reason"]) == ("completed", "goal_met")
    assert not (journey.home / "logs-503").exists()  # the failing call was made, then retried
    [restart] = journey.calls("service.restart")
    [post] = journey.calls("slack.post_message")
    assert "alert-A-311" in restart["key"] and "alert-A-311" in post["key"]
    journey.evolve("report", "incident-1")
    assert (journey.home / "incident-1" / "report.html").stat().st_size > 0
    shown = journey.evolve("show", "incident-1")
    assert "service.restart" in shown.stdout
    journey.evolve("report", "search")
    journey.evolve("show", "search")


def test_two_alerts_never_share_a_key_and_a_resume_keeps_it(journey: Journey, searched: Path) -> None:
    best = searched_plan(journey, searched)
    for alert in ("alert-1", "alert-2"):
        execute(journey, best, alert, "--request-id", alert)
        approve_oncall(journey, alert)
    kill_inside(journey, "alert-1", "hang-in-restart")  # killed after the restart was made
    for alert in ("alert-1", "alert-2"):
        assert resume(journey, alert)["reason"] == "goal_met"
    keys = [call["key"] for call in journey.calls("service.restart")]
    assert len(set(keys)) == 2, keys  # alert-1's key once (reconciled after the kill), alert-2's
    assert len(journey.provider()) == 2
    assert all(key.count("alert-1") + key.count("alert-2") == 1 for key in keys), keys
    assert len(journey.calls("slack.post_message")) == 2


def stuck_task(outcome: dict[str, Any]) -> str:
    [task] = [tid for tid, row in outcome["tasks"].items() if row["tool"] == "slack.post_message"]
    return str(task)


def test_a_write_killed_midway_is_resolved_by_a_person(journey: Journey, searched: Path) -> None:
    best = searched_plan(journey, searched)
    kill_inside(journey, "incident-1", "hang-in-post",  # the post may or may not have gone out
                "execute", best, "--problem", "incident.yaml", "--tools", journey.tools,
                "--out", "incident-1", *FACTS)
    stuck = resume(journey, "incident-1", status=1)  # it ends saying who must say what happened
    assert stuck["tasks"][stuck_task(stuck)]["status"] == "unknown", stuck
    asked = {item["tool"]: item for item in pending(journey, "incident-1")}
    assert "slack.post_message" in asked, asked
    (journey.home / "post.json").write_text(json.dumps({"post_receipt": {"ts": "1765000000.1"}}))
    answer = journey.evolve("answer", "incident-1", asked["slack.post_message"]["task"], "--output",
                            "post.json", status=None)  # not a question: a write no one can tell about
    assert answer.returncode != 0 and "resolve" in answer.stdout + answer.stderr, answer
    journey.evolve("resolve", "incident-1", asked["slack.post_message"]["task"], "--done", "--output",
                   "post.json", "--as", "asha", "--note", "the post is in #incidents")
    if resume(journey, "incident-1", status=None)["status"] == "waiting":
        approve_oncall(journey, "incident-1")
    assert pending(journey, "incident-1") == []
    done = resume(journey, "incident-1")
    assert done["reason"] == "goal_met"
    assert len(journey.calls("slack.post_message")) == 1  # never sent again
    assert len(journey.calls("service.restart")) == 1


def test_a_tool_down_for_good_is_planned_around(journey: Journey, searched: Path) -> None:
    best = searched_plan(journey, searched)
    journey.switch("metrics-down")  # metrics.query: on_failure: replan in the catalog
    waiting = execute(journey, best, "incident-1")
    assert waiting["status"] == "waiting"
    assert any(r["reason"] != "initial" for r in waiting["revisions"]), waiting["revisions"]
    approve_oncall(journey, "incident-1")
    done = resume(journey, "incident-1")
    assert done["reason"] == "goal_met"
    assert len(journey.calls("service.restart")) == 1


def test_a_rejected_restart_never_runs(journey: Journey, searched: Path) -> None:
    best = searched_plan(journey, searched)
    execute(journey, best, "incident-1")
    [item] = pending(journey, "incident-1")
    journey.evolve("reject", "incident-1", item["task"], "--as", "asha",
                   "--note", "a deploy is rolling out, do not restart")
    ended = resume(journey, "incident-1", status=1)
    assert ended["status"] == "failed" and ended["reason"] != "task_failed", ended
    assert journey.calls("service.restart") == []


def test_a_run_out_of_steps_goes_on_with_more(journey: Journey, searched: Path) -> None:
    best = searched_plan(journey, searched)
    stopped = execute(journey, best, "incident-1", "--max-steps", "2", status=1)
    assert stopped["reason"] == "step_budget"
    assert (stopped["steps"], stopped["max_steps"]) == (2, 2), stopped
    more = journey.evolve("execute", "--resume", "incident-1", "--tools", journey.tools,
                          "--max-steps", "40", status=4)
    assert "40" in more.stdout + more.stderr  # it says what it changed
    approve_oncall(journey, "incident-1")
    assert resume(journey, "incident-1")["reason"] == "goal_met"


def test_pipes_closed_early_lose_nothing(journey: Journey) -> None:
    ran = journey.shell("evolve run incident.yaml --generations 2 --out piped 2>&1 | head -2;"
                        " echo \"status ${PIPESTATUS[0]}\"")
    assert ran.stdout.splitlines()[-1] == "status 0", ran
    assert (journey.home / "piped" / "best.json").exists()
    checked = journey.shell("evolve validate piped/best.json --problem incident.yaml | head -1;"
                            " echo \"status ${PIPESTATUS[0]}\"")
    assert checked.stdout.splitlines()[-1] == "status 0", checked
    assert "Traceback" not in checked.stderr and "internal error" not in checked.stderr
