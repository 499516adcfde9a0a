"""`evolve run --operator llm` end to end through the command line, against a scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from evolve.cli.main import cli
from evolve.llm.testing import Scripted, ScriptedServer

REFUND = Path(__file__).resolve().parent.parent / "examples" / "refund.yaml"


def add_log_task(body: dict[str, Any], seen: int) -> Scripted:
    patch = {"add": [{"id": f"log{body['seed']}", "tool": "analytics.log_contact",
                      "inputs": {"complaint": "$complaint"}}], "reason": "log the contact"}
    return Scripted(json.dumps(patch))


def test_cli_llm_run_records_calls_and_replays_from_cache(tmp_path: Path) -> None:
    runner = CliRunner()
    with ScriptedServer(add_log_task) as server:
        args = ["run", str(REFUND), "--generations", "3", "--population", "6", "--jobs", "1",
                "--operator", "llm", "--llm-base-url", server.url, "--llm-model", "scripted",
                "--llm-ratio", "1", "--llm-cache-dir", str(tmp_path / "cache"), "--no-report", "--json"]
        first = runner.invoke(cli, [*args, "--out", str(tmp_path / "a")])
        assert first.exit_code == 0, first.output
        calls = len(server.requests)
        second = runner.invoke(cli, [*args, "--out", str(tmp_path / "b")])
        assert second.exit_code == 0, second.output
        assert len(server.requests) == calls  # the cache answered everything
    summary = json.loads(first.output)
    assert calls == 9 and summary["llm"]["calls"] == 9
    assert summary["llm"]["patches_accepted"] == 9
    assert summary["llm"]["tokens"]["total"] > 0
    assert (tmp_path / "a" / "events.jsonl").read_bytes() == (tmp_path / "b" / "events.jsonl").read_bytes()
    events = [json.loads(line) for line in (tmp_path / "a" / "events.jsonl").read_text().splitlines()]
    llm_children = [e for e in events if e.get("operator") == "llm"]
    assert llm_children and all(e["llm"]["accepted"] for e in llm_children)


def test_cli_llm_needs_endpoint_and_model() -> None:
    result = CliRunner().invoke(cli, ["run", str(REFUND), "--operator", "llm"])
    assert result.exit_code == 2
    assert "--llm-base-url and --llm-model" in result.output


def test_cli_prompt_states_the_runs_ranking_and_token_field(tmp_path: Path) -> None:
    """--fitness/--weights reach the system prompt; --llm-token-param renames the limit."""
    runner = CliRunner()
    with ScriptedServer(add_log_task) as server:
        base = ["run", str(REFUND), "--generations", "1", "--population", "4", "--keep", "2",
                "--jobs", "1", "--operator", "llm", "--llm-base-url", server.url,
                "--llm-model", "scripted", "--llm-ratio", "1", "--llm-mode", "patch",
                "--llm-cache-dir", str(tmp_path / "cache"), "--no-report", "--json"]
        weighted = runner.invoke(cli, [*base, "--out", str(tmp_path / "w"), "--fitness", "makespan",
                                       "--fitness", "completeness", "--weights", "1,500",
                                       "--llm-token-param", "max_completion_tokens",
                                       "--llm-max-tokens", "77"])
        assert weighted.exit_code == 0, weighted.output
        first = len(server.requests)
        ordered = runner.invoke(cli, [*base, "--out", str(tmp_path / "l"), "--fitness", "completeness",
                                      "--fitness", "cost"])
        assert ordered.exit_code == 0, ordered.output
        requests = list(server.requests)
    weighted_system = requests[0]["messages"][0]["content"]
    assert "lower is better: 1*makespan - 500*completeness" in weighted_system
    assert "validity" not in weighted_system and "minimality" not in weighted_system
    assert all(r["max_completion_tokens"] == 77 and "max_tokens" not in r for r in requests[:first])
    ordered_system = requests[first]["messages"][0]["content"]
    assert "1. completeness, higher is better" in ordered_system
    assert "2. cost, lower is better" in ordered_system and "makespan" not in ordered_system
    assert all(r["max_tokens"] == 1024 and "max_completion_tokens" not in r for r in requests[first:])
