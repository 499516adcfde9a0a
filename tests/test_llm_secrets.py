"""The LLM API key reaches the endpoint and nothing else: not the evaluator's worker processes,
not a plugin objective, not a file of the run folder or the reply cache."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from evolve.fitness.registry import resolve_all
from evolve.llm import API_KEY_ENV, make_llm_operator
from evolve.llm.testing import Scripted, ScriptedServer
from evolve.problems import load_problem
from evolve.run.folder import run_search
from evolve.search.operators import STRUCTURAL
from evolve.search.options import SearchOptions

REFUND = Path(__file__).resolve().parent.parent / "examples" / "refund.yaml"
SECRET = "sk-test-very-secret-4242"

SPY = '''
import os
from evolve.fitness.base import fitness

@fitness(direction="min", low=0, high=1)
def key_seen(problem, plan, context):
    """1 when this process can read an LLM API key from its environment."""
    return float(any(os.environ.get(name) for name in ("EVOLVE_LLM_API_KEY", "OPENAI_API_KEY")))

@fitness(direction="min", low=0)
def worker_pid(problem, plan, context):
    """The process that evaluated the plan."""
    return float(os.getpid())
'''


def add_log_task(body: dict[str, Any], seen: int) -> Scripted:
    patch = {"add": [{"id": f"log{body['seed']}", "tool": "analytics.log_contact",
                      "inputs": {"complaint": "$complaint"}}], "reason": "log the contact"}
    return Scripted(json.dumps(patch))


def test_workers_and_plugins_never_see_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "plugin").mkdir()
    (tmp_path / "plugin" / "keyspy_i16.py").write_text(SPY)
    monkeypatch.syspath_prepend(str(tmp_path / "plugin"))
    monkeypatch.setenv("EVOLVE_LLM_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET + "-openai")
    fitnesses = resolve_all(["validity", "completeness", "makespan", "keyspy_i16:key_seen",
                             "keyspy_i16:worker_pid"])
    problem = load_problem(REFUND)
    options = SearchOptions(population=4, keep=2, generations=2, seed=3, jobs=1)
    out, cache = tmp_path / "run", tmp_path / "cache"
    with ScriptedServer(add_log_task) as server:
        with make_llm_operator(server.url, "scripted", cache_dir=cache, mode="patch") as operator:
            assert not any(name in os.environ for name in API_KEY_ENV)
            outcome = run_search(problem, options=options, fitnesses=fitnesses, operators=STRUCTURAL,
                                 proposer=operator, proposer_share=1.0, out_dir=out,
                                 extra_summary=lambda: {"llm": operator.usage_summary()})
        auth = list(server.auth)
    assert auth and all(header == f"Bearer {SECRET}" for header in auth)
    assert outcome.summary["llm"]["patches_accepted"] > 0
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    scored = [e for e in events if e["event"] == "candidate"]
    assert scored and all(e["values"]["key_seen"] == 0.0 for e in scored)
    # a plugin objective is isolated: it ran in worker processes, not in this one
    assert {e["values"]["worker_pid"] for e in scored} - {float(os.getpid())}
    for path in [*out.rglob("*"), *cache.rglob("*")]:
        if path.is_file():
            assert "very-secret" not in path.read_text(encoding="utf-8", errors="replace"), path
