"""``limits.max_llm_calls`` counts every run-time model call, not only the tools' and the LLM
replanner's: a model planner's answers (the agent's first plan, ``plan``, and each replan,
``replan``), an HTN operator's argument fill (``argfill``) and the hoisted decisions asked
before planning (``decide``). Against scripted endpoints on 127.0.0.1: each kind is counted in
``outcome.json`` and the journal, the endpoint never sees more than the budget, the run stops
``llm_budget`` naming the calls by purpose, and a resumed run (after a crash) spends the same
budget."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from test_htn_argfill import DOMAIN as ARGFILL_DOMAIN

from evolve.agent import PlanExecuteAgent, PlannerReplanner
from evolve.cli.main import cli
from evolve.execute import ExecuteOptions, resume_run, start_run
from evolve.execute.htn import planned
from evolve.execute.journal import Journal
from evolve.execute.state import RunState
from evolve.execute.tools import Call, ToolFailure, ToolFn
from evolve.llm.argfill import ArgFiller
from evolve.llm.cache import ReplyCache
from evolve.llm.client import ChatClient
from evolve.llm.decide import Decider
from evolve.llm.draft import LLMPlanner
from evolve.llm.testing import Script, Scripted, ScriptedServer
from evolve.model.plan import Plan
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict
from evolve.problems.htn import HtnProblem, htn_problem_from_dict

ROOT = Path(__file__).resolve().parents[1]


class Crash(Exception):
    """What a hook raises to stop a session where a process could be killed."""


def crash_at(task_id: str) -> Callable[[str, str], None]:
    def hook(point: str, tid: str) -> None:
        if point == "before_dispatch" and tid == task_id:
            raise Crash(tid)
    return hook


def folded(run: Path) -> dict[str, int]:
    """The model calls by purpose as a resume folds them from the journal."""
    journal = Journal(run / "journal.sqlite")
    try:
        return RunState.restore(journal).model_calls
    finally:
        journal.close()


# --- a model planner: the agent's first plan and its replans -------------------------------------

FALLBACKS = ("alt1", "alt2", "alt3", "alt4")


def fallbacks_problem(budget: int | None) -> Problem:
    """``a`` can be made five ways, every one of which fails: each failure asks for a replan."""
    makers = {name: {"duration": 10, "inputs": ["x"], "outputs": ["a"]} for name in ("make_a", *FALLBACKS)}
    return problem_from_dict({
        "name": "fallbacks", "initial": ["x"], "criteria": ["c"],
        **({"limits": {"max_llm_calls": budget}} if budget is not None else {}),
        "tools": {**makers, "make_c": {"duration": 10, "inputs": ["a"], "outputs": ["c"]}},
    })


def down(inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
    raise ToolFailure(f"{call.tool} is down")


TOOLS: dict[str, ToolFn] = {name: down for name in ("make_a", *FALLBACKS)}
TOOLS["make_c"] = lambda inputs, call: {"c": 1}
FIRST = {"tasks": [{"id": "s1", "tool": "make_a", "inputs": {"x": "$x"}, "on_failure": "replan"},
                   {"id": "s2", "tool": "make_c", "deps": ["s1"], "inputs": {"a": "$s1.a"}}]}
BAD = {"tasks": [{"id": "s9", "tool": "teleport", "inputs": {}}]}


class PlanningModel:
    """The scripted model planner: the first plan at once; on a replan a plan the validator
    rejects first, then, told why, one with the next fallback (which fails again)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.fallbacks = 0

    def __call__(self, body: dict[str, Any], seen: int) -> Scripted:
        text = body["messages"][-1]["content"]
        self.seen.append(text)
        if "# Why the plan is being revised" not in text:
            return Scripted(json.dumps(FIRST))
        if "rejected by the validator" not in text:
            return Scripted(json.dumps(BAD))
        tool = FALLBACKS[self.fallbacks]
        self.fallbacks += 1
        step = f"f{self.fallbacks}"
        return Scripted(json.dumps({"tasks": [
            {"id": step, "tool": tool, "inputs": {"x": "$x"}, "on_failure": "replan"},
            {"id": "s2", "tool": "make_c", "deps": [step], "inputs": {"a": f"${step}.a"}}]}))


