"""The search over decompositions, and the ChatHTN fallback against a scripted endpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from evolve import SearchOptions, run_search
from evolve.cli.main import cli
from evolve.llm.htn import make_htn_fallback
from evolve.llm.testing import Scripted, ScriptedServer
from evolve.problems import load_problem
from evolve.problems.htn import (
    Decomposition,
    HtnProblem,
    NoPlan,
    Planner,
    domain_from_dict,
    htn_problem_from_dict,
    replay,
)

ROOT = Path(__file__).resolve().parents[1]
SHIP = ROOT / "examples" / "htn" / "ship_change.yaml"


def events(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]


def test_the_search_picks_the_faster_method_listed_second(tmp_path: Path) -> None:
    problem = load_problem(SHIP)
    assert isinstance(problem, HtnProblem)
    first = Planner(problem.htn()).plan()
    assert isinstance(first, Decomposition)
    assert [s.operator for s in first.steps][2] == "run_full_ci"  # file order: the slow method
    outcome = run_search(problem, options=SearchOptions(jobs=1, generations=3, seed=0), out_dir=tmp_path)
    best = outcome.result.best
    assert best.evaluation.feasible and best.evaluation.values["makespan"] == 500
    assert [t.tool for t in best.plan.tasks][:4] == ["open_editor", "write_tests", "run_tests", "open_pr"]
    c0 = next(e for e in events(tmp_path) if e["event"] == "candidate")
    assert c0["operator"] == "htn_first" and c0["values"]["makespan"] == 1130
    assert best.meta["htn"]["choices"] == {"ship_change": 1}


# -- the fallback -------------------------------------------------------------------------------

DOMAIN = {"name": "deliver", "htn": {
    "state": {"ordered": True}, "goal": "deliver",
    "operators": {
        "buy_materials": {"duration": 30, "effects": {"set": {"materials": True}}},
        "assemble": {"duration": 50, "pre": [{"has": "materials"}], "effects": {"set": {"prepared": True}}},
        "ship": {"duration": 20, "pre": [{"has": "prepared"}], "effects": {"set": {"shipped": True}}}},
    "methods": {
        "deliver_m": {"task": "deliver", "subtasks": ["prepare", "ship"]},
        "prepare_from_stock": {"task": "prepare", "pre": [{"has": "in_stock"}], "subtasks": ["assemble"]}},
    "tasks": {"prepare": {"achieves": [{"has": "prepared"}]}}}}


def answering(subtasks: list[str]) -> Any:
    def script(body: dict[str, Any], seen: int) -> Scripted:
        return Scripted(json.dumps({"subtasks": subtasks, "reason": "no stock: buy, then assemble"}))
    return script


def plan_with(server: ScriptedServer, cache: Path) -> tuple[Any, list[dict[str, Any]]]:
    domain, _ = domain_from_dict(DOMAIN)
    with make_htn_fallback(server.url, "scripted", cache_dir=cache) as fallback:
        planner = Planner(domain, fallback)
        outcome = planner.plan()
        return outcome, planner.learned.records


def test_an_applicable_proposal_is_accepted_learned_and_cached(tmp_path: Path) -> None:
    with ScriptedServer(answering(["buy_materials", "assemble"])) as server:
        outcome, records = plan_with(server, tmp_path / "cache")
        assert len(server.requests) == 1
        assert isinstance(outcome, Decomposition)
        assert [s.operator for s in outcome.steps] == ["buy_materials", "assemble", "ship"]
        assert replay(domain_from_dict(DOMAIN)[0], outcome.steps) == []
        assert records[0]["accepted"] and records[0]["method"] == "prepare_learned1"
        assert records[0]["cached"] is False
        prompt = server.requests[0]["messages"][1]["content"]
        assert "Task to decompose: prepare" in prompt and '"ordered": true' in prompt
        again, records = plan_with(server, tmp_path / "cache")  # a new run, the same cache
        assert len(server.requests) == 1 and records[0]["cached"] is True
        assert isinstance(again, Decomposition) and again.steps == outcome.steps


def test_a_proposal_naming_an_unknown_operator_is_rejected(tmp_path: Path) -> None:
    with ScriptedServer(answering(["buy_stuff", "assemble"])) as server:
        outcome, records = plan_with(server, tmp_path)
    assert isinstance(outcome, NoPlan)
    assert records[0]["rejected"] == "unknown-operator" and "'buy_stuff'" in records[0]["detail"]


def test_a_proposal_that_fails_a_precondition_is_rejected(tmp_path: Path) -> None:
    with ScriptedServer(answering(["assemble"])) as server:
        outcome, records = plan_with(server, tmp_path)
    assert isinstance(outcome, NoPlan)
    assert records[0]["rejected"] == "precondition"
    assert records[0]["detail"].startswith("assemble needs {has: materials}")


def test_a_proposal_that_does_not_achieve_the_task_is_rejected(tmp_path: Path) -> None:
    with ScriptedServer(answering(["buy_materials"])) as server:
        outcome, records = plan_with(server, tmp_path)
    assert isinstance(outcome, NoPlan)
    assert records[0]["rejected"] == "not-achieved" and "{has: prepared}" in records[0]["detail"]


def test_a_reply_that_is_not_json_is_rejected(tmp_path: Path) -> None:
    with ScriptedServer(lambda body, seen: Scripted("I would buy materials first.")) as server:
        _, records = plan_with(server, tmp_path)
    assert records[0]["rejected"] == "parse"


def test_evolve_run_with_the_fallback_records_it_and_a_rerun_makes_no_calls(tmp_path: Path) -> None:
    data = json.loads(json.dumps(DOMAIN))
    # a second way to deliver (slower, listed second) keeps a plan when the proposal is refused
    data["htn"]["operators"]["courier"] = {"duration": 400, "effects": {"set": {"shipped": True}}}
    data["htn"]["methods"]["deliver_by_courier"] = {"task": "deliver", "subtasks": ["courier"]}
    path = tmp_path / "deliver.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    cache = tmp_path / "cache"
    with ScriptedServer(answering(["buy_materials", "assemble"])) as server:
        outs = []
        for name in ("one", "two"):
            out = tmp_path / name
            result = CliRunner().invoke(cli, [
                "run", str(path), "--jobs", "1", "--generations", "2", "--out", str(out), "--no-report",
                "--htn-fallback", "llm", "--llm-base-url", server.url, "--llm-model", "scripted",
                "--llm-cache-dir", str(cache)])
            assert result.exit_code == 0, result.output
            outs.append(out)
        assert len(server.requests) == 1
    summaries = [json.loads((o / "summary.json").read_text()) for o in outs]
    assert [s["htn_fallback"]["llm"]["calls"] for s in summaries] == [1, 0]
    assert summaries[1]["htn_fallback"]["llm"]["cache_hits"] == 1
    assert summaries[0]["htn_fallback"]["learned_methods"] == ["prepare_learned1"]
    assert summaries[0]["best"]["makespan"] == 100  # buy, assemble, ship beats the courier
    asked = [e for e in events(outs[0]) if e["event"] == "candidate" and "fallback" in e]
    assert len(asked) == 1 and asked[0]["fallback"][0]["accepted"] is True

    with ScriptedServer(answering(["assemble"])) as server:
        out = tmp_path / "refused"
        result = CliRunner().invoke(cli, [
            "run", str(path), "--jobs", "1", "--generations", "1", "--out", str(out), "--no-report",
            "--operator", "llm", "--llm-base-url", server.url, "--llm-model", "scripted",
            "--llm-cache-dir", str(tmp_path / "cache2")])
        assert result.exit_code == 0, result.output
    rejected = [r for e in events(out) if e["event"] == "candidate" for r in e.get("fallback", ())]
    assert rejected[0]["rejected"] == "precondition" and rejected[0]["accepted"] is False
    assert json.loads((out / "summary.json").read_text())["best"]["makespan"] == 400


def test_the_fallback_needs_an_endpoint_and_an_htn_domain(tmp_path: Path) -> None:
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(DOMAIN, sort_keys=False))
    result = CliRunner().invoke(cli, ["run", str(path), "--htn-fallback", "llm",
                                      "--out", str(tmp_path / "r")])
    assert result.exit_code == 2 and "needs --llm-base-url and --llm-model" in result.output
    plain = CliRunner().invoke(cli, ["run", str(ROOT / "examples" / "refund.yaml"), "--htn-fallback", "llm",
                                     "--out", str(tmp_path / "r2")])
    assert plain.exit_code == 2 and "is for HTN domains" in plain.output
    assert htn_problem_from_dict(DOMAIN).criteria == ("__htn_decomposed__",)
