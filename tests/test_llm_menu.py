"""Menu mode, its baselines and ``auto``, against a scripted chat server on 127.0.0.1.

The engine drafts pre-scored edits, the model answers with an index; the reply
is read tolerantly; a random pick of the same menus is recorded in every run
and can be run as a proposer of its own; best-of-N asks for independent
patches of one plan.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evolve.fitness.builtin import DEFAULT_OBJECTIVES
from evolve.fitness.evaluation import evaluate_plan
from evolve.fitness.registry import resolve_all
from evolve.llm import (
    LLMOperator,
    RandomPick,
    Rejected,
    Templates,
    best_of_n,
    build_menu_messages,
    choice_from_reply,
    draft_menu,
    make_llm_operator,
    menu_schema,
    prompt_hash,
)
from evolve.llm.menu import describe_edit, describe_effect
from evolve.llm.testing import Scripted, ScriptedServer
from evolve.model.plan import plan_hash
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.problems import load_problem
from evolve.run.evaluator import evaluate_batch
from evolve.run.folder import run_search
from evolve.search.algorithm import Candidate
from evolve.search.loop import ProposalContext, Proposer
from evolve.search.operators import STRUCTURAL
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking

ROOT = Path(__file__).resolve().parents[1]
FITNESSES = resolve_all(DEFAULT_OBJECTIVES)
RANKING = Ranking.of(FITNESSES)


@pytest.fixture(scope="module")
def problem() -> Problem:
    return load_problem(ROOT / "examples" / "refund.yaml")


@pytest.fixture(scope="module")
def weak(problem: Problem) -> Candidate:
    """Slow tools on the critical path and an idle task: a parent with room to improve."""
    plan = plan_from_dict({"tasks": [
        {"id": "t1", "tool": "orders.get", "inputs": {"order_id": "$order_id"}},
        {"id": "t2", "tool": "payments.ledger_export", "deps": ["t1"], "inputs": {"order": "$t1.order"}},
        {"id": "t3", "tool": "llm.compare_captures", "deps": ["t1", "t2"],
         "inputs": {"order": "$t1.order", "captures": "$t2.captures"}},
        {"id": "t4", "tool": "fraud.score", "deps": ["t1"], "inputs": {"order": "$t1.order"}},
    ]})
    return Candidate(id="c7", plan=plan, hash=plan_hash(plan), generation=1,
                     evaluation=evaluate_plan(problem, plan, FITNESSES))


def context_for(problem: Problem) -> ProposalContext:
    return ProposalContext(RANKING, STRUCTURAL, lambda plans: evaluate_batch(problem, plans, FITNESSES))


def menu_lines(body: dict[str, Any]) -> list[str]:
    """The numbered edits of a menu prompt, as the model saw them."""
    text = body["messages"][-1]["content"]
    block: str = text.split("# Edits (pick one)\n", 1)[1].split("\n\n", 1)[0]
    return block.splitlines()


def by_prompt(server: ScriptedServer) -> dict[str, dict[str, Any]]:
    """The requests by their prompt's hash, as events record it (calls may arrive in any order)."""
    return {prompt_hash(body["messages"]): body for body in server.requests}


def smart(body: dict[str, Any], seen: int) -> Scripted:
    """A model that reads the scores: the first edit that shortens the makespan, else 0."""
    for line in menu_lines(body):
        found = re.search(r"makespan (\d+) -> (\d+)", line)
        if found and int(found.group(2)) < int(found.group(1)) and "NOT feasible" not in line:
            index = int(line.split(".", 1)[0])
            return Scripted(json.dumps({"choice": index, "reason": "shorter schedule"}))
    return Scripted('{"choice": 0, "reason": "nothing better"}')


def run(problem: Problem, proposer: Proposer, out: Path, usage: Any, generations: int = 3,
        seed: int = 5) -> list[dict[str, Any]]:
    options = SearchOptions(population=6, keep=3, generations=generations, seed=seed, jobs=1)
    run_search(problem, options=options, operators=STRUCTURAL, proposer=proposer,
               proposer_share=1.0, out_dir=out, extra_summary=lambda: {"llm": usage()})
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


