"""Determinism sweep: the same problem, options and seed give the same run for any number of
workers and any backend, for the problem classes the other determinism tests leave out (an
HDDL domain with real method choices, fixed task sets that are not an integer RCPSP, templates
with criteria), from any working directory and hash seed, without global random state; and a
trip to the pool that fails is redone from the children's streams as they came."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from plugins.development import DiesInWorkers

from evolve.fitness.registry import resolve_all
from evolve.model.documents import read_document
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict
from evolve.problems import default_operators
from evolve.problems.htn.hddl import read_hddl
from evolve.problems.htn.problem import htn_problem_from_dict
from evolve.problems.rcpsp.problem import is_integer_rcpsp
from evolve.problems.synthetic import generate_problem
from evolve.run.evaluator import Evaluator
from evolve.run.folder import run_search
from evolve.search.develop import Development, InProcess, Work
from evolve.search.loop import child_rng
from evolve.search.options import SearchOptions

ROOT = Path(__file__).resolve().parents[1]

COURIER_DOMAIN = """(define (domain courier)
  (:requirements :typing :hierarchy :negative-preconditions)
  (:types item place)
  (:predicates (at ?i - item ?p - place) (packed ?i - item) (link ?a - place ?b - place))
  (:task deliver :parameters (?i - item ?p - place))
  (:task go :parameters (?i - item ?a - place ?p - place))
  (:method m-there :parameters (?i - item ?p - place) :task (deliver ?i ?p)
    :precondition (at ?i ?p) :ordered-subtasks (and))
  (:method m-pack-go :parameters (?i - item ?a - place ?p - place) :task (deliver ?i ?p)
    :precondition (and (at ?i ?a) (not (= ?a ?p)))
    :ordered-subtasks (and (t1 (pack ?i)) (t2 (go ?i ?a ?p))))
  (:method m-truck :parameters (?i - item ?a - place ?p - place) :task (go ?i ?a ?p)
    :ordered-subtasks (and (t1 (truck ?i ?a ?p))))
  (:method m-bike :parameters (?i - item ?a - place ?p - place) :task (go ?i ?a ?p)
    :ordered-subtasks (and (t1 (bike ?i ?a ?p))))
  (:method m-hop :parameters (?i - item ?a - place ?b - place ?p - place) :task (go ?i ?a ?p)
    :precondition (and (link ?a ?b) (link ?b ?p) (not (= ?b ?p)) (not (= ?a ?b)))
    :ordered-subtasks (and (t1 (truck ?i ?a ?b)) (t2 (bike ?i ?b ?p))))
  (:action pack :parameters (?i - item) :precondition (not (packed ?i)) :effect (packed ?i))
  (:action truck :parameters (?i - item ?a - place ?p - place)
    :precondition (and (packed ?i) (at ?i ?a)) :effect (and (not (at ?i ?a)) (at ?i ?p)))
  (:action bike :parameters (?i - item ?a - place ?p - place)
    :precondition (and (packed ?i) (at ?i ?a)) :effect (and (not (at ?i ?a)) (at ?i ?p))))
"""
"""A domain with several decompositions per task (truck, bike, a hop through the hub; the
unordered top-level tasks in any order): the search has many distinct plans to score."""
COURIER_PROBLEM = """(define (problem rounds) (:domain courier)
  (:objects box crate bag - item home hub shop - place)
  (:htn :subtasks (and (t0 (deliver box shop)) (t1 (deliver crate shop)) (t2 (deliver bag hub))))
  (:init (at box home) (at crate hub) (at bag home) (link home hub) (link hub shop) (link home shop)))
