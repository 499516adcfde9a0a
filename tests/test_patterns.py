"""The five workflow patterns against scripted models: what runs, what is skipped, the answer,
and that each run is a real executor run (journal, outcome, report) that can be continued."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from evolve.llm.client import ChatClient
from evolve.llm.testing import Script, Scripted, ScriptedServer
from evolve.patterns import (
    evaluator_optimizer,
    orchestrator_workers,
    parallel_vote,
    prompt_chain,
    route,
)


def statuses(out: Path) -> dict[str, str]:
    outcome = json.loads((out / "outcome.json").read_text())
    return {tid: task["status"] for tid, task in outcome["tasks"].items()}


def test_prompt_chain_feeds_each_output_to_the_next_step(tmp_path: Path) -> None:
    prompts: list[str] = []

    def model(prompt: str) -> str:
        prompts.append(prompt)
        return f"<{prompt}>"

    res = prompt_chain("topic", model, ["outline {input}", str.upper, "polish"], out=tmp_path / "run")
    assert (res.status, res.reason) == ("completed", "goal_met")
    assert prompts == ["outline topic", "polish\n\n<OUTLINE TOPIC>"]
    assert res.value == "<polish\n\n<OUTLINE TOPIC>>"
    assert statuses(res.out) == {"step1": "done", "step2": "done", "step3": "done"}
    assert (res.out / "journal.sqlite").is_file() and (res.out / "report.html").is_file()


def test_a_gate_that_raises_stops_the_chain(tmp_path: Path) -> None:
    from evolve.execute.tools import ToolFailure

    def gate(text: str) -> str:
        raise ToolFailure("fewer than three points")

    res = prompt_chain("topic", lambda p: p, ["outline {input}", gate, "draft"], out=tmp_path / "run")
    assert (res.status, res.reason, res.value) == ("failed", "task_failed", None)
    assert statuses(res.out)["step3"] != "done"


HANDLERS: dict[str, Callable[[str], Any]] = {
    "billing": lambda text: "we are checking the charges",
    "technical": lambda text: "send us the crash log",
}


def classify(text: str) -> str:
    return "billing" if "charged" in text else "technical" if "crash" in text else "shipping"


def test_route_dispatches_to_the_handler_of_the_label(tmp_path: Path) -> None:
    res = route("the app crashes on start", classify, HANDLERS, out=tmp_path / "run")
    assert (res.status, res.value) == ("completed", "send us the crash log")
    assert statuses(res.out) == {"classify": "done", "handle_billing": "skipped",
                                 "handle_technical": "done", "escalate": "skipped"}


def test_an_unknown_label_goes_to_the_default_handler(tmp_path: Path) -> None:
    handlers = {**HANDLERS, "default": lambda text: f"a person will read: {text}"}
    res = route("where is my parcel", classify, handlers, out=tmp_path / "run")
    assert (res.status, res.reason) == ("completed", "goal_met")
    assert res.value == "a person will read: where is my parcel"
    assert statuses(res.out)["handle_default"] == "done"


def test_an_unknown_label_without_a_default_waits_for_a_person(tmp_path: Path) -> None:
    """The executor pauses for a person (``by: human``, no callable): the run waits, the person
    answers with ``evolve answer``, and the same call goes on to the reply they gave."""
    from click.testing import CliRunner

    from evolve.cli.main import cli

    res = route("where is my parcel", classify, HANDLERS, out=tmp_path / "run")
    assert (res.status, res.reason, res.value) == ("waiting", "awaiting_human", None)
    assert "escalate waits for a person to give reply" in res.message and "evolve answer" in res.message
    outcome = json.loads((res.out / "outcome.json").read_text())
    assert outcome["tasks"]["escalate"]["status"] == "waiting"
    assert outcome["reason"] == "waiting"  # what the executor itself says
    [item] = json.loads(CliRunner().invoke(cli, ["pending", str(res.out), "--json"]).output)
    assert (item["task"], item["kind"]) == ("escalate", "answer")
    answered = CliRunner().invoke(cli, ["answer", str(res.out), "escalate", "--output",
                                        '{"reply": "your parcel left the depot today"}'])
    assert answered.exit_code == 0, answered.output
    again = route("where is my parcel", classify, HANDLERS, out=tmp_path / "run")
    assert (again.status, again.reason) == ("completed", "goal_met")
    assert again.value == "your parcel left the depot today"


def test_route_refuses_a_label_that_is_not_a_name() -> None:
    with pytest.raises(ValueError, match="is not a name"):
        route("x", classify, {"it's": lambda text: text})


def test_parallel_vote_takes_the_majority_of_n_samples(tmp_path: Path) -> None:
    answers = iter(["no", "yes", "no", "no", "yes"])
    lock = threading.Lock()
    calls: list[str] = []

    def model(prompt: str) -> str:
        with lock:
            calls.append(prompt)
            return next(answers)

    res = parallel_vote("Is 391 prime?", model, n=5, out=tmp_path / "run")
    assert res.value == {"answer": "no", "votes": 3, "of": 5}
    assert calls == ["Is 391 prime?"] * 5


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    def script(body: dict[str, Any], seen: int) -> Scripted:
        return Scripted("yes" if "prime" in body["messages"][0]["content"] else "no")

    answer: Script = script
    with ScriptedServer(answer) as running:
        yield running


def test_parallel_vote_asks_an_openai_compatible_endpoint(tmp_path: Path, server: ScriptedServer) -> None:
    with ChatClient(server.url, "scripted", timeout=5.0) as client:
        res = parallel_vote("Is 7 prime?", client, n=3, out=tmp_path / "run")
    assert res.value == {"answer": "yes", "votes": 3, "of": 3}
    assert len(server.requests) == 3
    assert server.requests[0]["messages"] == [{"role": "user", "content": "Is 7 prime?"}]


def test_orchestrator_workers_runs_only_the_picked_specialists(tmp_path: Path) -> None:
    ran: list[str] = []

    def worker(name: str) -> Callable[[str], str]:
        def work(subtask: str) -> str:
            ran.append(name)
            return f"{name} did {subtask}"
        return work

    workers = {name: worker(name) for name in ("research", "code", "docs")}
    res = orchestrator_workers(
        "fix the crash",
        workers,
        lambda task, results: {"task": task, "from": sorted(results), "results": results},
        orchestrator=lambda task, names: {"research": "find it", "code": "fix it"},
        out=tmp_path / "run",
    )
    assert res.value == {"task": "fix the crash", "from": ["code", "research"],
                         "results": {"research": "research did find it", "code": "code did fix it"}}
    assert sorted(ran) == ["code", "research"]
    assert statuses(res.out)["worker_docs"] == "skipped"


def drafts(task: str, previous: str | None, feedback: str | None) -> str:
    return "draft 1" if previous is None else f"draft {int(previous.split()[1]) + 1} ({feedback})"


def pass_from(round_: int) -> Callable[[str, Any], str]:
    return lambda task, draft: "PASS" if int(draft.split()[1]) >= round_ else "FAIL: shorter"


def test_evaluator_optimizer_loops_until_pass_at_round_3_of_5(tmp_path: Path) -> None:
    res = evaluator_optimizer("a tagline", drafts, pass_from(3), max_iter=5, out=tmp_path / "run")
    assert (res.status, res.reason) == ("completed", "goal_met")
    assert res.value == {"draft": "draft 3 (FAIL: shorter)", "passed": True, "rounds": 3}
    # a bounded loop: one revision per further round, not five unrolled copies
    assert [d.added for d in res.run.revisions] == [
        ("propose_2", "evaluate_2", "accept_2"), ("propose_3", "evaluate_3", "accept_3")]
    assert "accept_1 assumes" in res.run.revisions[0].reason
    assert len(res.run.plans[0].tasks) == 3


def test_evaluator_optimizer_stops_after_max_iter_rounds_without_pass(tmp_path: Path) -> None:
    res = evaluator_optimizer("a tagline", drafts, pass_from(99), max_iter=3, out=tmp_path / "run")
    assert (res.status, res.reason) == ("failed", "replan_budget")
    assert res.value == {"draft": "draft 3 (FAIL: shorter)", "passed": False, "rounds": 3}
    assert "no PASS in 3 round(s) of 3" in res.message


def test_a_pattern_called_again_on_its_folder_continues_its_run(tmp_path: Path) -> None:
    """The run folder is the state: the same call with the same ``out`` resumes the journaled
    run (here already complete), and no step is run again."""
    calls: list[str] = []

    def model(prompt: str) -> str:
        calls.append(prompt)
        return prompt.upper()

    out = tmp_path / "run"
    first = prompt_chain("topic", model, ["outline {input}", "draft {input}"], out=out)
    again = prompt_chain("topic", model, ["outline {input}", "draft {input}"], out=out)
    assert first.value == again.value == "DRAFT OUTLINE TOPIC"
    assert calls == ["outline topic", "draft OUTLINE TOPIC"]


def test_the_patterns_demo_runs_all_five(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from evolve.cli.main import cli

    result = CliRunner().invoke(cli, ["patterns", "demo", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    rows = {(r["pattern"], r["reason"]) for r in json.loads(result.output)}
    assert rows == {("prompt-chain", "goal_met"), ("route", "goal_met"), ("route", "awaiting_human"),
                    ("parallel-vote", "goal_met"), ("orchestrator-workers", "goal_met"),
                    ("evaluator-optimizer", "goal_met")}
    assert len(list(tmp_path.glob("*/report.html"))) == 6