def operator_for(server: ScriptedServer, cache: Path, **kwargs: Any) -> LLMOperator:
    settings: dict[str, Any] = {"timeout": 5.0, "concurrency": 2, "mode": "menu",
                                "response_format": "json_object_schema"}
    settings.update(kwargs)
    return make_llm_operator(server.url, "scripted-model", cache_dir=cache, **settings)


def test_a_menu_holds_distinct_pre_scored_edits_one_line_each(problem: Problem, weak: Candidate) -> None:
    menu = draft_menu(problem, weak, context_for(problem), np.random.default_rng(3), size=5)
    assert menu is not None and 2 <= len(menu.options) <= 5
    assert len({o.hash for o in menu.options} | {weak.hash}) == len(menu.options) + 1
    for option in menu.options:
        assert option.evaluation == evaluate_plan(problem, option.plan, FITNESSES)
        assert "\n" not in option.line and ": " in option.line
    assert 0 <= menu.random_choice < len(menu.options)
    again = draft_menu(problem, weak, context_for(problem), np.random.default_rng(3), size=5)
    assert again is not None and [o.line for o in again.options] == [o.line for o in menu.options]
    messages = build_menu_messages(problem, weak, menu.text(), len(menu.options), Templates.load(),
                                   RANKING)
    text = messages[1]["content"]
    assert all(f"{i}. {o.line}" in text for i, o in enumerate(menu.options))
    assert f"from 0 to {len(menu.options) - 1}" in text
    assert '"choice"' in messages[0]["content"] and "1. validity" in messages[0]["content"]
    schema = menu_schema(4)
    assert schema["properties"]["choice"]["enum"] == [0, 1, 2, 3]
    assert schema["required"] == ["choice", "reason"]


def test_an_edit_line_says_what_changes_and_what_it_does_to_the_scores(problem: Problem,
                                                                          weak: Candidate) -> None:
    swapped = plan_from_dict({"tasks": [
        {**t.to_dict(), "tool": "payments.lookup"} if t.id == "t2" else t.to_dict()
        for t in weak.plan.tasks]})
    context = ProposalContext(RANKING, STRUCTURAL, lambda plans: [
        evaluate_plan(problem, p, FITNESSES) for p in plans])
    after = context.evaluate([swapped])[0]
    assert describe_edit(weak.plan, swapped) == "swap t2 payments.ledger_export -> payments.lookup"
    effect = describe_effect(weak.evaluation, after, RANKING)
    assert re.fullmatch(r".*makespan \d+ -> \d+.*", effect)


@pytest.mark.parametrize(("text", "index"), [
    ('{"choice": 2, "reason": "shorter"}', 2),
    ('```json\n{"choice": "3", "reason": "x"}\n```', 3),
    ('{"index": 1}', 1),
    ('{"option": 4.0}', 4),
    ("2", 2),
    ("[0]", 0),
    ("Option 4 is the best because makespan 1750 -> 1600", 4),
    ('{"choice": 1, "reason": "because the makespan dr', 1),
    ('Sure! {"choice": 0, "reason": "fine"} Hope this helps.', 0),
])
def test_choices_are_read_tolerantly(text: str, index: int) -> None:
    assert choice_from_reply(text, 5)[0] == index


@pytest.mark.parametrize(("text", "reason"), [
    ("", "empty"), ("   ", "empty"), ("I like the second one", "parse"),
    ('{"choice": true}', "parse"), ('{"choice": 7, "reason": "x"}', "choice-range"),
    ('{"choice": -1}', "choice-range"),
])
def test_unusable_choices_are_rejected_with_their_reason(text: str, reason: str) -> None:
    with pytest.raises(Rejected) as caught:
        choice_from_reply(text, 5)
    assert caught.value.reason == reason


