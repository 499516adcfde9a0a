"""Whole searches with the LLM operator against a real HTTP server on 127.0.0.1.

The server speaks the chat-completions protocol and answers from a script:
valid patches, unknown tools, broken JSON, fenced JSON, empty replies, a 429
before success, a hang past the timeout. Every run must complete, reject what
must be rejected (the child then comes from a random operator, with the reason
in its event), and a rerun on the same cache must call the server zero times
and write the same events, byte for byte.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from evolve.llm import LLMOperator, make_llm_operator
from evolve.llm.testing import Script, Scripted, ScriptedServer
from evolve.model.problem import Problem
from evolve.problems import load_problem
from evolve.run.folder import run_search
from evolve.search.algorithm import SearchResult
from evolve.search.operators import STRUCTURAL
from evolve.search.options import SearchOptions

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def problem() -> Problem:
    return load_problem(ROOT / "examples" / "refund.yaml")


def parent_tasks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The parent plan's tasks, read back from the prompt the operator sent."""
    text = body["messages"][-1]["content"]
    block = text.split("(improve this one)\n", 1)[1].split("\n\n## Scores", 1)[0]
    return [json.loads(line) for line in block.splitlines() if line.startswith("{")]


def improving_patch(body: dict[str, Any]) -> dict[str, Any]:
    """What a sensible model would say: swap a slow tool for the fast one making the same facts,
    else add a harmless task (always valid, so always accepted)."""
    swaps = {"llm.compare_captures": "runtime.compare_captures",
             "payments.ledger_export": "payments.lookup"}
    for task in parent_tasks(body):
        if task["tool"] in swaps:
            return {"update": [{"id": task["id"], "tool": swaps[task["tool"]]}],
                    "reason": f"{swaps[task['tool']]} makes the same facts faster"}
    return {"add": [{"id": f"log{body['seed']}", "tool": "analytics.log_contact",
                     "inputs": {"complaint": "$complaint"}}], "reason": "log the contact"}


