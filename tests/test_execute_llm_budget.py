"""``limits.max_llm_calls`` bounds the LLM replanner's model calls too: against a real scripted
endpoint on 127.0.0.1, a replan past the budget is not asked (the endpoint never sees it), the run
ends ``llm_budget`` naming the calls by purpose, and the count is the journal's, so neither a
resume nor a crash and a resume spends the budget again."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from evolve.execute import ExecuteOptions, ProposerReplanner, resume_run, start_run
from evolve.execute.journal import Journal
from evolve.execute.state import RunState
from evolve.llm import make_llm_operator
from evolve.llm.testing import Scripted, ScriptedServer
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict
from evolve.search.algorithm import Candidate
from evolve.search.loop import Offspring, ProposalContext

FALLBACKS = ("alt1", "alt2", "alt3", "alt4")


def problem_doc(max_llm_calls: int, make_c_llm_calls: int = 0) -> dict[str, Any]:
    """``a`` can be made five ways, every one of which fails: each failure asks for a replan."""
    makers = {name: {"duration": 10, "inputs": ["x"], "outputs": ["a"]} for name in ("make_a", *FALLBACKS)}
    return {
        "name": "fallbacks",
        "initial": ["x"],
        "criteria": ["c"],
        "limits": {"max_llm_calls": max_llm_calls},
        "tools": {
            **makers,
            "make_c": {"duration": 10, "inputs": ["a"], "outputs": ["c"], "llm_calls": make_c_llm_calls},
        },
    }


PLAN = {
    "tasks": [
        {"id": "t1", "tool": "make_a", "inputs": {"x": "$x"}, "on_failure": "replan"},
        {"id": "t2", "tool": "make_c", "deps": ["t1"], "inputs": {"a": "$t1.a"}},
    ]
}
FAIL = {name: 1.0 for name in ("make_a", *FALLBACKS)}


class Endpoint:
    """The scripted model: its n-th request proposes the n-th fallback (which fails again) for
    the pending ``make_c`` task of the plan it is shown."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any], count: int) -> Scripted:
        self.seen.append(body)
        tool = FALLBACKS[min(len(self.seen), len(FALLBACKS)) - 1]
        found = re.search(r'"id": "(t\d+)", "tool": "make_c"', body["messages"][-1]["content"])
        assert found is not None
        patch = {
            "add": [{"id": "n1", "tool": tool, "inputs": {"x": "$x"}, "on_failure": "replan"}],
            "update": [{"id": found.group(1), "deps": ["n1"], "inputs": {"a": "$n1.a"}}],
            "reason": f"try {tool}",
        }
        return Scripted(json.dumps(patch))


@contextmanager
def llm_replanner(tmp_path: Path, endpoint: Endpoint) -> Iterator[ProposerReplanner]:
    with ScriptedServer(endpoint) as server:
        operator = make_llm_operator(server.url, "scripted-model", cache_dir=tmp_path / "cache",
                                     mode="patch", timeout=5.0, backoff=0.01)
        with operator:
            yield ProposerReplanner(operator)


def first_session(tmp_path: Path, replanner: Any, budget: int, make_c_llm_calls: int = 0,
                  hook: Any = None, fail: dict[str, float] = FAIL) -> dict[str, Any]:
    executor = start_run(
        problem_from_dict(problem_doc(budget, make_c_llm_calls)), plan_from_dict(PLAN), tmp_path / "run",
        plan_source="plan", tools_spec=None, simulate=True, fail_rates=fail,
        options=ExecuteOptions(max_replans=10), replanner=replanner, **({"hook": hook} if hook else {}),
    )
    return executor.run()


def folded(tmp_path: Path) -> dict[str, int]:
    """The model calls by purpose as a resume folds them from the journal."""
    journal = Journal(tmp_path / "run" / "journal.sqlite")
    try:
        return RunState.restore(journal).model_calls
    finally:
        journal.close()


