"""In-loop argument filling (mode B): a prompted operator's arguments come from a small model
(scripted, on 127.0.0.1), are checked, recorded before the tool runs, and survive SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from evolve.execute import start_run
from evolve.execute.executor import ExecuteOptions
from evolve.execute.htn import planned
from evolve.llm.argfill import ArgFiller
from evolve.llm.client import ChatClient
from evolve.llm.testing import Script, Scripted, ScriptedServer
from evolve.model.errors import InputError
from evolve.model.plan import Plan
from evolve.problems.htn import domain_from_dict, htn_problem_from_dict
from evolve.report.execution import write_execution_report

ROOT = Path(__file__).resolve().parents[1]

DOMAIN = {"name": "note", "htn": {
    "state": {"red": True},
    "goal": "heal",
    "operators": {
        "fix": {"tool": "repo.fix", "duration": 1, "pre": [{"has": "red"}],
                "effects": {"set": {"strategy": "strip-then-append"}, "unset": ["red"]}},
        "report": {"tool": "pr.comment", "duration": 1, "pre": [{"not": {"has": "red"}}],
                   "prompt": "The test was healed by {{strategy}}. Write one sentence for the PR.",
                   "args": {"comment": "string"}, "effects": {"set": {"reported": True}}},
    },
    "methods": {"heal_m": {"task": "heal", "subtasks": ["fix", "report"]}},
    "tasks": {"heal": {"achieves": [{"has": "reported"}]}},
}}


def run(server: ScriptedServer, tmp_path: Path, retries: int = 0) -> tuple[dict[str, Any], list[Any]]:
    problem = htn_problem_from_dict(DOMAIN, "note.yaml")
    seen: list[Any] = []

    def fix(inputs: dict[str, Any], call: Any) -> dict[str, Any]:
        return {}

    def report(inputs: dict[str, Any], call: Any) -> dict[str, Any]:
        seen.append(dict(inputs))
        return {}

    plan = planned(problem)
    plan = Plan(tasks=tuple(replace(t, retries=retries) for t in plan.tasks))
    filler = ArgFiller(ChatClient(server.url, "small", timeout=10), cache=None)
    outcome = start_run(problem, plan, tmp_path / "run", plan_source="p", tools_spec=None,
                        tools={"fix": fix, "report": report}, facts={"red": True}, arg_filler=filler,
                        options=ExecuteOptions(max_steps=10)).run()
    return outcome, seen


def test_the_arguments_reach_the_tool(serve: Callable[[Script], ScriptedServer], tmp_path: Path) -> None:
    server = serve(lambda body, seen: Scripted('{"comment": "Deduplicated the footer."}'))
    outcome, seen = run(server, tmp_path)
    assert outcome["reason"] == "goal_met", outcome["message"]
    assert seen == [{"comment": "Deduplicated the footer."}]
    prompt = server.requests[0]["messages"][1]["content"]
    assert "healed by strip-then-append" in prompt  # rendered from the live state
    ledger = [json.loads(line) for line in (tmp_path / "run" / "argfill.jsonl").read_text().splitlines()]
    assert ledger == [{"task": "t2", "attempt": 1, "args": {"comment": "Deduplicated the footer."},
                       "cached": False, "requests": 1}]
    assert outcome["model_calls"]["argfill"] == len(server.requests) == 1
    assert outcome["arg_fills"] == [{"task": "t2", "attempt": 1, "source": "model", "accepted": True,
                                     "args": {"comment": "Deduplicated the footer."}}]


def test_a_bad_reply_is_a_retryable_failure(serve: Callable[[Script], ScriptedServer],
                                            tmp_path: Path) -> None:
    replies = iter(['{"note": "wrong name"}', '{"comment": "Fixed."}'])
    server = serve(lambda body, seen: Scripted(next(replies)))
    outcome, seen = run(server, tmp_path, retries=1)
    assert outcome["reason"] == "goal_met", outcome["message"]
    assert seen == [{"comment": "Fixed."}] and len(server.requests) == 2
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    errors = [e for e in events if e["event"] == "step.error"]
    assert len(errors) == 1 and "the model's arguments were refused (schema" in errors[0]["error"]
    assert errors[0]["next"] == "retry"
    assert outcome["model_calls"]["argfill"] == len(server.requests) == 2  # the refused ask counts too
    assert [(f["attempt"], f["accepted"], f.get("refused")) for f in outcome["arg_fills"]] == [
        (1, False, "schema"), (2, True, None)]


def test_without_retries_the_task_fails(serve: Callable[[Script], ScriptedServer], tmp_path: Path) -> None:
    server = serve(lambda body, seen: Scripted('{"comment": 3}'))
    outcome, seen = run(server, tmp_path)
    assert outcome["status"] == "failed" and seen == []
    assert "comment must be a string" in outcome["tasks"]["t2"]["error"]


@pytest.mark.parametrize(("change", "message"), [
    ({"args": {"comment": "text"}}, "htn.operators.report.args.comment: expected one of string, number, "
                                    'integer, boolean, got "text"'),
    ({"prompt": None}, "htn.operators.report.args: needs a prompt (the model fills the arguments from it)"),
])
def test_bad_args_schemas_are_one_line(change: dict[str, Any], message: str) -> None:
    doc = json.loads(json.dumps(DOMAIN))
    doc["htn"]["operators"]["report"].update(change)
    with pytest.raises(InputError) as caught:
        domain_from_dict(doc, "d.yaml")
    assert str(caught.value) == f"d.yaml: {message}"
    del doc["htn"]["operators"]["report"]["prompt"]
    with pytest.raises(InputError, match="args: needs a prompt"):
        domain_from_dict(doc, "d.yaml")


TOOLS = '''
import os, signal

LOG = os.environ["ARGFILL_LOG"]


def fix(inputs, call):
    return {}


def report(inputs, call):
    with open(LOG, "a", encoding="utf-8") as stream:
        stream.write(repr(sorted(inputs.items())) + "\\n")
        stream.flush()
        os.fsync(stream.fileno())
    if not os.path.exists(LOG + ".killed"):
        open(LOG + ".killed", "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return {}


TOOLS = {"fix": fix, "report": report}
'''


def test_the_arguments_survive_sigkill_and_resume(serve: Callable[[Script], ScriptedServer],
                                                  tmp_path: Path) -> None:
    """Killed inside the tool, after the arguments were recorded: the resumed run calls the tool
    again (its result was lost) with the same arguments, and never asks the model a second time."""
    server = serve(lambda body, seen: Scripted('{"comment": "Deduplicated the footer."}'))
    (tmp_path / "domain.yaml").write_text(yaml.safe_dump(DOMAIN, sort_keys=False))
    (tmp_path / "argtools.py").write_text(textwrap.dedent(TOOLS))
    env = {**os.environ, "ARGFILL_LOG": str(tmp_path / "calls.log"), "PYTHONPATH": str(ROOT),
           "XDG_CACHE_HOME": str(tmp_path / "cache")}
    llm = ["--llm-base-url", server.url, "--llm-model", "small"]
    tools = str(tmp_path / "argtools.py") + ":TOOLS"
    first = subprocess.run([sys.executable, "-m", "evolve", "execute", str(tmp_path / "domain.yaml"),
                            "--tools", tools, "--out", str(tmp_path / "run"), "--no-report", *llm],
                           env=env, capture_output=True, text=True, timeout=120)
    assert first.returncode == -signal.SIGKILL, first.stderr
    assert len(server.requests) == 1
    again = subprocess.run([sys.executable, "-m", "evolve", "execute", "--resume", str(tmp_path / "run"),
                            "--no-report", *llm], env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stdout + again.stderr
    assert len(server.requests) == 1  # the resumed run read the ledger
    calls = (tmp_path / "calls.log").read_text().splitlines()
    assert calls == ["[('comment', 'Deduplicated the footer.')]"] * 2
    outcome = json.loads((tmp_path / "run" / "outcome.json").read_text())
    assert outcome["reason"] == "goal_met"
    assert outcome["model_calls"]["argfill"] == len(server.requests) == 1  # counted once over both sessions
    assert [(f["task"], f["accepted"]) for f in outcome["arg_fills"]] == [("t2", True)]
    html = write_execution_report(tmp_path / "run").read_text()
    assert "Small-model calls" in html and "Deduplicated the footer." in html and "accepted" in html
