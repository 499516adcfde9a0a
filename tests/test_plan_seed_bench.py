"""benchmarks/plan_seed_smollm2.py's figures are only worth something if a valid draft really
seeds the run: with a scripted model on 127.0.0.1 that answers a valid plan for
examples/refund.yaml, the draft passes after one answer, both operator sets' model-seed runs
are seeded, and their best is never worse than the drafted plan."""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import yaml

from evolve.fitness.builtin import DEFAULT_OBJECTIVES
from evolve.fitness.registry import resolve_all
from evolve.llm.client import ChatClient
from evolve.llm.testing import Script, Scripted, ScriptedServer
from evolve.problems import load_problem
from evolve.search.ranking import Ranking

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = ROOT / "benchmarks" / "plan_seed_smollm2.py"


def benchmark() -> ModuleType:
    """The benchmark script as a module, loaded from its path (benchmarks/ is not a package)."""
    spec = importlib.util.spec_from_file_location("plan_seed_bench", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_a_valid_draft_seeds_both_runs(serve: Callable[[Script], ScriptedServer], tmp_path: Path) -> None:
    bench = benchmark()
    tasks = yaml.safe_load((ROOT / "examples" / "refund_plan.yaml").read_text())["tasks"]
    server = serve(lambda body, seen: Scripted(json.dumps({"tasks": tasks})))
    problem = load_problem(ROOT / "examples" / "refund.yaml")
    args = argparse.Namespace(generations=1, population=4, keep=2, attempts=3, max_tokens=1024,
                              response_format="json_object")
    ranking = Ranking.of(resolve_all(DEFAULT_OBJECTIVES))
    with ChatClient(server.url, "scripted", timeout=10) as client:
        rows = bench.one_problem(problem, [0], client, args, tmp_path, ranking)
    draft = rows[0]["draft"]
    assert (draft["asked"], draft["calls"], draft["errors"]) == (1, 1, [])
    assert len(server.requests) == 1 and draft["drafted"]["tasks"] == len(tasks)
    for operators in ("default", "structural"):
        run = rows[0]["runs"][operators]
        assert run["seeded"] and run["model seed"]["feasible"]
        assert run["model seed"]["makespan"] <= draft["drafted"]["makespan"]
    lines = bench.summary(problem.name, rows, args)
    assert "- valid plan drafted: 1/1 seeds (after 1 answer(s): 1)" in lines
    assert any("(1 of 1 runs seeded)" in line for line in lines)
