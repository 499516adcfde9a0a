"""HDDL: read, grounded, planned and checked by a verifier written apart from the planner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from hddl_parcel import DOMAIN, PROBLEM

from evolve import defaults
from evolve.cli.main import cli
from evolve.model.errors import InfeasibleProblem, InputError
from evolve.problems import load_problem
from evolve.problems.htn import Decomposition, HtnProblem, NoPlan, Planner, htn_problem_from_dict
from evolve.problems.htn.hddl import GOAL_OPERATOR, read_hddl
from evolve.problems.htn.hddl_formulas import atom_key
from evolve.problems.htn.hddl_plans import action_graph, ipc_plan
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import check_graph, verify
from evolve.problems.htn.problem import to_plan

# The first method (left) reaches the wrong side; only the second meets the goal.
CHOICE = """(define (domain choice) (:requirements :typing :hierarchy)
  (:types side)
  (:predicates (on ?s - side))
  (:task go :parameters ())
  (:method go-left :parameters () :task (go) :ordered-subtasks (and (put left)))
  (:method go-right :parameters () :task (go) :ordered-subtasks (and (put right)))
  (:action put :parameters (?s - side) :effect (on ?s)))
"""
CHOICE_PROBLEM = """(define (problem c) (:domain choice)
  (:objects left right - side)
  (:htn :subtasks (and (go)))
  (:init) (:goal (on right)))
"""


def write(tmp_path: Path, domain: str, problem: str) -> tuple[Path, Path]:
    (tmp_path / "d.hddl").write_text(domain)
    (tmp_path / "p.hddl").write_text(problem)
    return tmp_path / "d.hddl", tmp_path / "p.hddl"


def solve(domain_file: Path, problem_file: Path, hddl_limits: bool = False) -> tuple[Decomposition, str]:
    """Plan, and return the plan in the competition's format after the verifier accepted it;
    within the limits ``evolve run`` gives an HDDL problem when ``hddl_limits``, else the
    default HTN ones."""
    document = read_hddl(domain_file, problem_file)
    if hddl_limits:
        document["htn"].update(max_depth=defaults.HDDL_MAX_DEPTH, max_nodes=defaults.HDDL_MAX_NODES)
    problem = htn_problem_from_dict(document, str(problem_file))
    outcome = Planner(problem.htn()).plan()
    assert isinstance(outcome, Decomposition), str(outcome)
    text = ipc_plan(problem.htn(), outcome)
    verdict = verify(*read_files(domain_file, problem_file), text)
    assert verdict.valid, (verdict.faults, text)
    assert check_graph(verdict, *action_graph(to_plan(problem.htn(), outcome))) == []
    return outcome, text


def test_an_hddl_domain_is_grounded_planned_and_runs(tmp_path: Path) -> None:
    d, p = write(tmp_path, DOMAIN, PROBLEM)
    doc = read_hddl(d, p)
    assert doc["htn"]["state"] == {"at_box_home": True}
    result = CliRunner().invoke(cli, ["hddl", str(d), str(p), "--out", str(tmp_path / "parcel.yaml"),
                                      "--max-depth", "20", "--max-nodes", "5000"])
    assert result.exit_code == 0, result.output
    problem = load_problem(tmp_path / "parcel.yaml")
    assert isinstance(problem, HtnProblem)
    assert (problem.htn().max_depth, problem.htn().max_nodes) == (20, 5000)
    outcome, text = solve(d, p)
    assert [s.operator for s in outcome.steps] == ["pack(box)", "move(box,home,shop)", GOAL_OPERATOR]
    assert "2 deliver box shop -> m-pack-then-move 0 1" in text
    check = CliRunner().invoke(cli, ["validate-domain", str(tmp_path / "parcel.yaml")])
    assert check.exit_code in (0, 1) and "states have a plan" in check.output


def test_the_goal_is_part_of_the_task_and_the_verifier_catches_a_plan_that_misses_it(tmp_path: Path) -> None:
    d, p = write(tmp_path, CHOICE, CHOICE_PROBLEM)
    outcome, _ = solve(d, p)
    assert [s.operator for s in outcome.steps] == ["put(right)", GOAL_OPERATOR]
    wrong = "==>\n0 put left\nroot 1\n1 go -> go-left 0\n<==\n"
    assert verify(*read_files(d, p), wrong).faults == ["the final state does not meet the goal"]
    (tmp_path / "p2.hddl").write_text(CHOICE_PROBLEM.replace("(on right)", "(and (on right) (on left))"))
    problem = htn_problem_from_dict(read_hddl(d, tmp_path / "p2.hddl"))
    outcome2 = Planner(problem.htn()).plan()
    assert isinstance(outcome2, NoPlan) and outcome2.reason == "no-plan"
    assert "__goal__ needs" in str(outcome2)


def test_the_verifier_rejects_wrong_decompositions(tmp_path: Path) -> None:
    d, p = write(tmp_path, DOMAIN, PROBLEM)
    model = read_files(d, p)
    good = "==>\n0 pack box\n1 move box home shop\nroot 2\n2 deliver box shop -> m-pack-then-move 0 1\n<==\n"
    assert verify(*model, good).valid
    swapped = good.replace("0 pack box\n1 move box home shop", "1 move box home shop\n0 pack box")
    assert not verify(*model, swapped).valid
    bad_method = good.replace("m-pack-then-move", "m-there")
    assert any("m-there" in f for f in verify(*model, bad_method).faults)
    skipped = "==>\n0 pack box\n1 move box home shop\nroot 2\n<==\n"
    assert any("not part of the tree" in f for f in verify(*model, skipped).faults)


SUBTYPES = """(define (domain typed) (:requirements :typing :hierarchy)
  (:types truck - vehicle vehicle - object place block)
  (:predicates (at ?v - vehicle ?p - place) (block ?b - block) (on_table ?b - block)
               (on ?b - block ?c - block))
  (:task move :parameters (?v - vehicle ?p - place))
  (:task stack :parameters ())
  (:method m-move :parameters (?v - vehicle ?a ?p - place) :task (move ?v ?p)
    :precondition (at ?v ?a) :ordered-subtasks (drive ?v ?a ?p))
  (:method m-stack :parameters (?b - block) :task (stack)
    :precondition (block ?b) :ordered-subtasks (swap ?b ?b))
  (:action drive :parameters (?v - vehicle ?a ?p - place)
    :precondition (and (at ?v ?a) (forall (?x - place) (imply (at ?v ?x) (= ?x ?a))))
    :effect (and (not (at ?v ?a)) (at ?v ?p)))
  (:action swap :parameters (?a ?b - block)
    :precondition (exists (?c - block) (on_table ?c))
    :effect (and (not (on_table ?a)) (not (on_table ?b)) (on ?a ?b)
                 (when (on_table ?a) (on ?b ?a)))))