@pytest.mark.parametrize("budget", [0, 1, 2, 3])
def test_the_endpoint_sees_at_most_the_budget_and_the_run_ends_llm_budget(
    tmp_path: Path, budget: int
) -> None:
    endpoint = Endpoint()
    with llm_replanner(tmp_path, endpoint) as replanner:
        outcome = first_session(tmp_path, replanner, budget)
    assert len(endpoint.seen) == budget
    assert (outcome["status"], outcome["reason"]) == ("failed", "llm_budget"), outcome["message"]
    assert outcome["model_calls"] == {"tools": 0, "replan": budget, "decide": 0, "argfill": 0}
    assert outcome["replans"] == budget  # the replan past the budget was not tried
    assert folded(tmp_path) == ({"replan": budget} if budget else {})
    assert outcome["message"].startswith(
        f"limits.max_llm_calls {budget}: {budget} made (tools 0, replan {budget}), "
        f"and the replan of revision {budget + 1} needs 1 more; "
    )


@pytest.mark.parametrize(("budget", "reason", "tools"), [(2, "llm_budget", 0), (3, "goal_met", 2)])
def test_tool_calls_and_replans_spend_one_budget(
    tmp_path: Path, budget: int, reason: str, tools: int
) -> None:
    # only make_a fails: the first fallback makes a, and make_c costs 2 model calls
    endpoint = Endpoint()
    with llm_replanner(tmp_path, endpoint) as replanner:
        outcome = first_session(tmp_path, replanner, budget, make_c_llm_calls=2, fail={"make_a": 1.0})
    assert len(endpoint.seen) == 1 and outcome["reason"] == reason, outcome["message"]
    assert outcome["model_calls"] == {"tools": tools, "replan": 1, "decide": 0, "argfill": 0}
    if reason == "llm_budget":
        assert outcome["message"] == (
            "limits.max_llm_calls 2: 1 made (tools 0, replan 1), and t4 (make_c) needs 2 more"
        )


def test_a_resumed_run_does_not_reset_the_budget(tmp_path: Path) -> None:
    endpoint = Endpoint()
    with llm_replanner(tmp_path, endpoint) as replanner:
        first = first_session(tmp_path, replanner, 2)
        again = resume_run(tmp_path / "run", replanner=replanner).run()
    assert first["reason"] == again["reason"] == "llm_budget"
    assert len(endpoint.seen) == 2  # the resumed session asked nothing
    calls = {"tools": 0, "replan": 2, "decide": 0, "argfill": 0}
    assert again["model_calls"] == first["model_calls"] == calls


class Crash(Exception):
    pass


def test_a_crash_after_a_replan_and_a_resume_spend_the_budget_once(tmp_path: Path) -> None:
    endpoint = Endpoint()

    def hook(point: str, task_id: str) -> None:
        if point == "before_dispatch" and task_id == "t3":  # the first fallback, added by the first replan
            raise Crash(task_id)

    with llm_replanner(tmp_path, endpoint) as replanner:
        with pytest.raises(Crash):
            first_session(tmp_path, replanner, 2, hook=hook)
        assert len(endpoint.seen) == 1
        assert folded(tmp_path) == {"replan": 1}  # journaled before the endpoint was asked
        outcome = resume_run(tmp_path / "run", replanner=replanner).run()
    assert len(endpoint.seen) == 2
    assert outcome["reason"] == "llm_budget" and outcome["model_calls"]["replan"] == 2


class NoModel:
    """A proposer that is no model: it proposes nothing and makes no call."""

    name = "none"

    def propose(self, problem: Problem, parents: Sequence[Candidate], indices: Sequence[int],
                generation: int, seed: int, context: ProposalContext) -> list[Offspring]:
        return [Offspring(None) for _ in indices]


def test_a_replan_that_made_no_model_call_gives_back_what_was_counted(tmp_path: Path) -> None:
    outcome = first_session(tmp_path, ProposerReplanner(NoModel()), 1)
    assert outcome["reason"] == "no_plan"
    assert outcome["model_calls"] == {"tools": 0, "replan": 0, "decide": 0, "argfill": 0}
