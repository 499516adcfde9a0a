"""A misbehaving objective costs its own candidate, never the run (real loky pools)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from evolve import Evaluator, SearchOptions, construct, load_problem, plan_hash, run_search
from fitness import resolve_all

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # so `plugins.faulty` imports here and in loky workers

from plugins.faulty import unlucky  # noqa: E402

REFUND = HERE.parent / "examples" / "refund.yaml"


@pytest.fixture(scope="module")
def problem():  # type: ignore[no-untyped-def]
    return load_problem(REFUND)


@pytest.fixture(scope="module")
def plans(problem):  # type: ignore[no-untyped-def]
    """Distinct plans, two of them unlucky (the faulty objectives fail on those)."""
    found = {}
    for seed in range(200):
        plan = construct(problem, np.random.default_rng(seed))
        found.setdefault(plan_hash(plan), plan)
    # two unlucky among six: each "exits" costs a worker's restart, the suite's slowest part
    bad = [p for p in found.values() if unlucky(p)][:2]
    good = [p for p in found.values() if not unlucky(p)][:6]
    assert len(bad) == 2 and len(good) == 6
    return [good[0], bad[0], good[1], good[2], good[3], bad[1], good[4], good[5]]


@pytest.mark.parametrize(("name", "timeout", "error"), [
    ("raises", None, "RuntimeError: this objective fails on purpose"),
    ("hangs", 1.0, "EvaluationTimeout"),
    ("exits", None, "WorkerDied"),
])
def test_only_the_faulty_candidates_fail(problem, plans, name, timeout, error):  # type: ignore[no-untyped-def]
    fitnesses = resolve_all(["validity", "makespan", f"plugins.faulty:{name}"])
    reference = resolve_all(["validity", "makespan", "plugins.faulty:tasks"])
    with Evaluator(problem, reference, jobs=1, isolate=False) as ev:
        expected = ev.evaluate(plans)
    with Evaluator(problem, fitnesses, jobs=2, eval_timeout=timeout) as ev:
        got = ev.evaluate(plans)
        again = ev.evaluate(plans[:3])  # the pool still works afterwards
    for plan, result, good in zip(plans, got, expected):
        if unlucky(plan):
            assert result.failed is not None and error in result.failed, result.failed
            assert result.values == {}
        else:
            assert result.failed is None
            assert result.values == {"validity": good.values["validity"],
                                     "makespan": good.values["makespan"], name: good.values["tasks"]}
    assert [r.failed is None for r in again] == [not unlucky(p) for p in plans[:3]]


def test_a_run_with_a_crashing_objective_completes(problem, tmp_path):  # type: ignore[no-untyped-def]
    fitnesses = resolve_all(["validity", "completeness", "makespan", "plugins.faulty:exits"])
    options = SearchOptions(population=8, keep=4, generations=1, seed=3, jobs=2)
    outcome = run_search(problem, options=options, fitnesses=fitnesses, out_dir=tmp_path)
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    candidates = [e for e in events if e["event"] == "candidate"]
    failed = [e for e in candidates if "failed" in e]
    assert failed and all(e["failed"].startswith("WorkerDied") for e in failed)
    assert len(failed) < len(candidates)
    assert outcome.result.best.evaluation.failed is None
    assert outcome.summary["failed_evaluations"] == len({e["hash"] for e in failed})


def test_timeout_needs_a_process_backend(problem):  # type: ignore[no-untyped-def]
    from evolve.run.backends import BackendError

    with pytest.raises(BackendError, match="process backend"):
        Evaluator(problem, resolve_all(["validity"]), jobs=2, backend="threading", eval_timeout=1.0)


def test_isolation_with_one_job_still_uses_a_worker_process(problem, plans):  # type: ignore[no-untyped-def]
    fitnesses = resolve_all(["validity", "plugins.faulty:exits"])
    with Evaluator(problem, fitnesses, jobs=1) as ev:
        got = ev.evaluate(plans)
    assert [r.failed is not None for r in got] == [unlucky(p) for p in plans]
    assert all(r.failed.startswith("WorkerDied") for r in got if r.failed)