def test_a_menu_run_makes_the_picked_edits_and_replays_from_cache(problem: Problem, serve: Any,
                                                                 tmp_path: Path) -> None:
    server = serve(smart)
    operator = operator_for(server, tmp_path / "cache")
    with operator:
        events = run(problem, operator, tmp_path / "a", operator.usage_summary)
    usage = operator.usage_summary()
    calls = len(server.requests)
    assert calls == 9 and usage["calls"] == 9 and usage["patches_accepted"] == 9
    assert usage["active_mode"] == "menu" and usage["accepted_share"] == 1.0
    picks = usage["menu"]
    assert picks["picks"] == 9
    assert picks["beat_random"] + picks["tied_random"] + picks["lost_to_random"] == 9
    children = [e for e in events if e["event"] == "candidate" and "llm" in e]
    assert len(children) == 9 and all(e["operator"] == "llm" and e["llm"]["mode"] == "menu"
                                      for e in children)
    bodies = by_prompt(server)
    for child in children:
        body = bodies[child["llm"]["prompt_hash"]]
        lines = menu_lines(body)
        assert child["llm"]["line"] == lines[child["llm"]["choice"]].split(". ", 1)[1]
        assert body["max_tokens"] <= 96
        schema = body["response_format"]["schema"]
        assert schema["properties"]["choice"]["enum"] == list(range(len(lines)))
    # the picked plans were scored once, for the menu: the children are cache hits
    assert all(e["cached"] for e in children)
    rerun = operator_for(server, tmp_path / "cache")
    with rerun:
        again = run(problem, rerun, tmp_path / "b", rerun.usage_summary)
    assert len(server.requests) == calls and rerun.usage_summary()["cache_hits"] == 9
    assert again == events


def test_the_random_pick_baseline_picks_from_the_very_same_menus(problem: Problem, serve: Any,
                                                                tmp_path: Path) -> None:
    server = serve(smart)
    operator = operator_for(server, tmp_path / "cache")
    with operator:
        events = run(problem, operator, tmp_path / "llm", operator.usage_summary, generations=1)
    picker = RandomPick(max_picks=9)
    baseline = run(problem, picker, tmp_path / "coin", picker.usage_summary, generations=1)
    mine = [e for e in events if e["event"] == "candidate" and "llm" in e]
    coin = [e for e in baseline if e["event"] == "candidate" and "llm" in e]
    assert len(mine) == len(coin) == 3 and picker.usage_summary()["picks_made"] == 3
    bodies = by_prompt(server)
    for ours, theirs in zip(mine, coin):
        body = bodies[ours["llm"]["prompt_hash"]]
        assert theirs["llm"]["choice"] == ours["llm"]["random_choice"]
        assert theirs["llm"]["line"] == menu_lines(body)[ours["llm"]["random_choice"]].split(". ", 1)[1]
    greedy = RandomPick(max_picks=9, greedy=True)
    run(problem, greedy, tmp_path / "greedy", greedy.usage_summary, generations=1)
    assert greedy.usage_summary()["menu"]["picked_best"] == 3


def improving_patch(body: dict[str, Any], seen: int) -> Scripted:
    """Swap the slow ledger export for the fast lookup when the parent has it, else add a log."""
    text = body["messages"][-1]["content"]
    for line in text.split("(improve this one)\n", 1)[1].splitlines():
        if line.startswith("{") and "payments.ledger_export" in line:
            tid = json.loads(line)["id"]
            return Scripted(json.dumps({"update": [{"id": tid, "tool": "payments.lookup"}],
                                        "reason": "faster"}))
    return Scripted(json.dumps({"add": [{"id": f"log{body['seed']}", "tool": "analytics.log_contact",
                                         "inputs": {"complaint": "$complaint"}}], "reason": "log"}))


