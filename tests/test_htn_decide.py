"""Hoisted decisions: asked once before planning, validated, merged into the state, cached;
against a scripted endpoint on 127.0.0.1."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.llm.testing import Script, Scripted, ScriptedServer
from evolve.model.errors import InputError
from evolve.problems.htn import domain_from_dict
from evolve.problems.htn.writer import domain_to_dict

ROOT = Path(__file__).resolve().parents[1]
DOMAIN = ROOT / "examples" / "htn" / "pr_doctor.yaml"


def answering(text: str) -> Script:
    return lambda body, seen: Scripted(text)


def execute(server: ScriptedServer | None, tmp_path: Path, *extra: str, domain: Path = DOMAIN,
            run: str = "run") -> Any:
    """``evolve execute DOMAIN --simulate`` into ``tmp_path/run``, replies cached in ``tmp_path/cache``."""
    llm = ["--llm-base-url", server.url, "--llm-model", "small"] if server is not None else []
    return CliRunner().invoke(cli, ["execute", str(domain), "--simulate", "--out", str(tmp_path / run),
                                    *llm, *extra], env={"XDG_CACHE_HOME": str(tmp_path / "cache")})


def plan_tools(tmp_path: Path, run: str = "run") -> list[str]:
    return [t["tool"] for t in json.loads((tmp_path / run / "plan.json").read_text())["tasks"]]


def test_the_answer_gates_the_select(serve: Callable[[Script], ScriptedServer], tmp_path: Path) -> None:
    server = serve(answering('{"failure_class": "flaky"}'))
    result = execute(server, tmp_path)
    assert result.exit_code == 0, result.output
    assert "decided failure_class = \"flaky\" by model" in result.output
    assert plan_tools(tmp_path) == ["rerun_ci", "comment_pr", "htn:heal_ci"]
    request = server.requests[0]
    assert request["temperature"] == 0.0 and request["response_format"] == {"type": "json_object"}
    assert "no-unused-vars" in request["messages"][1]["content"]  # {{test_output}} rendered
    outcome = json.loads((tmp_path / "run" / "outcome.json").read_text())
    [decision] = outcome["hoisted_decisions"]
    assert decision["value"] == "flaky" and decision["source"] == "model"
    assert outcome["model_calls"]["decide"] == len(server.requests) == 1
    html = (tmp_path / "run" / "report.html").read_text()
    assert "Small-model calls" in html and "failure_class" in html and "flaky" in html
    again = execute(server, tmp_path, run="again")
    assert again.exit_code == 0 and len(server.requests) == 1  # the reply cache answers
    cached = json.loads((tmp_path / "again" / "outcome.json").read_text())
    assert cached["model_calls"]["decide"] == 0 and cached["hoisted_decisions"][0]["cached"]


@pytest.mark.parametrize(("reply", "refused"), [
    ('{"failure_class": "cosmic-ray"}', "enum"),
    ("I think it is lint.", "parse"),
    ('{"class": "lint"}', "schema"),
])
def test_a_refused_answer_takes_the_default(serve: Callable[[Script], ScriptedServer], tmp_path: Path,
                                            reply: str, refused: str) -> None:
    server = serve(answering(reply))
    result = execute(server, tmp_path)
    assert result.exit_code == 0, result.output
    assert f"decided failure_class = \"test\" by default (the answer was refused: {refused})" in result.output
    assert plan_tools(tmp_path) == ["revert_commit", "comment_pr", "htn:heal_ci"]
    record = json.loads((tmp_path / "run" / "outcome.json").read_text())["hoisted_decisions"][0]
    assert record["source"] == "default" and record["refused"] == refused


def test_no_default_fails_closed(serve: Callable[[Script], ScriptedServer], tmp_path: Path) -> None:
    doc = yaml.safe_load(DOMAIN.read_text())
    del doc["htn"]["decide"]["failure_class"]["default"]
    path = tmp_path / "strict.yaml"
    path.write_text(yaml.safe_dump(doc))
    server = serve(answering('{"failure_class": "cosmic-ray"}'))
    result = execute(server, tmp_path, domain=path)
    assert result.exit_code == 1
    assert "htn.decide.failure_class: the model's answer was refused (enum:" in result.output
    assert "there is no default" in result.output
    assert not (tmp_path / "run" / "journal.sqlite").exists()


def test_a_failed_call_takes_the_default(serve: Callable[[Script], ScriptedServer], tmp_path: Path) -> None:
    server = serve(lambda body, seen: Scripted(None, status=400))
    result = execute(server, tmp_path)
    assert result.exit_code == 0, result.output
    assert "by default (the answer was refused: http)" in result.output


def test_plan_input_wins_and_no_call_is_made(serve: Callable[[Script], ScriptedServer],
                                             tmp_path: Path) -> None:
    server = serve(answering('{"failure_class": "flaky"}'))
    result = execute(server, tmp_path, "--input", "failure_class=lint")
    assert result.exit_code == 0, result.output
    assert server.requests == []
    assert plan_tools(tmp_path) == ["lint_fix", "push_fix", "comment_pr", "htn:heal_ci"]
    outcome = json.loads((tmp_path / "run" / "outcome.json").read_text())
    assert outcome["model_calls"]["decide"] == 0
    without_llm = execute(None, tmp_path, "--input", "failure_class=lint", run="x")
    assert without_llm.exit_code == 0
    needs = execute(None, tmp_path, run="y")
    assert needs.exit_code == 2 and "decides failure_class by a model before planning" in needs.output


BASE = yaml.safe_load(DOMAIN.read_text())


@pytest.mark.parametrize(("change", "message"), [
    ({"colour": {"prompt": "x"}}, "htn.decide.colour: not a key the domain's state, guards or effects name"),
    ({"failure_class": {"enum": ["a"]}}, "htn.decide.failure_class.prompt: missing"),
    ({"failure_class": {"prompt": "x", "enum": ["a"], "default": "b"}},
     'htn.decide.failure_class.default: "b" is not one of the enum'),
    ({"failure_class": {"prompt": "x", "enum": []}},
     "htn.decide.failure_class.enum: expected a non-empty list of values, got []"),
    ({"failure_class": {"prompt": "x", "choices": []}},
     "htn.decide.failure_class.choices: unknown key (allowed: prompt, enum, default, type, fields)"),
])
def test_bad_decisions_are_one_line(change: dict[str, Any], message: str) -> None:
    doc = copy.deepcopy(BASE)
    doc["htn"]["decide"] = change
    with pytest.raises(InputError) as caught:
        domain_from_dict(doc, "d.yaml")
    assert str(caught.value) == f"d.yaml: {message}"


def test_decisions_round_trip() -> None:
    domain = domain_from_dict(copy.deepcopy(BASE), "d.yaml")[0]
    again = domain_from_dict(domain_to_dict(domain), "d.yaml")[0]
    assert again.decisions == domain.decisions
    assert domain.decisions["failure_class"].enum == ("flaky", "lint", "test")