def valid(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted(json.dumps(improving_patch(body)))


def fenced(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted("Here is my patch:\n```json\n" + json.dumps(improving_patch(body), indent=2)
                    + "\n```\nIt should help.")


def unknown_tool(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted(json.dumps({"add": [{"id": "z1", "tool": "payments.teleport",
                                         "inputs": {"order": "$order_id"}}], "reason": "magic"}))


def unknown_task(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted(json.dumps({"remove": ["t99"], "reason": "drop it"}))


def broken(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted('{"update": [{"id": "t1", "tool": "orders.get"')


def empty(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted(None if body["seed"] % 2 else "")


def rate_limited(body: dict[str, Any], seen: int) -> Scripted:
    if seen == 0:
        return Scripted(status=429, headers={"Retry-After": "0"})
    return valid(body, seen)


def hang(body: dict[str, Any], seen: int) -> Scripted:
    return Scripted(json.dumps(improving_patch(body)), delay=30.0)


SCENARIOS: dict[str, tuple[Script, str | None]] = {
    "valid": (valid, None),
    "fenced": (fenced, None),
    "unknown-tool": (unknown_tool, "unknown-tool"),
    "unknown-task": (unknown_task, "unknown-task"),
    "broken-json": (broken, "parse"),
    "empty": (empty, "empty"),
    "429-then-ok": (rate_limited, None),
    "hang": (hang, "timeout"),
}
"""Each scenario's script and the reason every LLM child must be rejected for (None: accepted)."""


def operator_for(server: ScriptedServer, cache: Path, **kwargs: Any) -> LLMOperator:
    settings: dict[str, Any] = {"timeout": 0.4, "concurrency": 3, "backoff": 0.01, "mode": "patch"}
    settings.update(kwargs)
    return make_llm_operator(server.url, "scripted-model", cache_dir=cache, **settings)


def run(problem: Problem, operator: LLMOperator, out: Path, *, share: float = 1.0,
        generations: int = 3, seed: int = 7, resume: bool = False
        ) -> tuple[SearchResult, list[dict[str, Any]]]:
    """A run through the real runner, the LLM's usage in ``summary.json`` as the CLI will put it.

    The structural operators alone: the tool-choice search's greedy first population is
    already optimal on this problem, which would leave the scripted model nothing to swap."""
    options = SearchOptions(population=6, keep=3, generations=generations, seed=seed, jobs=1)
    with operator:
        outcome = run_search(problem, options=options, proposer=operator, proposer_share=share,
                             operators=STRUCTURAL,
                             out_dir=out, resume=resume,
                             extra_summary=lambda: {"llm": operator.usage_summary()})
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["llm"] == operator.usage_summary()
    lines = (out / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return outcome.result, [json.loads(line) for line in lines]


def llm_children(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "candidate" and "llm" in e]


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_run_completes_rejects_and_replays_from_cache(problem: Problem, serve: Any,
                                                      tmp_path: Path, scenario: str) -> None:
    script, must_reject = SCENARIOS[scenario]
    server = serve(script)
    operator = operator_for(server, tmp_path / "cache")
    result, events = run(problem, operator, tmp_path / "first")

    # 3 generations x 3 children, every one of them asked of the model.
    children = llm_children(events)
    assert len(children) == 9
    assert result.best.evaluation.failed is None
    assert [e["generation"] for e in events if e["event"] == "generation_end"] == [0, 1, 2, 3]
    usage = operator.usage_summary()
    assert usage["requests"] == usage["calls"] == 9 and usage["cache_hits"] == 0
    for child in children:
        meta = child["llm"]
        assert meta["model"] == "scripted-model" and len(meta["prompt_hash"]) == 16
        assert set(meta["tokens"]) == {"prompt", "completion"} and meta["latency_s"] >= 0
        if must_reject is None:
            assert meta["accepted"] is True and child["operator"] == "llm"
            assert child["parents"] == [meta["parent"]] and child["patch"]
        else:
            # Rejected: the child was made by a random operator and says why the LLM's was not.
            assert meta["accepted"] is False and meta["rejected"] == must_reject
            assert child["operator"] != "llm" and meta["detail"]
    if must_reject is None:
        assert usage["patches_accepted"] == 9 and usage["patches_rejected"] == 0
        assert usage["tokens"]["prompt"] > 0 and usage["tokens"]["completion"] > 0
    elif must_reject == "timeout":
        assert usage["failed_by_kind"] == {"timeout": 9} and usage["patches_accepted"] == 0
    else:
        assert usage["rejected_by_reason"] == {must_reject: 9}
    requests_first = len(server.requests)

    # The rerun: same seed, same cache, a server that must not be called.
    silent = serve(script)
    again = operator_for(silent, tmp_path / "cache")
    run(problem, again, tmp_path / "second")
    assert silent.requests == []
    assert again.usage_summary()["calls"] == 0 and again.usage_summary()["cache_hits"] == 9
    first_log = (tmp_path / "first" / "events.jsonl").read_bytes()
    assert (tmp_path / "second" / "events.jsonl").read_bytes() == first_log
    assert requests_first == (18 if scenario == "429-then-ok" else 9)


def test_accepted_patches_are_what_the_model_said(problem: Problem, serve: Any,
                                                  tmp_path: Path) -> None:
    server = serve(valid)
    _, events = run(problem, operator_for(server, tmp_path / "cache"), tmp_path / "run")
    swapped = [e for e in llm_children(events) if "update" in e["patch"]]
    assert swapped, "the scripted model swaps slow tools; some child must show it"
    for child in swapped:
        assert child["patch"]["update"][0]["tool"] in {"runtime.compare_captures", "payments.lookup"}
        assert child["llm"]["reason"].endswith("makes the same facts faster")
    assert server.requests[0]["response_format"] == {"type": "json_object"}
    assert server.requests[0]["model"] == "scripted-model"


def test_429_is_retried_and_counted(problem: Problem, serve: Any, tmp_path: Path) -> None:
    server = serve(rate_limited)
    operator = operator_for(server, tmp_path / "cache")
    run(problem, operator, tmp_path / "run", generations=1)
    usage = operator.usage_summary()
    assert usage["calls"] == 3 and usage["http_attempts"] == 6 and usage["retries"] == 3
    assert usage["patches_accepted"] == 3


def test_a_hang_costs_the_timeout_not_more(problem: Problem, serve: Any, tmp_path: Path) -> None:
    server = serve(hang)
    began = time.perf_counter()
    run(problem, operator_for(server, tmp_path / "cache", timeout=0.3), tmp_path / "run",
        generations=2)
    # Two generations, their three calls concurrent, each given up after 0.3 s (no retry).
    assert time.perf_counter() - began < 5.0
    assert len(server.requests) == 6


def test_max_calls_bounds_the_run_and_the_rerun_alike(problem: Problem, serve: Any,
                                                      tmp_path: Path) -> None:
    server = serve(valid)
    operator = operator_for(server, tmp_path / "cache", max_calls=4)
    _, events = run(problem, operator, tmp_path / "first")
    assert len(server.requests) == 4 and len(llm_children(events)) == 4
    assert operator.usage_summary()["skipped_budget"] == 5
    silent = serve(valid)
    run(problem, operator_for(silent, tmp_path / "cache", max_calls=4), tmp_path / "second")
    assert silent.requests == []
    first_log = (tmp_path / "first" / "events.jsonl").read_bytes()
    assert (tmp_path / "second" / "events.jsonl").read_bytes() == first_log


def test_ratio_splits_children_between_llm_and_random(problem: Problem, serve: Any,
                                                      tmp_path: Path) -> None:
    server = serve(valid)
    _, events = run(problem, operator_for(server, tmp_path / "cache"), tmp_path / "run",
                    share=0.5, generations=2)
    per_generation = [len([e for e in llm_children(events) if e["generation"] == g]) for g in (1, 2)]
    assert per_generation == [2, 2]  # round(3 * 0.5) of each generation's 3 children
    randoms = [e for e in events if e["event"] == "candidate" and e["generation"] > 0
               and "llm" not in e]
    assert len(randoms) == 2 and all(e["operator"] != "llm" for e in randoms)


def test_calls_of_a_generation_run_concurrently(problem: Problem, serve: Any,
                                                tmp_path: Path) -> None:
    def slow(body: dict[str, Any], seen: int) -> Scripted:
        return Scripted(json.dumps(improving_patch(body)), delay=0.5)

    timings = {}
    for concurrency in (3, 1):
        server = serve(slow)
        operator = operator_for(server, tmp_path / f"cache{concurrency}", timeout=5.0,
                                concurrency=concurrency)
        began = time.perf_counter()
        run(problem, operator, tmp_path / f"run{concurrency}", generations=1)
        timings[concurrency] = time.perf_counter() - began
    assert timings[1] >= 1.5  # three calls one after another
    assert timings[3] < 1.4  # the same three at once


def test_failures_are_replayed_unless_told_to_ask_again(problem: Problem, serve: Any,
                                                        tmp_path: Path) -> None:
    run(problem, operator_for(serve(hang), tmp_path / "cache", timeout=0.2), tmp_path / "first",
        generations=1)
    replay = serve(valid)
    run(problem, operator_for(replay, tmp_path / "cache"), tmp_path / "second", generations=1)
    assert replay.requests == []
    retry = serve(valid)
    operator = operator_for(retry, tmp_path / "cache", cache_failures=False)
    run(problem, operator, tmp_path / "third", generations=1)
    assert len(retry.requests) == 3 and operator.usage_summary()["patches_accepted"] == 3


def test_a_resumed_run_spends_the_same_llm_budget(problem: Problem, serve: Any,
                                                  tmp_path: Path) -> None:
    server = serve(valid)
    _, whole = run(problem, operator_for(server, tmp_path / "cache-a", max_calls=5),
                   tmp_path / "whole", generations=4)
    # The same run stopped after two generations and resumed by a fresh operator (a new process).
    run(problem, operator_for(server, tmp_path / "cache-b", max_calls=5), tmp_path / "split",
        generations=2)
    resumed = operator_for(server, tmp_path / "cache-b", max_calls=5)
    _, split = run(problem, resumed, tmp_path / "split", generations=4, resume=True)

    def comparable(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # Latency is the one thing a new call measures afresh.
        return [{**e, "llm": {k: v for k, v in e["llm"].items() if k != "latency_s"}}
                if "llm" in e else e for e in events]

    assert len(llm_children(whole)) == 5
    assert comparable(split) == comparable(whole)
    assert resumed.usage_summary()["requests"] == 5
