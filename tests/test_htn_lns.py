"""The large-neighbourhood step of the HTN search (:mod:`evolve.problems.htn.lns`): subtrees of a
plan re-planned for fewer actions give verified plans, strictly shorter where the first plan
wanders, and the same run for any number of workers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from evolve.cli.htn import hddl_document
from evolve.cli.main import cli
from evolve.problems.htn import Decomposition, Planner, htn_problem_from_dict
from evolve.problems.htn.domain import Domain
from evolve.problems.htn.hddl import read_hddl
from evolve.problems.htn.hddl_plans import ipc_plan
from evolve.problems.htn.hddl_syntax import read_files
from evolve.problems.htn.hddl_verify import verify
from evolve.problems.htn.lns import Memo, neighbour, occurrences, shortest, splice
from tests.test_htn_anytime import files
from tests.test_htn_hddl import IPC


def improve(domain: Domain, domain_file: Path, problem_file: Path, moves: int) -> list[int]:
    """The first plan, then ``moves`` steps, each decoded, verified, and kept when shorter (as
    the search keeps a better child): the lengths of the plans kept."""
    planner = Planner(domain)
    tree = planner.plan()
    assert isinstance(tree, Decomposition)
    lengths = [len(tree.steps)]
    rng, memo = np.random.default_rng(0), Memo()
    for _ in range(moves):
        genome, _ = neighbour(planner, tree, rng, memo)
        if genome is None:
            continue
        decoded = planner.plan(genome, None, max_nodes=domain.max_nodes, first_depth=tree.limit)
        assert isinstance(decoded, Decomposition)
        assert verify(*read_files(domain_file, problem_file), ipc_plan(domain, decoded)).faults == []
        if len(decoded.steps) < len(tree.steps):
            tree = decoded
            lengths.append(len(tree.steps))
    return lengths


def test_a_wandering_first_plan_gets_strictly_shorter_and_every_plan_verifies(tmp_path: Path) -> None:
    """The ring: ``reach`` takes the first neighbour in file order, so the first plan walks round
    the ring where chords and the other direction are shorter."""
    d, p = files(tmp_path)
    domain = htn_problem_from_dict(read_hddl(d, p), str(p)).htn()
    lengths = improve(domain, d, p, 4)
    assert lengths == sorted(lengths, reverse=True)
    assert lengths[-1] < lengths[0]


def test_a_subtree_is_replanned_to_its_fewest_actions(tmp_path: Path) -> None:
    """Each ``reach`` occurrence of the ring's first plan, re-planned alone from its start state,
    takes exactly the shortest path's moves (a breadth-first search over the ring's links), and
    spliced back the plan is no longer."""
    d, p = files(tmp_path)
    domain = htn_problem_from_dict(read_hddl(d, p), str(p)).htn()
    planner = Planner(domain)
    tree = planner.plan()
    assert isinstance(tree, Decomposition)
    tops = [o for o in occurrences(tree) if o.task.startswith("reach") and o.path.count("/") == 1]
    assert len(tops) == 3 and sum(o.size for o in tops) <= len(tree.steps)
    state = dict(domain.state)
    for occurrence in tops:
        choices, length, _ = shortest(planner, occurrence, state, occurrence.size + 1, 10_000)
        assert choices is not None and length <= occurrence.size
        here = next(int(k[len("at_s"):]) for k, v in state.items() if k.startswith("at_s") and v)
        assert length == distance(14, here, int(occurrence.task[len("reach(s"):-1]))
        decoded = planner.plan(splice(tree.genome, occurrence.path, choices))
        assert isinstance(decoded, Decomposition) and len(decoded.steps) <= len(tree.steps)
        for step in tree.steps[occurrence.start:occurrence.start + occurrence.size]:
            state = domain.operators[step.operator].effects.apply(state)


def distance(n: int, here: int, target: int) -> int:
    """Moves from ``here`` to ``target`` on the ring of :func:`tests.test_htn_anytime.ring`."""
    frontier, seen, steps = {here}, {here}, 0
    while target not in frontier:
        frontier = {b for a in frontier for b in ((a + 1) % n, (a - 1) % n, (a + 3) % n)} - seen
        seen |= frontier
        steps += 1
    return steps


@pytest.mark.skipif(not IPC.is_dir(), reason=f"the IPC 2020 HTN problems are not at {IPC}")
def test_rover_p01_plans_verify_and_never_get_longer() -> None:
    domain_file = IPC / "Rover-GTOHP" / "domain.hddl"
    problem_file = IPC / "Rover-GTOHP" / "p01.hddl"
    domain = htn_problem_from_dict(hddl_document(str(domain_file), str(problem_file), None, None),
                                   str(problem_file)).htn()
    lengths = improve(domain, domain_file, problem_file, 3)
    assert lengths == sorted(lengths, reverse=True)


def test_a_run_with_the_step_is_the_same_for_any_number_of_workers(tmp_path: Path) -> None:
    d, p = files(tmp_path)
    runs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"run{jobs}"
        result = CliRunner().invoke(cli, ["run", str(d), str(p), "--jobs", jobs, "--generations", "4",
                                          "--seed", "3", "--out", str(out), "--no-report"])
        assert result.exit_code == 0, result.output
        events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
        runs.append([(e["hash"], e["operator"]) for e in events if e["event"] == "candidate"])
    assert runs[0] == runs[1]
    assert any(op.endswith("lns") for _, op in runs[0])


def test_a_resumed_run_steps_as_an_unbroken_one(tmp_path: Path) -> None:
    """The decompositions the step re-plans are not in a checkpoint: they are decoded again from
    the parents' genomes, so a run stopped after two generations and resumed to six writes the
    events of a run never stopped."""
    d, p = files(tmp_path)

    def run(out: Path, generations: int, *more: str) -> list[tuple[str, str]]:
        result = CliRunner().invoke(cli, ["run", str(d), str(p), "--jobs", "1", "--generations",
                                          str(generations), "--seed", "3", "--no-report", *more])
        assert result.exit_code == 0, result.output
        events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
        return [(e["hash"], e["operator"]) for e in events if e["event"] == "candidate"]

    unbroken = run(tmp_path / "whole", 6, "--out", str(tmp_path / "whole"))
    run(tmp_path / "part", 2, "--out", str(tmp_path / "part"))
    resumed = run(tmp_path / "part", 6, "--resume", str(tmp_path / "part"))
    assert any(op.endswith("lns") for _, op in unbroken[len(unbroken) // 3:])
    assert resumed == unbroken