"""
SUBTYPES_PROBLEM = """(define (problem t) (:domain typed)
  (:objects t1 - truck x y - place a - block)
  (:htn :ordered-subtasks (and (move t1 y) (stack)))
  (:init (at t1 x) (block a) (on_table a))
  (:goal (and (at t1 y) (on a a))))
"""


def test_subtypes_quantifiers_duplicate_deletes_conditional_effects_and_name_clashes(tmp_path: Path) -> None:
    d, p = write(tmp_path, SUBTYPES, SUBTYPES_PROBLEM)
    doc = read_hddl(d, p)
    assert "drive(t1,x,y)" in doc["htn"]["operators"]  # a truck is a vehicle
    swap = [name for name in doc["htn"]["operators"] if name.startswith("swap(a,a)")]
    assert swap, doc["htn"]["operators"]  # split by its conditional effect
    for name in swap:
        unset = doc["htn"]["operators"][name]["effects"]["unset"]
        assert unset == sorted(set(unset)) and len(unset) <= 1
    solve(d, p)  # the type "block" and the predicate "block" coexist


def test_atom_names_never_collide() -> None:
    assert atom_key("p", ["q", "r"]) != atom_key("p_q", ["r"])
    assert len({atom_key("p", ["q_r"]), atom_key("p_q", ["r"]), atom_key("p", ["q", "r"])}) == 3


def test_unreadable_hddl_is_one_clear_error(tmp_path: Path) -> None:
    d, p = write(tmp_path, "(define (domain broken", PROBLEM)
    with pytest.raises(InputError, match="never closed"):
        read_hddl(d, p)
    d, p = write(tmp_path, DOMAIN, PROBLEM.replace("(deliver box shop)", "(deliver box nowhere)"))
    with pytest.raises(InputError, match="unknown object"):
        read_hddl(d, p)


RECURSIVE = """(define (domain walk) (:requirements :typing :hierarchy)
  (:types spot)
  (:predicates (at ?s - spot) (next ?a ?b - spot))
  (:task reach :parameters (?s - spot))
  (:method here :parameters (?s - spot) :task (reach ?s) :precondition (at ?s) :ordered-subtasks (and))
  (:method step :parameters (?s ?a ?b - spot) :task (reach ?s)
    :precondition (and (at ?a) (next ?a ?b)) :ordered-subtasks (and (go ?a ?b) (reach ?s)))
  (:action go :parameters (?a ?b - spot) :precondition (and (at ?a) (next ?a ?b))
    :effect (and (not (at ?a)) (at ?b))))