def agent(server: ScriptedServer, out: Path, budget: int | None, max_replans: int = 10) -> PlanExecuteAgent:
    problem = fallbacks_problem(budget)
    planner = LLMPlanner(ChatClient(server.url, "small", timeout=10, backoff=0.01), problem)
    return PlanExecuteAgent(problem, TOOLS, planner=planner, max_steps=40, max_replans=max_replans,
                            out=out, report=False)


def test_each_answer_of_a_model_planner_is_counted_and_the_budget_stops_the_agent(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    model = PlanningModel()
    server = serve(model)
    res = agent(server, tmp_path / "run", budget=4).run()
    # the first plan: 1 answer; replan 1: rejected, then valid (2); replan 2: the 1 call left,
    # rejected: the budget, not the planner, ran out
    assert len(server.requests) == 4
    assert (res.status, res.reason) == ("failed", "llm_budget"), res.message
    assert res.outcome["model_calls"] == {"tools": 0, "plan": 1, "replan": 3, "decide": 0, "argfill": 0}
    assert res.message.startswith(
        "limits.max_llm_calls 4: 4 made (tools 0, replan 3, plan 1), and the planner replanner found no "
        "valid, complete plan without alt1, make_a with the last 1; ")
    assert folded(tmp_path / "run") == {"plan": 1, "replan": 3}
    again = agent(server, tmp_path / "run", budget=4).run()  # the same agent, the same folder
    assert again.reason == "llm_budget" and len(server.requests) == 4


def test_without_a_budget_the_model_planners_answers_are_still_counted(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    server = serve(PlanningModel())
    res = agent(server, tmp_path / "run", budget=None, max_replans=3).run()
    assert res.reason == "replan_budget", res.message  # 3 replans, every fallback failing
    assert res.outcome["model_calls"] == {"tools": 0, "plan": 1, "replan": 6, "decide": 0, "argfill": 0}
    assert len(server.requests) == 7


@pytest.mark.parametrize("budget", [0, 1])
def test_a_budget_too_small_for_the_first_plan_runs_nothing(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path, budget: int
) -> None:
    server = serve(lambda body, seen: Scripted(json.dumps(BAD)))
    res = agent(server, tmp_path / "run", budget=budget).run()
    assert (res.status, res.reason) == ("failed", "llm_budget")
    assert len(server.requests) == budget  # one answer allowed, not the planner's 3 attempts
    assert res.outcome["model_calls"] == {"plan": budget}
    assert not (tmp_path / "run" / "journal.sqlite").exists()
    if budget == 0:
        assert res.message == "limits.max_llm_calls 0: the first plan needs a model call and none may be made"
    else:
        assert res.message.startswith(
            "limits.max_llm_calls 1: 1 made (plan 1); no valid plan after 1 answer(s)")


def test_a_crash_after_a_model_replan_and_a_resume_spend_the_budget_once(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    model = PlanningModel()
    server = serve(model)
    problem = fallbacks_problem(3)

    def replanner() -> PlannerReplanner:
        planner = LLMPlanner(ChatClient(server.url, "small", timeout=10, backoff=0.01), problem)
        return PlannerReplanner(planner, "make c", TOOLS)

    plan = plan_from_dict({"tasks": [
        {"id": "t1", "tool": "make_a", "inputs": {"x": "$x"}, "on_failure": "replan"},
        {"id": "t2", "tool": "make_c", "deps": ["t1"], "inputs": {"a": "$t1.a"}}]})
    with pytest.raises(Crash):  # before the first replan's fallback (t3) is called
        start_run(problem, plan, tmp_path / "run", plan_source="p", tools_spec=None, tools=TOOLS,
                  options=ExecuteOptions(max_replans=10), replanner=replanner(),
                  hook=crash_at("t3")).run()
    assert len(server.requests) == 2 and folded(tmp_path / "run") == {"replan": 2}
    outcome = resume_run(tmp_path / "run", replanner=replanner(), tools=TOOLS).run()
    assert len(server.requests) == 3  # the resumed session had 1 call left, not 3
    assert outcome["reason"] == "llm_budget" and outcome["model_calls"]["replan"] == 3
    assert outcome["message"].startswith(
        "limits.max_llm_calls 3: 3 made (tools 0, replan 3), and the planner ")


# --- argument fills ---------------------------------------------------------------------------

NOTE = ARGFILL_DOMAIN  # the argument-fill tests' domain: one prompted operator
NOTE_TOOLS: dict[str, ToolFn] = {"fix": lambda inputs, call: {}, "report": lambda inputs, call: {}}


def note_problem(budget: int | None, decide: bool = False) -> HtnProblem:
    doc = copy.deepcopy(NOTE)
    if budget is not None:
        doc["limits"] = {"max_llm_calls": budget}
    if decide:  # a hoisted decision too, asked before planning
        doc["htn"]["state"]["tone"] = ""
        doc["htn"]["decide"] = {"tone": {"prompt": "Pick a tone.", "enum": ["dry", "warm"], "default": "dry"}}
    return htn_problem_from_dict(doc, "note.yaml")


def note_plan(problem: HtnProblem, retries: int) -> Plan:
    return Plan(tasks=tuple(replace(t, retries=retries) for t in planned(problem).tasks))


def filler(server: ScriptedServer, cache: ReplyCache | None = None) -> ArgFiller:
    return ArgFiller(ChatClient(server.url, "small", timeout=10), cache=cache)


def replies(*texts: str) -> Script:
    """The n-th request gets the n-th text (the last one after that)."""
    asked: list[dict[str, Any]] = []

    def script(body: dict[str, Any], seen: int) -> Scripted:
        asked.append(body)
        return Scripted(texts[min(len(asked), len(texts)) - 1])
    return script


def fill_run(server: ScriptedServer, out: Path, budget: int | None, retries: int = 0,
             cache: ReplyCache | None = None, hook: Any = None) -> dict[str, Any]:
    problem = note_problem(budget)
    return start_run(problem, note_plan(problem, retries), out, plan_source="p", tools_spec=None,
                     tools=NOTE_TOOLS, facts={"red": True}, arg_filler=filler(server, cache),
                     options=ExecuteOptions(max_steps=10), **({"hook": hook} if hook else {})).run()


def test_an_argument_fill_past_the_budget_is_not_asked(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    server = serve(replies('{"comment": "Fixed."}'))
    outcome = fill_run(server, tmp_path / "run", budget=0)
    assert server.requests == []
    assert (outcome["status"], outcome["reason"]) == ("failed", "llm_budget")
    assert outcome["message"] == ("limits.max_llm_calls 0: 0 made (tools 0, replan 0), and t2 (report, its "
                                  "arguments filled by the model) needs 1 more")
    assert outcome["tasks"]["t1"]["status"] == "done" and outcome["tasks"]["t2"]["status"] == "pending"


@pytest.mark.parametrize(("budget", "reason"), [(1, "llm_budget"), (2, "goal_met")])
def test_every_ask_of_an_argument_fill_is_counted(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path, budget: int, reason: str
) -> None:
    # the first reply is refused (a retryable failure), the retry asks again
    server = serve(replies('{"note": "wrong name"}', '{"comment": "Fixed."}'))
    outcome = fill_run(server, tmp_path / "run", budget=budget, retries=1)
    assert outcome["reason"] == reason, outcome["message"]
    assert len(server.requests) == budget
    assert outcome["model_calls"] == {"tools": 0, "replan": 0, "decide": 0, "argfill": budget}
    assert folded(tmp_path / "run") == {"argfill": budget}
    if reason == "llm_budget":
        assert outcome["message"] == ("limits.max_llm_calls 1: 1 made (tools 0, replan 0, argfill 1), and t2 "
                                      "(report, its arguments filled by the model) needs 1 more")


def test_a_fill_from_the_reply_cache_is_given_back(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    server = serve(replies('{"comment": "Fixed."}'))
    cache = ReplyCache(tmp_path / "cache")
    assert fill_run(server, tmp_path / "first", budget=1, cache=cache)["model_calls"]["argfill"] == 1
    again = fill_run(server, tmp_path / "again", budget=1, cache=cache)
    assert len(server.requests) == 1 and again["reason"] == "goal_met"
    assert again["model_calls"]["argfill"] == 0 and again["arg_fills"][0]["source"] == "cache"
    assert folded(tmp_path / "again") == {"argfill": 0}  # counted at dispatch, given back at the result


def test_a_crash_after_a_fill_and_a_resume_spend_the_budget_once(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    server = serve(replies('{"note": "wrong name"}', '{"comment": "Fixed."}'))

    def hook(point: str, tid: str) -> None:
        if point == "before_commit" and tid == "t2":  # the refused fill's result is lost
            raise Crash(tid)

    with pytest.raises(Crash):
        fill_run(server, tmp_path / "run", budget=1, retries=1, hook=hook)
    assert len(server.requests) == 1 and folded(tmp_path / "run") == {"argfill": 1}
    outcome = resume_run(tmp_path / "run", tools=NOTE_TOOLS, arg_filler=filler(server)).run()
    assert len(server.requests) == 1  # the ask the crash cut off stays spent: none is left
    assert outcome["reason"] == "llm_budget" and outcome["model_calls"]["argfill"] == 1


# --- hoisted decisions ------------------------------------------------------------------------

def test_a_hoisted_decision_spends_the_budget_of_the_run_it_starts(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    server = serve(replies('{"tone": "warm"}', '{"comment": "Fixed."}'))
    problem = note_problem(1, decide=True)
    decided = Decider(ChatClient(server.url, "small", timeout=10)).decide(
        problem.htn(), budget=problem.limits.max_llm_calls)
    assert len(server.requests) == 1 and decided.records[0]["value"] == "warm"
    with pytest.raises(Crash):  # crashed before its first call: the decision is journaled already
        start_run(problem, note_plan(problem, 0), tmp_path / "run", plan_source="p", tools_spec=None,
                  tools=NOTE_TOOLS, facts={"red": True}, arg_filler=filler(server),
                  decisions=decided.records, hook=crash_at("t1")).run()
    assert folded(tmp_path / "run") == {"decide": 1}
    outcome = resume_run(tmp_path / "run", tools=NOTE_TOOLS, arg_filler=filler(server)).run()
    assert len(server.requests) == 1  # the fill was not asked: the decision spent the budget
    assert outcome["reason"] == "llm_budget"
    assert outcome["model_calls"] == {"tools": 0, "replan": 0, "decide": 1, "argfill": 0}
    assert outcome["message"] == ("limits.max_llm_calls 1: 1 made (tools 0, replan 0, decide 1), and t2 "
                                  "(report, its arguments filled by the model) needs 1 more")


DOCTOR = yaml.safe_load((ROOT / "examples" / "htn" / "pr_doctor.yaml").read_text())


def doctor(tmp_path: Path, server: ScriptedServer, budget: int) -> Any:
    path = tmp_path / "doctor.yaml"
    path.write_text(yaml.safe_dump({**DOCTOR, "limits": {"max_llm_calls": budget}}, sort_keys=False))
    return CliRunner().invoke(cli, ["execute", str(path), "--simulate", "--out", str(tmp_path / "run"),
                                    "--llm-base-url", server.url, "--llm-model", "small"],
                              env={"XDG_CACHE_HOME": str(tmp_path / "cache")})


def test_decisions_past_the_budget_are_not_asked_and_the_run_does_not_start(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    server = serve(replies('{"failure_class": "flaky"}'))
    result = doctor(tmp_path, server, 0)
    assert result.exit_code == 1 and server.requests == []
    assert ("llm_budget: limits.max_llm_calls 0, and the hoisted decisions failure_class need 1 model "
            "call(s) before planning; raise the budget or give their values with --input") in result.output
    assert not (tmp_path / "run" / "journal.sqlite").exists()


def test_a_decision_within_the_budget_is_journaled_with_the_run(
    serve: Callable[[Script], ScriptedServer], tmp_path: Path
) -> None:
    server = serve(replies('{"failure_class": "flaky"}'))
    result = doctor(tmp_path, server, 1)
    assert result.exit_code == 0, result.output
    outcome = json.loads((tmp_path / "run" / "outcome.json").read_text())
    assert outcome["model_calls"]["decide"] == len(server.requests) == 1
    assert folded(tmp_path / "run") == {"decide": 1}
