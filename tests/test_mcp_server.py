"""``evolve mcp`` driven by the SDK's own client over stdio: plan (with progress notifications),
validate, execute against an MCP server of tools, pending, approve (journaled with who gave it),
status, through to ``goal_met``; the outcome as a resource."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from click.testing import CliRunner

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters

from evolve.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "tests" / "mcp_servers" / "shop.py"


def data(result: Any) -> Any:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        sc = result.structured_content
        return sc["result"] if set(sc) == {"result"} else sc
    return json.loads(result.content[0].text)


def test_plan_execute_approve_through_evolve_mcp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SHOP_LEDGER": str(tmp_path / "ledger.jsonl"),
           "SHOP_STATE": str(tmp_path)}
    monkeypatch.setenv("SHOP_LEDGER", env["SHOP_LEDGER"])
    server = f"{sys.executable} {SHOP}"
    made = CliRunner().invoke(cli, ["import-tools", "--mcp", server, "--out", "shop.yaml",
                                    "--goal", "receipt", "--known", "email,item"])
    assert made.exit_code == 0, made.output
    doc = yaml.safe_load(Path("shop.yaml").read_text())
    doc["policy"] = {"write_requires_approval": True}
    doc["tools"]["manager"] = {"duration": 1, "inputs": ["price"], "outputs": ["approval"],
                               "risk": "approval", "by": "human"}
    del doc["tools"]["order_status"]
    Path("shop.yaml").write_text(yaml.safe_dump(doc))
    problem = str(tmp_path / "shop.yaml")
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "evolve", "mcp", "--runs", str(tmp_path / "runs")], env=env)
    progress: list[tuple[float, float | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total))

    async def journey() -> dict[str, Any]:
        async with Client(params, cache=None) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert names >= {"plan", "validate", "execute", "status", "pending", "approve", "reject",
                             "answer"}
            planned = data(await client.call_tool("plan", {"problem": problem, "generations": 3},
                                                  progress_callback=on_progress))
            plan = planned["plan"]
            assert {t["tool"] for t in plan["tasks"]} >= {"manager", "place_order", "receipt"}
            checked = data(await client.call_tool("validate", {"problem": problem, "plan": plan}))
            assert checked == {"valid": True, "errors": []}
            started = data(await client.call_tool("execute", {
                "problem": problem, "plan": plan, "mcp": {"shop": server},
                "facts": {"email": "ann@example.com", "item": "book"}}))
            run = started["run"]
            for _ in range(600):
                status = data(await client.call_tool("status", {"run": run}))
                if status["pending"] or not status["running"]:
                    break
                await anyio.sleep(0.2)
            assert status["pending"], status
            [item] = data(await client.call_tool("pending", {"run": run}))
            assert item["kind"] == "approval" and item["action"]["writes"][0]["tool"] == "place_order"
            assert not Path(env["SHOP_LEDGER"]).exists()  # no write before the approval
            approved = data(await client.call_tool("approve", {"run": run, "task": item["task"], "by": "lee",
                                                               "action": item["action_hash"][:12]}))
            assert approved["by"] == "lee"
            for _ in range(600):
                status = data(await client.call_tool("status", {"run": run}))
                if not status["running"]:
                    break
                await anyio.sleep(0.2)
            resource = await client.read_resource(f"evolve://runs/{run}/outcome")
            outcome: dict[str, Any] = json.loads(resource.contents[0].text)  # type: ignore[union-attr]
            outcome["_status"] = status
            return outcome

    began = time.monotonic()
    outcome = anyio.run(journey)
    assert outcome["_status"]["reason"] == "goal_met", outcome["_status"]
    assert outcome["reason"] == "goal_met"
    [decision] = outcome["decisions"]
    assert (decision["verdict"], decision["by"]) == ("approved", "lee")
    assert len(Path(tmp_path / "ledger.jsonl").read_text().splitlines()) == 1
    assert progress and progress[-1] == (3.0, 3.0)
    assert time.monotonic() - began < 600


def test_evolve_mcp_over_http_validates_and_names_bad_input(tmp_path: Path) -> None:
    """``evolve mcp --http PORT`` on 127.0.0.1: the SDK's client over streamable HTTP; a plan the
    validator refuses, and a run id outside the runs folder, answered as tool errors."""
    import socket
    import subprocess

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "evolve", "mcp", "--http", str(port), "--runs",
                             str(tmp_path / "runs")], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    problem = {"name": "p", "initial": ["a"], "criteria": ["c"],
               "tools": {"f": {"duration": 1, "inputs": ["a"], "outputs": ["c"]}}}
    plan = {"tasks": [{"id": "t1", "tool": "g", "inputs": {"a": "$a"}}]}

    async def ask() -> tuple[Any, Any]:
        async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as client:
            checked = await client.call_tool("validate", {"problem": problem, "plan": plan})
            outside = await client.call_tool("status", {"run": "../etc"})
            return checked, outside

    try:
        for _ in range(600):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        checked, outside = anyio.run(ask)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    found = data(checked)
    assert found["valid"] is False and any("g" in e for e in found["errors"])
    assert outside.is_error and "a run id is the name of its folder" in outside.content[0].text