"""

LOOK = "  (:action look :parameters (?s - spot) :precondition (at ?s) :effect (and))\n"
NESTED = RECURSIVE.replace("(and (go ?a ?b) (reach ?s)))", "(and (go ?a ?b) (reach ?s) (look ?s)))").replace(
    "  (:action go", LOOK + "  (:action go")
"""The walk with a step after each recursion: the recursion nests (a recursion through a
method's last subtask takes its task's place, and the depth limit does not bound it)."""


def walk(n: int) -> str:
    spots = " ".join(f"s{i}" for i in range(n))
    links = " ".join(f"(next s{i} s{i + 1}) (next s{i + 1} s{i})" for i in range(n - 1))
    return f"""(define (problem w) (:domain walk) (:objects {spots} - spot)
      (:htn :ordered-subtasks (reach s{n - 1})) (:init (at s0) {links}))"""


def test_the_limit_that_ended_the_search_is_named(tmp_path: Path) -> None:
    d, p = write(tmp_path, NESTED, walk(12))
    solve(d, p)  # deeper than the first round of iterative deepening; loops are pruned
    out = tmp_path / "walk.yaml"
    made = CliRunner().invoke(cli, ["hddl", str(d), str(p), "--out", str(out), "--max-depth", "5"])
    assert made.exit_code == 0, made.output
    problem = load_problem(out)
    assert isinstance(problem, HtnProblem)
    shallow = Planner(problem.htn()).plan()
    assert isinstance(shallow, NoPlan) and shallow.reason == "depth" and "max_depth 5" in str(shallow)
    run = CliRunner().invoke(cli, ["run", str(d), str(p), "--max-nodes", "3", "--generations", "0",
                                   "--population", "2", "--keep", "1", "--out", str(tmp_path / "run")])
    assert run.exit_code == 1 and "max_nodes 3" in run.output and "infeasible" not in run.output
    ok = CliRunner().invoke(cli, ["run", str(d), str(p), "--generations", "1", "--population", "4",
                                  "--keep", "2", "--out", str(tmp_path / "run2"), "--no-report"])
    assert ok.exit_code == 0, ok.output
    assert "feasible" in ok.output and "NOT feasible" not in ok.output


def test_an_impossible_goal_is_infeasible(tmp_path: Path) -> None:
    d, p = write(tmp_path, CHOICE, CHOICE_PROBLEM.replace("(on right)", "(on middle)")
                 .replace("left right - side", "left right middle - side")
                 .replace("(:init)", "(:init)"))
    doc = read_hddl(d, p)  # put(middle) is reachable in the relaxation, but no method uses it
    outcome = Planner(htn_problem_from_dict(doc).htn()).plan()
    assert isinstance(outcome, NoPlan) and outcome.reason == "no-plan"
    d, p = write(tmp_path, CHOICE.replace("(:action put :parameters (?s - side) :effect (on ?s))",
                                          "(:action put :parameters (?s - side) :precondition (on ?s) "
                                          ":effect (on ?s))"), CHOICE_PROBLEM)
    with pytest.raises(InfeasibleProblem, match="no plan"):
        read_hddl(d, p)


IPC = Path(os.environ.get("EVOLVE_IPC_HTN_DIR", Path(__file__).resolve().parents[1].parent / "shared"
                          / "data" / "ipc2020-htn")) / "total-order"
SMALL = [("Blocksworld-GTOHP", "p02.hddl", 35), ("Transport", "pfile01.hddl", None),
         ("Depots", "p01.hddl", None), ("Rover-GTOHP", "p01.hddl", None), ("Towers", "pfile_02.hddl", 3),
         ("Barman-BDI", "pfile01.hddl", None), ("Entertainment", "pfile02.hddl", None)]


@pytest.mark.skipif(not IPC.is_dir(), reason=f"the IPC 2020 HTN problems are not at {IPC}")
@pytest.mark.parametrize(("folder", "name", "best"), SMALL)
def test_small_competition_problems_get_verified_plans(folder: str, name: str, best: int | None) -> None:
    problem_file = IPC / folder / name
    domain_file = problem_file.with_name(problem_file.stem + "-domain.hddl")
    if not domain_file.exists():
        domain_file = IPC / folder / "domain.hddl"
    outcome, _ = solve(domain_file, problem_file)
    if best is not None:  # the competition's shortest plan (Blocksworld-GTOHP p02: the 35 steps)
        assert len(outcome.steps) - 1 <= best


def test_grounding_is_the_same_whatever_the_hash_seed(tmp_path: Path) -> None:
    d, p = write(tmp_path, SUBTYPES, SUBTYPES_PROBLEM)
    script = ("import json, sys; from evolve.problems.htn.hddl import read_hddl; "
              "print(json.dumps(read_hddl(sys.argv[1], sys.argv[2])))")
    outputs = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run([sys.executable, "-c", script, str(d), str(p)], env=env, check=True,
                              capture_output=True, text=True)
        outputs.add(done.stdout)
    assert len(outputs) == 1
