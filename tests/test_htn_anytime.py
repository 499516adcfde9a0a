"""An HTN run is anytime: its best plan so far is on disk from the first plan on (a run killed
with SIGKILL leaves a valid ``best.json``), and ``--max-seconds`` stops the planner itself, the
first plan's search too (exit 1, naming the budget)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.problems.htn import Planner, htn_problem_from_dict
from evolve.problems.htn.decomposition import Decomposition, NoPlan
from evolve.problems.htn.domain import holds
from evolve.problems.htn.hddl import GOAL_OPERATOR, read_hddl
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import verify
from evolve.problems.htn.problem import GOAL_TASK

RING = """(define (domain ring)
  (:requirements :typing :hierarchy)
  (:types spot)
  (:predicates (at ?s - spot) (next ?a ?b - spot))
  (:task reach :parameters (?s - spot))
  (:method here :parameters (?s - spot) :task (reach ?s) :precondition (at ?s) :ordered-subtasks (and))
  (:method step :parameters (?a ?b ?s - spot) :task (reach ?s)
    :precondition (and (at ?a) (next ?a ?b)) :ordered-subtasks (and (go ?a ?b) (reach ?s)))
  (:action go :parameters (?a ?b - spot) :precondition (and (at ?a) (next ?a ?b))
    :effect (and (not (at ?a)) (at ?b))))
"""


def ring(n: int) -> str:
    """n spots in a ring, both ways, plus chords: many plans of many lengths to improve on."""
    spots = " ".join(f"s{i}" for i in range(n))
    links = " ".join(f"(next s{i} s{(i + 1) % n}) (next s{(i + 1) % n} s{i}) (next s{i} s{(i + 3) % n})"
                     for i in range(n))
    return f"""(define (problem r) (:domain ring) (:objects {spots} - spot)
      (:htn :ordered-subtasks (and (reach s{n // 2}) (reach s1) (reach s{n - 2})))
      (:init (at s0) {links}))"""


def files(tmp_path: Path, n: int = 14) -> tuple[Path, Path]:
    (tmp_path / "d.hddl").write_text(RING)
    (tmp_path / "p.hddl").write_text(ring(n))
    return tmp_path / "d.hddl", tmp_path / "p.hddl"


def test_a_run_killed_after_its_first_plan_leaves_a_valid_best_json(tmp_path: Path) -> None:
    d, p = files(tmp_path)
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    child = subprocess.Popen([sys.executable, "-m", "evolve", "run", str(d), str(p), "--jobs", "1",
                              "--generations", "1000000", "--max-seconds", "600", "--out", str(out),
                              "--no-report"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        waited = time.monotonic() + 120
        while not (out / "best.json").exists() and child.poll() is None and time.monotonic() < waited:
            time.sleep(0.05)
        assert (out / "best.json").exists(), child.stderr.read().decode() if child.stderr else ""
        time.sleep(1.0)  # into the generations, where better plans replace it
        assert child.poll() is None, "the run ended by itself: it was meant to be killed"
        child.send_signal(signal.SIGKILL)
        child.wait()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert not (out / "summary.json").exists()  # killed before the end, so best.json came before it
    best = json.loads((out / "best.json").read_text())
    assert best["tasks"] and "schedule" in best
    assert replays(d, p, best["tasks"]) == []
    verdict = verify(*read_files(d, p), (out / "best.ipc").read_text())  # the competition's format
    assert verdict.valid, verdict.faults


def replays(domain_file: Path, problem_file: Path, tasks: list[dict[str, Any]]) -> list[str]:
    """What is wrong with a plan's tasks as the ground domain's operators applied in order (a
    dependency on a later task, a precondition that fails; the step ``__goal__`` needs the goal,
    and the plan's closing task marks the root task done): empty when the plan is valid."""
    domain = htn_problem_from_dict(read_hddl(domain_file, problem_file), str(problem_file)).htn()
    state: dict[str, Any] = dict(domain.state)
    faults, seen = [], set()
    *steps, done = tasks
    assert done["id"] == GOAL_TASK
    for task in steps:
        faults += [f"{task['id']} after {d}" for d in task.get("deps", ()) if d not in seen]
        seen.add(task["id"])
        operator = domain.operators[task["tool"]]
        if not holds(operator.pre, state):
            faults.append(f"{task['id']} {task['tool']}: its precondition fails")
        state = dict(operator.effects.apply(state))
    if steps[-1]["tool"] != GOAL_OPERATOR:
        faults.append("the plan does not end with the goal's step")
    return faults


def test_max_seconds_stops_the_generations_within_a_tenth_of_a_second(tmp_path: Path) -> None:
    d, p = files(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(d), str(p), "--jobs", "1", "--generations", "1000000",
                                      "--max-seconds", "1.5", "--out", str(tmp_path / "run"),
                                      "--no-report", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output[result.output.index("{"):])
    assert summary["stop_reason"].startswith("max-seconds")
    assert 1.5 <= summary["seconds"] <= 1.6
    assert summary["generations"] > 1  # no node bound cut it short: the time was all used


def test_a_deadline_stops_the_first_plans_search(tmp_path: Path) -> None:
    d, p = files(tmp_path)
    domain = htn_problem_from_dict(read_hddl(d, p), str(p)).htn()
    planner = Planner(domain)
    planner.deadline = time.perf_counter()  # already past: the search looks at the clock first
    outcome = planner.plan()
    assert isinstance(outcome, NoPlan) and outcome.reason == "seconds" and outcome.exhausted
    assert "max-seconds" in str(outcome)
    planner.deadline = None
    assert isinstance(planner.plan(), Decomposition)


def test_no_first_plan_within_max_seconds_exits_1_naming_the_budget(tmp_path: Path) -> None:
    d, p = files(tmp_path)
    result = CliRunner().invoke(cli, ["run", str(d), str(p), "--jobs", "1", "--max-seconds", "1e-9",
                                      "--out", str(tmp_path / "run"), "--no-report"])
    assert result.exit_code == 1, result.output
    assert "max-seconds" in result.output and "infeasible" not in result.output
