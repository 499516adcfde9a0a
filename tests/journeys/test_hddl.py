"""An HTN user's path: ``evolve run DOMAIN.hddl PROBLEM.hddl`` on a competition problem, then
``validate``, ``report``, ``show`` and a simulated ``execute`` on what it wrote, and a run
killed after its first plan resumed. What ``run`` wrote (``problem.json``, ``best.json``) is what
the next command reads."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from evolve.model.plan_file import load_plan
from evolve.problems.htn.hddl import ground_name
from evolve.problems.htn.hddl_plans import action_graph
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import verify

from .conftest import Journey

TRACK = Path(__file__).resolve().parents[3] / "shared" / "data" / "ipc2020-htn" / "total-order"
WOOD = TRACK / "Woodworking"
PROBLEM = WOOD / "01--p01-complete.hddl"

pytestmark = pytest.mark.skipif(not PROBLEM.exists(), reason="the IPC 2020 files are not here")


def faults(domain: Path, problem: Path, plan: Path) -> list[str]:
    """What the verifier written apart from the planner finds wrong with ``plan``."""
    return list(verify(*read_files(domain, problem), plan.read_text()).faults)


def test_run_then_validate_report_and_show(journey: Journey) -> None:
    """Every ground action name HDDL grounding makes (``do_plane(p2,smooth,...)``) is a tool name
    the catalog reader accepts: ``validate`` takes the run's own ``problem.json`` and plan, and the
    domain ``evolve hddl`` writes; both refuse the plan with its last action cut."""
    journey.evolve("run", WOOD / "domain.hddl", PROBLEM, "--max-seconds", "3", "--out", "wood")
    run = journey.home / "wood"
    one_plan(WOOD / "domain.hddl", PROBLEM, run)
    valid = journey.evolve("validate", run / "best.json", "--problem", run / "problem.json")
    assert "valid" in valid.stdout and "NOT" not in valid.stdout, valid.stdout
    journey.evolve("hddl", WOOD / "domain.hddl", PROBLEM, "--out", "wood.json")
    journey.evolve("validate", run / "best.json", "--problem", "wood.json")
    cut = cut_last_step(json.loads((run / "best.json").read_text()))
    (journey.home / "cut.json").write_text(json.dumps(cut))
    for problem in (run / "problem.json", journey.home / "wood.json"):
        refused = journey.evolve("validate", "cut.json", "--problem", problem, status=1)
        assert "blocked" in refused.stdout, refused.stdout
    journey.evolve("report", run)
    assert (run / "report.html").stat().st_size > 0
    journey.evolve("execute", run / "best.json", "--problem", run / "problem.json", "--simulate",
                   "--out", "ran")
    outcome = journey.json("ran/outcome.json")
    assert outcome["reason"] == "goal_met", outcome
    assert set(outcome["tasks"]) == {t["id"] for t in json.loads((run / "best.json").read_text())["tasks"]}
    journey.evolve("report", "ran")
    shown = journey.shell("evolve show wood | head -1")
    assert shown.returncode == 0 and "Traceback" not in shown.stderr, shown.stderr


def test_long_ground_names_are_read_back(journey: Journey) -> None:
    """Entertainment's ground actions have names of over 200 characters: what ``run`` wrote,
    ``validate`` reads (it refused them once, so ``best.json`` was unreadable to evolve itself)."""
    folder = TRACK / "Entertainment"
    if not (folder / "pfile02.hddl").exists():
        pytest.skip("Entertainment is not here")
    journey.evolve("run", folder / "pfile02-domain.hddl", folder / "pfile02.hddl", "--max-seconds", "2",
                   "--out", "ent")
    run = journey.home / "ent"
    assert max(len(t["tool"]) for t in json.loads((run / "best.json").read_text())["tasks"]) > 200
    journey.evolve("validate", run / "best.json", "--problem", run / "problem.json")
    one_plan(folder / "pfile02-domain.hddl", folder / "pfile02.hddl", run)


def cut_last_step(plan: dict[str, Any]) -> dict[str, Any]:
    """``plan`` without its last action (and what named it): a plan that no longer reaches the goal."""
    steps = [t for t in plan["tasks"] if not t["tool"].startswith("htn:") and t["tool"] != "__goal__"]
    last = steps[-1]["id"]
    tasks = [{**t, "deps": [d for d in t["deps"] if d != last],
              "inputs": {k: v for k, v in t["inputs"].items() if not v.startswith(f"${last}.")}}
             for t in plan["tasks"] if t["id"] != last]
    return {**plan, "tasks": tasks}


def one_plan(domain: Path, problem: Path, run: Path) -> None:
    """``best.ipc`` and ``best.json`` hold the same plan: the same actions in the same order."""
    ipc = verify(*read_files(domain, problem), (run / "best.ipc").read_text())
    assert ipc.faults == []
    names = [ground_name(a.name, a.args) for a in ipc.actions]
    assert action_graph(load_plan(run / "best.json"))[0] == names


def killed_once(journey: Journey, command: tuple[Any, ...], out: str, sign: str, after: float) -> Path:
    """``evolve`` started with ``command`` into ``out``, killed (SIGKILL) ``after`` seconds once
    its folder holds ``sign``; the folder."""
    child = journey.start(*command, "--out", out)
    run = journey.home / out
    deadline = time.monotonic() + 30
    while not (run / sign).exists() and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(after)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=10)
    return run


def test_killed_before_grounding_ended_resumes(journey: Journey) -> None:
    """SIGKILL as soon as ``best.ipc`` appears (the lifted search's plan, written before the
    problem is grounded and the engine loaded): that plan is valid, the folder resumes (from the
    beginning: nothing was checkpointed), and the finished run's two plan files agree."""
    domain, problem = TRACK / "Depots" / "domain.hddl", TRACK / "Depots" / "p06.hddl"
    if not problem.exists():
        pytest.skip("Depots is not here")
    command = ("run", domain, problem, "--max-seconds", "3", "--seed", "5")
    run = killed_once(journey, command, "dep", "best.ipc", after=0.0)
    assert faults(domain, problem, run / "best.ipc") == []
    assert not (run / "checkpoint.json").exists()
    resumed = journey.evolve(*command, "--resume", run)
    assert "starting it from the beginning" in resumed.stderr
    one_plan(domain, problem, run)
    journey.evolve("validate", run / "best.json", "--problem", run / "problem.json")


def test_killed_after_the_first_plan_resumes(journey: Journey) -> None:
    """SIGKILL once ``best.ipc`` is on disk: the plan left there is valid, and ``--resume``
    finishes the run with a plan that ``validate`` accepts."""
    domain, problem = TRACK / "Barman-BDI" / "domain.hddl", TRACK / "Barman-BDI" / "pfile01.hddl"
    if not problem.exists():
        pytest.skip("Barman-BDI is not here")
    command = ("run", domain, problem, "--max-seconds", "8", "--seed", "3")
    run = killed_once(journey, command, "bar", "checkpoint.json", after=0.5)
    assert (run / "best.ipc").exists(), "no plan on disk after the first checkpoint"
    assert faults(domain, problem, run / "best.ipc") == []
    journey.evolve(*command, "--resume", run)
    assert faults(domain, problem, run / "best.ipc") == []
    one_plan(domain, problem, run)
    journey.evolve("validate", run / "best.json", "--problem", run / "problem.json")
