"""The goal's dead ends (:mod:`evolve.problems.htn.goal_reach`): a node whose remaining tasks can
no longer make a goal fact true is given up, and nothing else is. The check only removes nodes
with no plan below them, so the depth-first search meets the plans in the same order: the first
plan is the same plan with the check as without it, in no more nodes (the smallest competition
problem of every domain, and domains built to tempt it: a goal fact deleted and made again, one
made only deep inside a recursion). Where the goal decides an early choice, it saves the search
from backtracking through everything after it (Woodworking 08 p03: no first plan in a million
nodes without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from evolve.problems.htn.decomposition import Decomposition, NoPlan
from evolve.problems.htn.goal_reach import GoalReach
from evolve.problems.htn.hddl import read_hddl
from evolve.problems.htn.hddl_plans import ipc_plan
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import verify
from evolve.problems.htn.nodes import Pending
from evolve.problems.htn.planner import Planner
from evolve.problems.htn.reader import domain_from_dict
from tests.test_htn_grounding_oracle import smallest
from tests.test_htn_hddl import IPC, write

BUDGET = 300_000

PAINT = """(define (domain paint) (:requirements :typing :hierarchy)
  (:types part colour step)
  (:predicates (colour ?p - part ?c - colour) (went-left ?s - step) (went-right ?s - step))
  (:task paint :parameters (?p - part ?c - colour))
  (:task chores :parameters (?s - step))
  (:method m-paint :parameters (?p - part ?c - colour) :task (paint ?p ?c)
    :ordered-subtasks (and (spray ?p ?c)))
  (:method m-chore-left :parameters (?s - step) :task (chores ?s)
    :ordered-subtasks (and (left ?s)))
  (:method m-chore-right :parameters (?s - step) :task (chores ?s)
    :ordered-subtasks (and (right ?s)))
  (:action spray :parameters (?p - part ?c - colour) :effect (colour ?p ?c))
  (:action left :parameters (?s - step) :effect (went-left ?s))
  (:action right :parameters (?s - step) :effect (went-right ?s)))
"""


def paint_problem(chores: int) -> str:
    """A part whose colour the task network leaves free, then ``chores`` two-way choices, and a
    goal that wants the last colour: without the check every choice is undone for each wrong
    colour, 2 ** chores leaves each."""
    steps = " ".join(f"s{i}" for i in range(chores))
    tasks = " ".join(f"(chores s{i})" for i in range(chores))
    return f"""(define (problem p) (:domain paint)
  (:objects x - part black green blue red - colour {steps} - step)
  (:htn :parameters (?c - colour) :ordered-subtasks (and (paint x ?c) {tasks}))
  (:init)
  (:goal (and (colour x red))))
"""


# a goal fact true at the start that a task deletes and a later one makes again, and a goal fact
# made only at the bottom of a recursion: neither may be given up
TEMPT = """(define (domain tempt) (:requirements :typing :hierarchy :negative-preconditions)
  (:types spot)
  (:predicates (lit) (at ?s - spot) (next ?a ?b - spot) (home ?s - spot) (arrived))
  (:task walk :parameters (?s - spot))
  (:task blink)
  (:method m-home :parameters (?s - spot) :task (walk ?s) :precondition (home ?s)
    :ordered-subtasks (and (arrive ?s)))
  (:method m-step :parameters (?s ?t - spot) :task (walk ?s)
    :precondition (and (next ?s ?t) (not (home ?s)))
    :ordered-subtasks (and (move ?s ?t) (walk ?t)))
  (:method m-blink :task (blink) :ordered-subtasks (and (off) (on)))
  (:action off :effect (not (lit)))
  (:action on :effect (lit))
  (:action move :parameters (?a ?b - spot) :precondition (at ?a)
    :effect (and (not (at ?a)) (at ?b)))
  (:action arrive :parameters (?s - spot) :precondition (at ?s) :effect (arrived)))
"""
TEMPT_PROBLEM = """(define (problem t) (:domain tempt)
  (:objects a b c d - spot)
  (:htn :ordered-subtasks (and (blink) (walk a) (blink)))
  (:init (lit) (at a) (next a b) (next b c) (next c d) (home d))
  (:goal (and (lit) (arrived))))
