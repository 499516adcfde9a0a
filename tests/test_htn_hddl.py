"""HDDL through unified-planning (an optional extra): a small domain written here, grounded."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.model.errors import InputError
from evolve.problems import load_problem
from evolve.problems.htn import Decomposition, HtnProblem, Planner

pytest.importorskip("unified_planning")

from evolve.problems.htn.hddl import read_hddl

DOMAIN = """(define (domain parcel)
  (:requirements :typing :hierarchy :negative-preconditions)
  (:types item place)
  (:predicates (at ?i - item ?p - place) (packed ?i - item))
  (:task deliver :parameters (?i - item ?p - place))
  (:method m-pack-then-move :parameters (?i - item ?a - place ?p - place) :task (deliver ?i ?p)
    :precondition (and (at ?i ?a) (not (= ?a ?p)))
    :ordered-subtasks (and (t1 (pack ?i)) (t2 (move ?i ?a ?p))))
  (:method m-there :parameters (?i - item ?p - place) :task (deliver ?i ?p)
    :precondition (at ?i ?p) :ordered-subtasks (and))
  (:action pack :parameters (?i - item) :precondition (not (packed ?i)) :effect (packed ?i))
  (:action move :parameters (?i - item ?a - place ?p - place)
    :precondition (and (packed ?i) (at ?i ?a)) :effect (and (not (at ?i ?a)) (at ?i ?p))))
"""
PROBLEM = """(define (problem p1) (:domain parcel)
  (:objects box - item home shop - place)
  (:htn :ordered-subtasks (and (t0 (deliver box shop))))
  (:init (at box home)))
"""


def test_an_hddl_domain_is_grounded_planned_and_runs(tmp_path: Path) -> None:
    (tmp_path / "d.hddl").write_text(DOMAIN)
    (tmp_path / "p.hddl").write_text(PROBLEM)
    doc = read_hddl(tmp_path / "d.hddl", tmp_path / "p.hddl")
    assert doc["htn"]["state"] == {"at_box_home": True}
    result = CliRunner().invoke(cli, ["hddl", str(tmp_path / "d.hddl"), str(tmp_path / "p.hddl"),
                                      "--out", str(tmp_path / "parcel.yaml")])
    assert result.exit_code == 0, result.output
    problem = load_problem(tmp_path / "parcel.yaml")
    assert isinstance(problem, HtnProblem)
    outcome = Planner(problem.htn()).plan()
    assert isinstance(outcome, Decomposition)
    assert [s.operator for s in outcome.steps] == ["pack(box)", "move(box,home,shop)"]
    assert outcome.state.get("at_box_shop") is True and "at_box_home" not in outcome.state
    check = CliRunner().invoke(cli, ["validate-domain", str(tmp_path / "parcel.yaml")])
    assert check.exit_code in (0, 1) and "states have a plan" in check.output


def test_unreadable_hddl_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "d.hddl").write_text("(define (domain broken")
    (tmp_path / "p.hddl").write_text(PROBLEM)
    with pytest.raises(InputError, match="not readable HDDL"):
        read_hddl(tmp_path / "d.hddl", tmp_path / "p.hddl")
