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