"""

# a small project: (duration, demand of R1, demand of R2, predecessors)
JOBS = [(0, 0, 0, ()), (3, 2, 1, (1,)), (4, 1, 2, (1,)), (2, 3, 0, (1,)), (5, 1, 1, (2,)),
        (3, 2, 2, (2, 3)), (2, 2, 1, (4,)), (4, 1, 3, (5, 6)), (3, 3, 1, (6,)), (2, 1, 1, (7, 8)),
        (0, 0, 0, (9,))]


def project(extra: float) -> Problem:
    """A fixed task set (a template, no criteria); ``extra`` added to each duration: 0 gives an
    integer RCPSP (the activity-list GA), 0.5 a fixed set only the plan GA can search (its
    activity-list operators on the float scheduler)."""
    tools = {f"job{j}": {"duration": d + (extra if d else 0.0), "uses": {"R1": float(a), "R2": float(b)}}
             for j, (d, a, b, _) in enumerate(JOBS, 1)}
    tasks = [{"id": f"j{j}", "tool": f"job{j}", "deps": [f"j{p}" for p in preds]}
             for j, (_, _, _, preds) in enumerate(JOBS, 1)]
    return problem_from_dict({"name": f"project-{extra}", "resources": {"R1": 4.0, "R2": 4.0},
                              "tools": tools, "template": {"tasks": tasks}})


def float_project() -> Problem:
    problem = project(0.5)
    assert not is_integer_rcpsp(problem) and default_operators(problem).initial.__name__ == "sample_list"
    return problem


def templated_refund() -> Problem:
    """The refund catalog with its hand-written plan as a template: criteria and a template, so
    the structural operators alone (no tool-choice climb, nothing developed in threads)."""
    doc = read_document(ROOT / "examples" / "refund.yaml")
    doc["template"] = {"tasks": read_document(ROOT / "examples" / "refund_plan.yaml")["tasks"]}
    problem = problem_from_dict(doc)
    assert default_operators(problem).improve is None
    return problem


@pytest.fixture(scope="module")
def courier(tmp_path_factory: pytest.TempPathFactory) -> Problem:
    folder = tmp_path_factory.mktemp("courier")
    (folder / "d.hddl").write_text(COURIER_DOMAIN)
    (folder / "p.hddl").write_text(COURIER_PROBLEM)
    return htn_problem_from_dict(read_hddl(folder / "d.hddl", folder / "p.hddl"), str(folder / "p.hddl"))


PROBLEMS: dict[str, tuple[Callable[[], Problem] | None, dict[str, Any]]] = {
    "hddl": (None, {"population": 8, "keep": 3, "generations": 4}),
    "float-template": (float_project, {"population": 8, "keep": 3, "generations": 4}),
    "structural-template": (templated_refund, {"population": 8, "keep": 3, "generations": 4,
                                               "patience": 3}),
}


def make(name: str, courier: Problem) -> tuple[Problem, dict[str, Any]]:
    build, options = PROBLEMS[name]
    return (courier if build is None else build()), options


def results(folder: Path) -> dict[str, Any]:
    """What a run decided: best.json and events.jsonl as bytes, summary.json without its timing
    and without the settings being compared."""
    summary = json.loads((folder / "summary.json").read_text())
    for key in ("seconds", "session_seconds", "evaluations_per_second", "worker_failures"):
        summary.pop(key, None)
    for key in ("jobs", "backend", "isolate", "scheduler_address"):
        summary["options"].pop(key, None)
    return {"best": (folder / "best.json").read_bytes(), "events": (folder / "events.jsonl").read_bytes(),
            "summary": summary}


def run(problem: Problem, out: Path, **options: Any) -> dict[str, Any]:
    run_search(problem, options=SearchOptions(seed=5, **options), out_dir=out)
    return results(out)


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_the_same_run_for_any_jobs_and_local_backend(name: str, courier: Problem, tmp_path: Path) -> None:
    """One job, two loky workers that score every plan (isolated: the pool really works), and
    two threads of the threading backend: one run."""
    problem, options = make(name, courier)
    one = run(problem, tmp_path / "one", jobs=1, **options)
    assert one["events"].count(b'"event": "candidate"') > 8
    assert run(problem, tmp_path / "loky", jobs=2, isolate=True, **options) == one
    assert run(problem, tmp_path / "threads", jobs=2, backend="threading", isolate=True, **options) == one


@pytest.fixture(scope="module")
def dask_cluster() -> Iterator[str]:
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        yield str(cluster.scheduler_address)


@pytest.mark.parametrize("name", list(PROBLEMS))
def test_a_dask_cluster_gives_the_same_run(name: str, courier: Problem, dask_cluster: str,
                                           tmp_path: Path) -> None:
    problem, options = make(name, courier)
    one = run(problem, tmp_path / "one", jobs=1, **options)
    assert run(problem, tmp_path / "dask", jobs=2, backend="dask", scheduler_address=dask_cluster,
               **options) == one


def test_no_global_random_state(courier: Problem, tmp_path: Path) -> None:
    """Every class of problem (plan GA with the tool-choice climb, the activity-list GA, the plan
    GA on a fixed task set, the HTN search) neither reads nor moves Python's or numpy's global
    random streams: runs after different global seeds are equal, and the streams are untouched."""
    problems = {"catalog": generate_problem(40, seed=2), "rcpsp": project(0.0), "float": float_project(),
                "hddl": courier}
    assert is_integer_rcpsp(problems["rcpsp"])
    for name, problem in problems.items():
        runs = []
        for salt in (1, 2):
            random.seed(salt)
            np.random.seed(salt)
            before = random.getstate(), np.random.get_state()
            options = {"population": 6, "keep": 3, "generations": 3, "jobs": 1}
            if name == "rcpsp":
                options["max_evaluations"] = 300
            runs.append(run(problem, tmp_path / f"{name}-{salt}", **options))
            after = random.getstate(), np.random.get_state()
            assert after[0] == before[0], f"{name}: the random module's global state moved"
            assert all(np.array_equal(a, b) for a, b in zip(after[1], before[1])), \
                f"{name}: numpy's global state moved"
        assert runs[0] == runs[1], name


def test_the_cli_run_is_the_same_in_any_folder_and_hash_seed(tmp_path: Path) -> None:
    """Two processes with different hash seeds, in different working directories, at --jobs 2:
    set and dict orders that follow string hashes must never reach a result."""
    (tmp_path / "d.hddl").write_text(COURIER_DOMAIN)
    (tmp_path / "p.hddl").write_text(COURIER_PROBLEM)
    outs = []
    for seed in ("1", "2"):
        cwd = tmp_path / f"cwd{seed}"
        cwd.mkdir()
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-m", "evolve", "run", str(tmp_path / "d.hddl"), str(tmp_path / "p.hddl"),
             "--generations", "3", "--population", "8", "--keep", "3", "--seed", "4", "--jobs", "2",
             "--out", "run", "--no-report"],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        outs.append(results(cwd / "run"))
    assert outs[0] == outs[1]


class FailsOffTheMainThread:
    """Runs ``fn`` (moving the child's stream), then fails in any thread but the main one: a
    trip to a pool of the threading backend that fails after its work began."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.name = getattr(fn, "__name__", "fails")

    def __call__(self, *args: Any) -> Any:
        made = self.fn(*args)
        if threading.current_thread() is not threading.main_thread():
            raise RuntimeError("this thread fails")
        return made


@pytest.mark.parametrize(("backend", "wrap"), [("loky", DiesInWorkers), ("threading", FailsOffTheMainThread)],
                         ids=["loky-worker-dies", "threading-worker-fails"])
def test_a_failed_trip_redoes_every_child_from_the_stream_it_came_with(backend: str, wrap: Any) -> None:
    """When a trip to the pool fails, its children are developed again here: from their streams
    as they were given, not as this process's own share (or a thread) left them, so each child
    and the stream it goes on drawing from are those of a run where nothing failed."""
    problem = generate_problem(60, 2)
    ops = default_operators(problem)
    assert ops.improve is not None
    development = Development(ops.initial, wrap(ops.improve))
    plan = ops.initial(problem, child_rng(9, 0, 0))

    def work() -> list[Work]:
        return [Work(child_rng(9, 1, i), plan) for i in range(3)]

    expected = InProcess(problem, development).develop(work())
    with Evaluator(problem, resolve_all(["validity", "completeness", "makespan"]), jobs=2, backend=backend,
                   isolate=True, min_parallel_seconds=0.0, pool_after_seconds=0.0,
                   development=development) as evaluator:
        evaluator.evaluate([plan])  # isolated scoring opens the pool (threading never opens it to develop)
        evaluator.develop([Work(child_rng(9, 1, 5), plan)])  # measured here first: the next call goes out
        got = evaluator.develop(work())
        assert evaluator.worker_failures == 1
    assert [g.plan for g in got] == [e.plan for e in expected]
    assert [g.rng.bit_generator.state for g in got] == [e.rng.bit_generator.state for e in expected]