def test_best_of_n_asks_n_independent_patches_of_one_plan(problem: Problem, weak: Candidate,
                                                         serve: Any, tmp_path: Path) -> None:
    server = serve(improving_patch)
    with operator_for(server, tmp_path / "cache", mode="patch") as operator:
        found = best_of_n(operator, problem, weak, 4, context_for(problem), seed=1)
    assert found.calls == 4 and len(server.requests) == 4
    assert len({body["seed"] for body in server.requests}) == 4
    assert found.accepted == 4 and found.improvements == 4 and found.tokens > 0
    assert RANKING.key(found.evaluation) < RANKING.key(weak.evaluation)
    with operator_for(server, tmp_path / "cache", mode="menu") as menu, pytest.raises(ValueError):
        best_of_n(menu, problem, weak, 4, context_for(problem), seed=1)


def broken(body: dict[str, Any], seen: int) -> Scripted:
    if "# Edits (pick one)" in body["messages"][-1]["content"]:
        return Scripted('{"choice": 0, "reason": "first"}')
    return Scripted('{"update": [{"id": "t1", "tool": "orders.get"')


def test_auto_uses_the_menu_for_a_model_known_to_be_small(problem: Problem, serve: Any,
                                                         tmp_path: Path) -> None:
    server = serve(broken)
    operator = make_llm_operator(server.url, "SmolLM2-135M-Instruct", cache_dir=tmp_path / "c",
                                 mode="auto", timeout=5.0)
    with operator:
        run(problem, operator, tmp_path / "a", operator.usage_summary, generations=1)
    assert operator.usage_summary()["active_mode"] == "menu"
    assert all("# Edits (pick one)" in body["messages"][-1]["content"] for body in server.requests)


def test_auto_switches_to_the_menu_once_patches_are_measured_to_fail(problem: Problem, serve: Any,
                                                                    tmp_path: Path) -> None:
    server = serve(broken)
    operator = make_llm_operator(server.url, "mystery-model", cache_dir=tmp_path / "c",
                                 mode="auto", timeout=5.0)
    with operator:
        run(problem, operator, tmp_path / "a", operator.usage_summary, generations=3)
    usage = operator.usage_summary()
    # 3 patch replies in generation 1 (too few to judge), 3 more in generation 2: all broken
    assert usage["switched_to_menu_after"] == 6 and usage["active_mode"] == "menu"
    kinds = ["menu" if "# Edits (pick one)" in b["messages"][-1]["content"] else "patch"
             for b in server.requests]
    assert kinds == ["patch"] * 6 + ["menu"] * 3
    assert usage["rejected_by_reason"] == {"parse": 6} and usage["menu"]["picks"] == 3


def test_a_resumed_auto_run_keeps_its_mode_and_its_menus(problem: Problem, serve: Any,
                                                        tmp_path: Path) -> None:
    server = serve(broken)

    def operator(cache: str) -> LLMOperator:
        return make_llm_operator(server.url, "mystery-model", cache_dir=tmp_path / cache,
                                 mode="auto", timeout=5.0, concurrency=1)

    def search(op: LLMOperator, out: str, generations: int, resume: bool = False) -> list[Any]:
        options = SearchOptions(population=6, keep=3, generations=generations, seed=5, jobs=1)
        with op:
            run_search(problem, options=options, operators=STRUCTURAL, proposer=op,
                       proposer_share=1.0, out_dir=tmp_path / out, resume=resume)
        lines = (tmp_path / out / "events.jsonl").read_text().splitlines()
        return [{**e, "llm": {k: v for k, v in e["llm"].items() if k != "latency_s"}}
                if "llm" in e else e for e in map(json.loads, lines)]

    whole_op = operator("a")
    whole = search(whole_op, "whole", 4)
    search(operator("b"), "split", 3)
    resumed = operator("b")
    split = search(resumed, "split", 4, resume=True)
    assert split == whole
    assert resumed.usage_summary()["switched_to_menu_after"] == 6
    assert resumed.usage_summary()["menu"] == whole_op.usage_summary()["menu"]