"""


def planned(domain_file: Path, problem_file: Path, check: bool) -> tuple[Planner, Decomposition | NoPlan]:
    domain, _ = domain_from_dict(read_hddl(domain_file, problem_file))
    planner = Planner(domain)
    planner.goal_check = check
    return planner, planner.plan()


def depth_first(domain_file: Path, problem_file: Path, check: bool) -> tuple[Planner, Decomposition | NoPlan]:
    """One depth-first search in the domain's method order, every depth allowed (the planner's
    first-plan portfolio restarts at node caps the check makes it meet at other times)."""
    domain, _ = domain_from_dict(read_hddl(domain_file, problem_file))
    planner = Planner(domain)
    planner.goal_check = check
    root = Pending(domain.goal, domain.goal, 0, (), None)
    return planner, planner.bounded(root, dict(domain.state), {}, None, False, domain.max_depth, BUDGET)


def same_first_plan(domain_file: Path, problem_file: Path) -> tuple[int, int]:
    """The depth-first search's first plan with and without the check: the same steps
    (verified), in no more nodes with it; the nodes of both."""
    _, plain = depth_first(domain_file, problem_file, False)
    planner, checked = depth_first(domain_file, problem_file, True)
    assert isinstance(checked, Decomposition)
    if isinstance(plain, NoPlan):  # the budget ran out without the check
        assert plain.reason == "budget"
        plain_nodes = plain.nodes
    else:
        assert [s.operator for s in checked.steps] == [s.operator for s in plain.steps]
        plain_nodes = plain.nodes
    assert checked.nodes <= plain_nodes
    verdict = verify(*read_files(domain_file, problem_file), ipc_plan(planner.domain, checked))
    assert not verdict.faults, verdict.faults
    return plain_nodes, checked.nodes


def test_a_wrong_free_colour_is_given_up_at_once(tmp_path: Path) -> None:
    d, p = write(tmp_path, PAINT, paint_problem(8))
    plain, checked = same_first_plan(d, p)
    assert plain > 3 * 2 ** 8  # each wrong colour: every leaf of the chores
    assert checked < 100
    _, outcome = planned(d, p, True)
    assert isinstance(outcome, Decomposition)
    assert outcome.steps[0].operator == "spray(x,red)"


def test_the_reach_of_each_task_is_what_an_action_below_it_adds(tmp_path: Path) -> None:
    d, p = write(tmp_path, PAINT, paint_problem(2))
    domain, _ = domain_from_dict(read_hddl(d, p))
    reach = GoalReach(domain, Planner(domain).by_task)
    assert reach.facts == ("colour_x_red",)
    assert reach.reach["spray(x,red)"] == 1 and reach.reach["paint(x,red)"] == 1
    assert reach.reach.get("paint(x,black)", 0) == 0 and reach.reach.get("chores(s0)", 0) == 0


def test_a_goal_fact_deleted_and_made_again_or_made_deep_in_a_recursion_is_not_given_up(
        tmp_path: Path) -> None:
    d, p = write(tmp_path, TEMPT, TEMPT_PROBLEM)
    same_first_plan(d, p)
    _, outcome = planned(d, p, True)
    assert isinstance(outcome, Decomposition)
    assert [s.operator for s in outcome.steps][-2:] == ["on", "__goal__"]


def test_a_goal_fact_the_last_tasks_delete_is_no_plan_and_says_why(tmp_path: Path) -> None:
    problem = TEMPT_PROBLEM.replace("(blink) (walk a) (blink)", "(blink) (dark) (walk a)")
    domain_text = TEMPT.replace("(:task blink)", "(:task blink) (:task dark)").replace(
        "(:action off", "(:method m-dark :task (dark) :ordered-subtasks (and (off)))\n  (:action off")
    d, p = write(tmp_path, domain_text, problem)
    _, outcome = planned(d, p, True)
    assert isinstance(outcome, NoPlan) and outcome.reason == "no-plan"
    assert "lit can no longer be made true" in str(outcome)
    _, plain = planned(d, p, False)
    assert isinstance(plain, NoPlan) and plain.reason == "no-plan"  # the same verdict, later


@pytest.mark.skipif(not IPC.is_dir(), reason=f"the IPC 2020 HTN problems are not at {IPC}")
@pytest.mark.parametrize(("domain_file", "problem_file"), smallest(),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_first_plan_is_the_same_with_the_check_in_no_more_nodes(domain_file: Path,
                                                                     problem_file: Path) -> None:
    same_first_plan(domain_file, problem_file)


@pytest.mark.skipif(not IPC.is_dir(), reason=f"the IPC 2020 HTN problems are not at {IPC}")
def test_woodworking_finds_the_colours_the_goal_wants() -> None:
    folder = IPC / "Woodworking"
    domain_file, problem_file = folder / "domain.hddl", folder / "08--p03-part2.hddl"
    domain, _ = domain_from_dict(read_hddl(domain_file, problem_file))
    planner = Planner(domain)
    outcome = planner.plan(max_nodes=100_000)
    assert isinstance(outcome, Decomposition)
    verdict = verify(*read_files(domain_file, problem_file), ipc_plan(domain, outcome))
    assert not verdict.faults
    planner = Planner(domain)
    planner.goal_check = False
    root = Pending(domain.goal, domain.goal, 0, (), None)
    assert isinstance(planner.bounded(root, dict(domain.state), {}, None, False, domain.max_depth, 30_000),
                      NoPlan)
