"""Splitting methods' local parameters off (:mod:`evolve.problems.htn.hddl_split`) changes how
many ground methods there are, not what can be done: on the test domains and the smallest
competition problem of every domain, the split grounding keeps exactly the operators the plain
reference grounding of the unsplit domain keeps, and its methods are the reference's with the
split-off parameters left out; plans made through it are accepted by the independent verifier
(the IPC problems' plans: ``tests/test_htn_hddl.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evolve.problems.htn.hddl import ROOT_METHOD, ROOT_TASK, VARIANT, Grounder, split_name
from evolve.problems.htn.hddl_split import PART, changed, is_part, split, split_method
from evolve.problems.htn.hddl_syntax import MethodDef, read_files
from tests.hddl_parcel import DOMAIN, PROBLEM
from tests.test_htn_anytime import files
from tests.test_htn_grounding_oracle import smallest
from tests.test_htn_hddl import IPC, RECURSIVE, solve, walk, write

SNACK = """(define (domain snack) (:requirements :typing :hierarchy :negative-preconditions)
  (:types child bread tray place)
  (:constants kitchen - place)
  (:predicates (waiting ?c - child ?p - place) (fresh ?b - bread) (gluten ?b - bread)
               (at ?t - tray ?p - place) (made ?b - bread) (served ?c - child))
  (:task serve :parameters (?c - child))
  (:method m-serve :parameters (?c - child ?b - bread ?t - tray ?p - place)
    :task (serve ?c)
    :precondition (and (waiting ?c ?p) (fresh ?b) (not (gluten ?b)))
    :ordered-subtasks (and (make ?b) (move ?t kitchen ?p) (give ?c ?t ?p)))
  (:action make :parameters (?b - bread) :precondition (fresh ?b)
    :effect (and (not (fresh ?b)) (made ?b)))
  (:action move :parameters (?t - tray ?a ?b - place) :precondition (at ?t ?a)
    :effect (and (not (at ?t ?a)) (at ?t ?b)))
  (:action give :parameters (?c - child ?t - tray ?p - place) :precondition (at ?t ?p)
    :effect (served ?c)))
"""
SNACK_PROBLEM = """(define (problem s) (:domain snack)
  (:objects c1 c2 - child b1 b2 b3 - bread t1 t2 - tray p1 p2 - place)
  (:htn :parameters (?x - bread) :ordered-subtasks (and (serve c1) (serve c2)))
  (:init (waiting c1 p1) (waiting c2 p2) (fresh b1) (fresh b2) (fresh b3) (gluten b2)
         (at t1 kitchen) (at t2 kitchen)))
"""


def kept_positions(method: MethodDef, dynamic: set[str]) -> list[int]:
    top = split_method(method, dynamic)[0]
    names = {v for v, _ in top.params}
    return [i for i, (v, _) in enumerate(method.params) if v in names]


def projected(domain_file: Path, problem_file: Path, plain: dict[str, Any]) -> set[str]:
    """The reference's method names, each without the parameters the split moves off."""
    domain, problem = read_files(domain_file, problem_file)
    dynamic = changed(domain)
    keep = {m.name: kept_positions(m, dynamic) for m in domain.methods}
    assert problem.network is not None
    keep[ROOT_METHOD] = kept_positions(problem.network, dynamic)
    out = set()
    for name in plain["htn"]["methods"]:
        if VARIANT in name:
            out.add(name)
            continue
        head, args = split_name(name)
        out.add(f"{head}({','.join(args[i] for i in keep[head])})" if keep[head] else head)
    return out


def compare(domain_file: Path, problem_file: Path) -> int:
    """The split grounding against the reference's; the number of methods the split saved."""
    fast = Grounder(*split(*read_files(domain_file, problem_file)), str(problem_file)).document()
    plain = Grounder(*read_files(domain_file, problem_file), str(problem_file), reference=True).document()
    assert set(fast["htn"]["operators"]) == set(plain["htn"]["operators"])
    assert fast["htn"]["state"] == plain["htn"]["state"]
    mine = {n for n, m in fast["htn"]["methods"].items() if not is_part(split_name(m["task"])[0])}
    assert mine == projected(domain_file, problem_file, plain)
    for name, method in fast["htn"]["methods"].items():  # a part's task is made by its method only
        if is_part(split_name(method["task"])[0]):
            assert split_name(name)[0] == split_name(method["task"])[0] + "_m" and PART in name
    assert {m["task"] for m in fast["htn"]["methods"].values()} >= {ROOT_TASK}
    return len(plain["htn"]["methods"]) - len(mine)


def test_a_local_choice_is_split_off_and_plans_stay_valid(tmp_path: Path) -> None:
    d, p = write(tmp_path, SNACK, SNACK_PROBLEM)
    domain, problem = split(*read_files(d, p))
    serve = next(m for m in domain.methods if m.name == "m-serve")
    # ?b is make's alone (its conjuncts move: make is first); ?t and ?p are move's and give's, a
    # window of two, which (waiting ?c ?p) may move to: no action changes it
    assert [v for v, _ in serve.params] == ["?c"]
    assert [(c.name, c.args) for c in serve.subtasks] == [(f"m-serve{PART}0", ()),
                                                         (f"m-serve{PART}1", ("?c",))]
    window = next(m for m in domain.methods if m.name == f"m-serve{PART}1_m")
    assert [c.name for c in window.subtasks] == ["move", "give"] and "waiting" in str(window.pre)
    part = next(m for m in domain.methods if m.name == f"m-serve{PART}0_m")
    assert [v for v, _ in part.params] == ["?b"] and "gluten" in str(part.pre)
    assert problem.network is not None and problem.network.params == (("?x", ("bread",)),)
    assert compare(d, p) > 0
    outcome, text = solve(d, p)
    assert "m-serve " in text and PART not in text and len(outcome.steps) == 7  # 3 + 3 + the goal


def test_a_dynamic_conjunct_on_a_later_subtask_keeps_its_parameter(tmp_path: Path) -> None:
    d, p = write(tmp_path, SNACK.replace("(make ?b) (move ?t kitchen ?p)", "(move ?t kitchen ?p) (make ?b)"),
                 SNACK_PROBLEM)
    domain, _ = split(*read_files(d, p))
    serve = next(m for m in domain.methods if m.name == "m-serve")
    assert "?b" in {v for v, _ in serve.params}  # (fresh ?b) is read before move, not before make
    compare(d, p)
    solve(d, p)


def test_the_test_domains_split_as_the_reference_grounds(tmp_path: Path) -> None:
    compare(*files(tmp_path))
    (tmp_path / "pd.hddl").write_text(DOMAIN)
    (tmp_path / "pp.hddl").write_text(PROBLEM)
    compare(tmp_path / "pd.hddl", tmp_path / "pp.hddl")
    d, p = write(tmp_path, RECURSIVE, walk(12))
    compare(d, p)
    solve(d, p)  # the split subtask is no level of nesting: max_depth 12 still does


@pytest.mark.skipif(not IPC.is_dir(), reason=f"the IPC 2020 HTN problems are not at {IPC}")
@pytest.mark.parametrize(("domain_file", "problem_file"), smallest(),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_smallest_competition_problems_split_as_the_reference_grounds(
        domain_file: Path, problem_file: Path) -> None:
    if compare(domain_file, problem_file):  # the split changed the grounding: its plan verified
        solve(domain_file, problem_file, hddl_limits=True)
