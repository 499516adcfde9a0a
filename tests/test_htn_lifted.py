"""The lifted depth-first planner (:mod:`evolve.problems.htn.lifted`) on the competition's own
files: every plan it returns passes the verifier written apart from it, it is the same plan in
every process, a plan the verifier refuses is never used, and the grounded planner finds the same
plan again in its own terms (what ``evolve run`` starts its search from)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.problems.htn import Decomposition, NoPlan, Planner, hddl_first, htn_problem_from_dict
from evolve.problems.htn.hddl import GOAL_OPERATOR, VARIANT, read_hddl
from evolve.problems.htn.hddl_first import first_plan
from evolve.problems.htn.hddl_plans import lifted_guide
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import verify
from evolve.problems.htn.lifted import LiftedPlan, LiftedPlanner

TRACK = Path(os.environ.get("EVOLVE_IPC_HTN_DIR", Path(__file__).resolve().parents[1].parent / "shared"
                            / "data" / "ipc2020-htn")) / "total-order"
pytestmark = pytest.mark.skipif(not TRACK.is_dir(), reason=f"the IPC 2020 HTN problems are not at {TRACK}")

SOLVED = [("Barman-BDI", "pfile01.hddl"), ("Childsnack", "p02.hddl"), ("Depots", "p01.hddl"),
          ("Transport", "pfile01.hddl"), ("Rover-GTOHP", "p01.hddl"), ("Towers", "pfile_01.hddl"),
          ("Blocksworld-HPDDL", "pfile_005.hddl"), ("Hiking", "p01.hddl"),
          ("Woodworking", "01--p01-complete.hddl"), ("Multiarm-Blocksworld", "pfile_01_005.hddl")]
"""Small problems of ten domains, each solved by the lifted search within a few thousand bindings."""


def files(domain: str, problem: str) -> tuple[Path, Path]:
    folder = TRACK / domain
    shared = folder / "domain.hddl"
    own = folder / problem.replace(".hddl", "-domain.hddl")
    return (shared if shared.exists() else own), folder / problem


def smallest(count: int) -> list[tuple[str, str]]:
    """The ``count`` smallest problems of every domain of the track."""
    out = []
    for folder in sorted(p for p in TRACK.iterdir() if p.is_dir()):
        problems = sorted((p for p in folder.glob("*.hddl") if "domain" not in p.name),
                          key=lambda p: p.stat().st_size)
        out += [(folder.name, p.name) for p in problems[:count]]
    return out


@pytest.mark.parametrize(("domain", "problem"), SOLVED)
def test_the_small_problems_are_solved_and_verified(domain: str, problem: str) -> None:
    parsed = read_files(*files(domain, problem))
    found = LiftedPlanner(*parsed).plan(20_000)
    assert found is not None
    verdict = verify(*parsed, found.ipc)
    assert verdict.faults == []
    assert [(a.name, a.args) for a in verdict.actions] == [(a.name, a.args) for a in found.actions]


def test_every_plan_found_on_the_track_verifies() -> None:
    """The two smallest problems of every domain: what the search returns, the verifier accepts
    (a problem it does not solve within the budget is no failure)."""
    solved = 0
    for domain, problem in smallest(2):
        parsed = read_files(*files(domain, problem))
        found = LiftedPlanner(*parsed).plan(5_000)
        if found is not None:
            solved += 1
            assert verify(*parsed, found.ipc).faults == [], (domain, problem)
    assert solved >= 12


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=1, max_value=2_000))
def test_a_search_cut_at_any_point_returns_no_partial_plan(budget: int) -> None:
    parsed = read_files(*files("Towers", "pfile_04.hddl"))
    planner = LiftedPlanner(*parsed)
    found = planner.plan(budget)
    assert planner.work <= budget + 1
    if found is not None:
        assert verify(*parsed, found.ipc).faults == []


def test_the_plan_is_the_same_in_every_process() -> None:
    """No iteration over a hash's order: two interpreters with different string hashes."""
    domain, problem = files("Depots", "p05.hddl")
    code = ("import sys; from evolve.problems.htn.hddl_first import first_plan; "
            "print(first_plan(sys.argv[1], sys.argv[2]).ipc)")
    texts = []
    for seed in ("1", "2"):
        done = subprocess.run([sys.executable, "-c", code, str(domain), str(problem)], check=True,
                              capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": seed})
        texts.append(done.stdout)
    assert texts[0] == texts[1] and "root" in texts[0]


def test_a_plan_the_verifier_refuses_is_never_used(monkeypatch: pytest.MonkeyPatch) -> None:
    domain, problem = files("Barman-BDI", "pfile01.hddl")
    honest = first_plan(domain, problem)
    assert honest is not None and honest.steps

    original = LiftedPlanner.plan

    def lying(self: LiftedPlanner, budget: int) -> LiftedPlan:
        found = original(self, budget)
        assert found is not None
        lines = found.ipc.splitlines()
        last_action = max(i for i, line in enumerate(lines) if line[:1].isdigit() and "->" not in line)
        return LiftedPlan(found.actions[:-1], "\n".join(lines[:last_action] + lines[last_action + 1:]),
                          found.work)

    monkeypatch.setattr(hddl_first.LiftedPlanner, "plan", lying)
    assert first_plan(domain, problem) is None


def test_the_grounded_planner_finds_the_lifted_plan_again() -> None:
    domain_file, problem_file = files("Woodworking", "01--p01-complete.hddl")
    found = first_plan(domain_file, problem_file)
    assert found is not None
    domain = htn_problem_from_dict(read_hddl(domain_file, problem_file), str(problem_file)).htn()
    followed = Planner(domain).follow(lifted_guide(found.steps), 10_000)
    assert isinstance(followed, Decomposition)
    names = [s.operator.split(VARIANT)[0] for s in followed.steps if s.operator != GOAL_OPERATOR]
    assert names == list(found.steps)
    wrong = (*found.steps[:-1], found.steps[0])  # the last step replaced: no decomposition makes it
    assert isinstance(Planner(domain).follow(lifted_guide(wrong), 10_000), NoPlan)


def test_the_work_each_problem_took_is_reported() -> None:
    domain, problem = files("Childsnack", "p02.hddl")
    found = first_plan(domain, problem)
    assert found is not None and 0 < found.work <= 20_000
    assert json.dumps(found.steps)  # plain names: what the checkpoint's identity hashes
