"""MCP servers as the catalog and as the tools that run (``evolve import-tools --mcp``,
``evolve execute --mcp``), against real servers written with the SDK's own server class
(tests/mcp_servers/shop.py), started as subprocesses over stdio and over streamable HTTP."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

pytest.importorskip("mcp")

from evolve.cli.main import cli

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "tests" / "mcp_servers" / "shop.py"
SERVER = f"{sys.executable} {SHOP}"
FACTS = ("--fact", "email=ann@example.com", "--fact", "item=book")


def evolve(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)


def ledger_lines(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def shop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder whose servers keep their ledger and counters in it."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SHOP_LEDGER", str(tmp_path / "ledger.jsonl"))
    monkeypatch.setenv("SHOP_STATE", str(tmp_path))
    for name in ("SHOP_FLAKY", "SHOP_CRASH_ONCE", "SHOP_SLEEP_AFTER_WRITE", "SHOP_HANG", "SHOP_RECONCILE",
                 "SHOP_CRASH_IN_WRITE", "SHOP_CRASHES"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def imported(folder: Path, *source: str) -> dict[str, Any]:
    out = folder / "shop.yaml"
    result = evolve("import-tools", *source, "--out", out, "--goal", "receipt", "--known", "email,item")
    assert result.exit_code == 0, result.output
    return yaml.safe_load(out.read_text())


PLAN = {
    "tasks": [
        {"id": "t1", "tool": "find_customer", "inputs": {"email": "$email"}},
        {"id": "t2", "tool": "quote", "deps": ["t1"],
         "inputs": {"customer_id": "$t1.customer_id", "item": "$item"}},
        {"id": "t3", "tool": "check_stock", "inputs": {"item": "$item"}, "retries": 2},
        {"id": "t4", "tool": "place_order", "deps": ["t1", "t2", "t3"], "idempotency_key": "order:1",
         "inputs": {"customer_id": "$t1.customer_id", "price": "$t2.price", "in_stock": "$t3.in_stock"}},
        {"id": "t5", "tool": "receipt", "deps": ["t4"], "inputs": {"order_id": "$t4.order_id"}},
    ]
}


@pytest.fixture
def catalog(shop: Path) -> Path:
    imported(shop, "--mcp", SERVER)
    (shop / "plan.json").write_text(json.dumps(PLAN))
    return shop / "shop.yaml"


def outcome(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "outcome.json").read_text())


def test_import_from_a_live_server_maps_annotations_to_risks(shop: Path) -> None:
    doc = imported(shop, "--mcp", SERVER)
    tools = doc["tools"]
    assert tools["place_order"]["risk"] == "write"  # destructiveHint
    assert "risk" not in tools["find_customer"]  # readOnlyHint: a read
    assert tools["find_customer"]["outputs"] == ["customer_id", "find_customer_result"]
    assert tools["place_order"]["inputs"] == ["customer_id", "price", "in_stock"]
    assert doc["criteria"] == ["receipt_result"] and doc["name"] == "shop"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(shop: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(SHOP), "--http", str(port)], stderr=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, env=dict(os.environ))
    try:
        for _ in range(300):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_import_and_execute_over_streamable_http(http_server: str, shop: Path) -> None:
    doc = imported(shop, "--mcp-url", http_server)
    assert doc["tools"]["place_order"]["risk"] == "write"
    (shop / "plan.json").write_text(json.dumps(PLAN))
    ran = evolve("execute", "plan.json", "--problem", "shop.yaml", "--mcp-url", f"shop={http_server}",
                 *FACTS, "--out", "run", "--no-report")
    assert ran.exit_code == 0, ran.output
    assert outcome(shop / "run")["reason"] == "goal_met"
    [order] = ledger_lines(shop / "ledger.jsonl")
    assert order["key"] == "order:1"


def test_execute_retries_a_transient_error_and_restarts_a_crashed_server(
    catalog: Path, shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_FLAKY", "1")  # check_stock says "busy" (retryable) once
    monkeypatch.setenv("SHOP_CRASH_ONCE", "1")  # the first find_customer kills the server
    ran = evolve("execute", "plan.json", "--problem", catalog, "--mcp", f"shop={SERVER}", *FACTS,
                 "--out", "run", "--no-report")
    assert ran.exit_code == 0, ran.output
    out = outcome(shop / "run")
    assert out["reason"] == "goal_met"
    assert (shop / "crash.count").read_text() == "2"  # crashed once, answered on the restarted server
    assert (shop / "stock.count").read_text() == "2"
    assert out["tasks"]["t3"]["attempts"] == 2  # the retryable error, retried by the task's policy
    assert out["tasks"]["t1"]["attempts"] == 1  # the crash: the read asked again on the restarted server
    [order] = ledger_lines(shop / "ledger.jsonl")
    assert (order["customer_id"], order["price"], order["key"]) == ("c-ann", 44, "order:1")
    assert out["tasks"]["t5"]["status"] == "done"
    assert out["tasks"]["t4"]["status"] == "done"


def test_a_server_that_dies_again_after_its_restart_fails_the_task_with_its_stderr(
    catalog: Path, shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_CRASHES", "5")
    ran = evolve("execute", "plan.json", "--problem", catalog, "--mcp", f"shop={SERVER}", *FACTS,
                 "--out", "run", "--no-report")
    assert ran.exit_code == 1, ran.output
    error = outcome(shop / "run")["tasks"]["t1"]["error"]
    assert error.startswith("MCP server shop, tool find_customer: the server died again")
    assert "its stderr ends: shop: simulated crash in find_customer" in error
    assert (shop / "crash.count").read_text() == "2"  # started once more, never a third time
    assert ledger_lines(shop / "ledger.jsonl") == []


@pytest.mark.parametrize(("when", "reconcile", "status", "orders"), [
    ("after", True, "done", 1),  # made: the reconcile tool says so, its outputs bound
    ("before", True, "done", 1),  # not made: the reconcile tool says so, so it is made again
    ("after", False, "unknown", 1),  # no way to tell: a person decides, never made again
])
def test_a_server_that_dies_during_a_write_is_asked_whether_it_was_made(
    catalog: Path, shop: Path, monkeypatch: pytest.MonkeyPatch,
    when: str, reconcile: bool, status: str, orders: int,
) -> None:
    monkeypatch.setenv("SHOP_CRASH_IN_WRITE", when)
    if reconcile:
        monkeypatch.setenv("SHOP_RECONCILE", "1")
        imported(shop, "--mcp", SERVER)  # the catalog's write names its reconcile tool now
    plan = json.loads((shop / "plan.json").read_text())
    plan["tasks"][3]["retries"] = 1
    (shop / "plan.json").write_text(json.dumps(plan))
    ran = evolve("execute", "plan.json", "--problem", catalog, "--mcp", f"shop={SERVER}", *FACTS,
                 "--out", "run", "--no-report")
    out = outcome(shop / "run")
    assert out["tasks"]["t4"]["status"] == status, ran.output
    assert len(ledger_lines(shop / "ledger.jsonl")) == orders  # never a second order
    assert (shop / "write_crash.count").read_text() == str(1 + (when == "before"))
    if status == "done":
        assert ran.exit_code == 0 and out["reason"] == "goal_met"
        assert out["reconciled"] == (when == "after")
    else:
        assert ran.exit_code == 1
        assert "whether this write was made is unknown" in out["tasks"]["t4"]["error"]
        assert "simulated crash in place_order, after the write" in out["tasks"]["t4"]["error"]


def test_a_hanging_call_ends_at_the_task_timeout(catalog: Path, shop: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_HANG", "1")
    plan = json.loads(json.dumps(PLAN))
    plan["tasks"][1]["timeout"] = 1.5
    (shop / "plan.json").write_text(json.dumps(plan))
    began = time.monotonic()
    ran = evolve("execute", "plan.json", "--problem", catalog, "--mcp", f"shop={SERVER}", *FACTS,
                 "--out", "run", "--no-report")
    assert ran.exit_code == 1, ran.output
    assert time.monotonic() - began < 60
    t2 = outcome(shop / "run")["tasks"]["t2"]
    assert t2["status"] == "timeout" or "no answer within" in (t2["error"] or ""), t2
    assert ledger_lines(shop / "ledger.jsonl") == []


def test_a_hand_written_server_with_a_malformed_tool_list_is_one_line(
    shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = f"{sys.executable} {ROOT / 'tests' / 'mcp_servers' / 'raw.py'}"
    bad = evolve("import-tools", "--mcp", raw)  # the SDK's client refuses the list
    assert bad.exit_code == 2 and bad.output.count("\n") == 1, bad.output
    assert "tools[0].inputSchema.type: Input should be 'object'" in bad.output
    monkeypatch.setenv("RAW_TOOLS", json.dumps([{"name": "y", "inputSchema": {
        "type": "object", "properties": {}, "required": ["a"]}}]))
    odd = evolve("import-tools", "--mcp", raw)  # the SDK takes it; evolve's reader does not
    assert odd.exit_code == 2 and odd.output.count("\n") == 1, odd.output
    assert "MCP server server (" in odd.output
    assert 'tools[0].inputSchema.required[0]: "a" is not among the properties' in odd.output


def test_every_page_of_a_paginated_tool_list_is_imported(shop: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def tool(name: str, reads: str, makes: str) -> dict[str, Any]:
        return {"name": name, "inputSchema": {"type": "object", "properties": {reads: {"type": "string"}},
                                              "required": [reads]},
                "outputSchema": {"type": "object", "properties": {makes: {"type": "string"}}}}

    monkeypatch.setenv("RAW_PAGED", "1")
    tools = [tool("a", "q", "x"), tool("b", "x", "y"), tool("c", "y", "z")]
    monkeypatch.setenv("RAW_TOOLS", json.dumps(tools))
    raw = f"{sys.executable} {ROOT / 'tests' / 'mcp_servers' / 'raw.py'}"
    made = evolve("import-tools", "--mcp", raw, "--out", "paged.yaml", "--goal", "z", "--known", "q")
    assert made.exit_code == 0, made.output
    doc = yaml.safe_load((shop / "paged.yaml").read_text())
    assert list(doc["tools"]) == ["a", "b", "c"] and doc["name"] == "raw"


def test_a_result_against_the_output_schema_fails_the_task_naming_server_and_tool(
    catalog: Path, shop: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_BAD_OUTPUT", "1")
    ran = evolve("execute", "plan.json", "--problem", catalog, "--mcp", f"shop={SERVER}", *FACTS,
                 "--out", "run", "--no-report")
    assert ran.exit_code == 1, ran.output
    error = outcome(shop / "run")["tasks"]["t3"]["error"]
    # the SDK's server checks its own result and answers isError (the SDK's client would check
    # one that got through): the task fails for good, naming the server and the tool
    assert error.startswith("MCP server shop, tool check_stock: ") and "check_stock" in error[35:]
    assert outcome(shop / "run")["tasks"]["t4"]["status"] != "done"
    assert "\n" not in error
    assert ledger_lines(shop / "ledger.jsonl") == []


def test_bad_servers_and_plans_are_one_line_before_the_run(catalog: Path, shop: Path) -> None:
    not_mcp = evolve("import-tools", "--mcp", f"{sys.executable} -c \"print('hello')\"")
    assert not_mcp.exit_code == 2 and "not an MCP server" in not_mcp.output
    assert "Traceback" not in not_mcp.output
    os.environ["SHOP_BAD_SCHEMA"] = "1"
    try:
        bad = evolve("import-tools", "--mcp", SERVER)
        ran = evolve("execute", "plan.json", "--problem", catalog, "--mcp", f"shop={SERVER}", *FACTS,
                     "--out", "run1", "--no-report")
    finally:
        del os.environ["SHOP_BAD_SCHEMA"]
    assert bad.exit_code == 2, bad.output
    # the SDK's server refuses to send the malformed list: one line, with the server's own reason
    assert bad.output.count("\n") == 1 and "MCP server server (" in bad.output
    assert "tools/list failed or is malformed" in bad.output and "inputSchema.type" in bad.output
    assert ran.exit_code == 2 and "inputSchema.type" in ran.output and "MCP server shop (" in ran.output
    plan = json.loads(json.dumps(PLAN))
    plan["tasks"].append({"id": "t6", "tool": "refund", "deps": ["t5"], "inputs": {}})
    doc = yaml.safe_load(catalog.read_text())
    doc["tools"]["refund"] = {"duration": 1, "outputs": ["refund_result"]}
    Path("other.yaml").write_text(yaml.safe_dump(doc))
    Path("other.json").write_text(json.dumps(plan))
    missing = evolve("execute", "other.json", "--problem", "other.yaml", "--mcp", f"shop={SERVER}", *FACTS,
                     "--out", "run2", "--no-report")
    assert missing.exit_code == 2, missing.output
    assert "'refund' is listed by no MCP server (shop)" in missing.output
    assert not (shop / "run2" / "journal.sqlite").exists()
    doc = yaml.safe_load(catalog.read_text())
    doc["tools"]["place_order"]["risk"] = "read"
    Path("lax.yaml").write_text(yaml.safe_dump(doc))
    plan = json.loads(json.dumps(PLAN))
    del plan["tasks"][3]["idempotency_key"]
    Path("lax.json").write_text(json.dumps(plan))
    lax = evolve("execute", "lax.json", "--problem", "lax.yaml", "--mcp", f"shop={SERVER}", *FACTS,
                 "--out", "run3", "--no-report")
    assert lax.exit_code == 2, lax.output
    assert "MCP server shop, tool place_order: the server marks it destructive" in lax.output
    assert ledger_lines(shop / "ledger.jsonl") == []


def test_an_approval_is_asked_given_and_the_write_made_once(catalog: Path, shop: Path) -> None:
    doc = yaml.safe_load(catalog.read_text())
    doc["policy"] = {"write_requires_approval": True}
    doc["tools"]["manager"] = {"duration": 1, "inputs": ["price"], "outputs": ["approval"],
                               "risk": "approval", "by": "human"}
    Path("gated.yaml").write_text(yaml.safe_dump(doc))
    plan = json.loads(json.dumps(PLAN))
    plan["tasks"].insert(3, {"id": "ok", "tool": "manager", "deps": ["t2"], "inputs": {"price": "$t2.price"}})
    plan["tasks"][4]["deps"].append("ok")
    Path("gated.json").write_text(json.dumps(plan))
    first = evolve("execute", "gated.json", "--problem", "gated.yaml", "--mcp", f"shop={SERVER}", *FACTS,
                   "--out", "run", "--no-report")
    assert first.exit_code == 4, first.output
    assert ledger_lines(shop / "ledger.jsonl") == []
    pending = json.loads(evolve("pending", "run", "--json").output)
    [item] = pending
    assert item["task"] == "ok" and item["action"]["writes"][0]["tool"] == "place_order"
    approved = evolve("approve", "run", "ok", "--as", "mara")
    assert approved.exit_code == 0, approved.output
    resumed = evolve("execute", "--resume", "run", "--no-report")
    assert resumed.exit_code == 0, resumed.output
    out = outcome(shop / "run")
    assert out["reason"] == "goal_met"
    [made] = out["decisions"]
    assert (made["verdict"], made["by"]) == ("approved", "mara")
    assert len(ledger_lines(shop / "ledger.jsonl")) == 1


def killed_during_the_write(shop: Path, catalog: Path) -> Path:
    """``evolve execute --mcp`` as a real process, SIGKILLed after the write's side effect and
    before its answer (the write sleeps after its ledger line)."""
    env = {**os.environ, "SHOP_SLEEP_AFTER_WRITE": "60", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "evolve", "execute", "plan.json", "--problem", str(catalog), "--mcp",
         f"shop={SERVER}", *FACTS, "--out", "run", "--no-report"],
        env=env, cwd=shop, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        for _ in range(1200):
            if ledger_lines(shop / "ledger.jsonl"):
                break
            time.sleep(0.1)
        assert len(ledger_lines(shop / "ledger.jsonl")) == 1
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the executor and the server it started
        proc.wait(timeout=30)
    return shop / "run"


def test_sigkill_during_the_write_then_resume_reconciles_it(catalog: Path, shop: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOP_RECONCILE", "1")  # the server names order_status to tell a made write
    run = killed_during_the_write(shop, catalog)
    resumed = evolve("execute", "--resume", run, "--no-report")
    assert resumed.exit_code == 0, resumed.output
    out = outcome(run)
    assert out["reason"] == "goal_met" and out["reconciled"] == 1
    assert len(ledger_lines(shop / "ledger.jsonl")) == 1  # exactly one side effect
    assert out["tasks"]["t5"]["status"] == "done"


def test_sigkill_during_a_write_the_server_cannot_reconcile_is_never_made_again(
    catalog: Path, shop: Path
) -> None:
    run = killed_during_the_write(shop, catalog)
    resumed = evolve("execute", "--resume", run, "--no-report")
    assert resumed.exit_code == 1, resumed.output
    out = outcome(run)
    assert out["tasks"]["t4"]["status"] == "unknown"
    assert len(ledger_lines(shop / "ledger.jsonl")) == 1


def test_import_run_then_execute_the_best_plan(catalog: Path, shop: Path) -> None:
    """The whole path: the imported catalog searched by ``evolve run``, its best plan run with
    ``--mcp``."""
    searched = evolve("run", catalog, "--out", "search", "--generations", "3", "--jobs", "1", "--no-report")
    assert searched.exit_code == 0, searched.output
    ran = evolve("execute", "search/best.json", "--problem", catalog, "--mcp", f"shop={SERVER}", *FACTS,
                 "--out", "run", "--no-report")
    assert ran.exit_code == 0, ran.output
    assert outcome(shop / "run")["reason"] == "goal_met"
    assert len(ledger_lines(shop / "ledger.jsonl")) == 1


def test_the_example_server_plans_and_runs_as_its_readme_says(shop: Path) -> None:
    """examples/mcp/README.md's two commands (the search shortened to 3 generations)."""
    server = f"{sys.executable} {ROOT / 'examples' / 'mcp' / 'notes_server.py'}"
    made = evolve("import-tools", "--mcp", server, "--out", "notes.yaml", "--goal", "publish",
                  "--known", "query")
    assert made.exit_code == 0, made.output
    searched = evolve("run", "notes.yaml", "--out", "runs/notes", "--generations", "3", "--no-report")
    assert searched.exit_code == 0, searched.output
    ran = evolve("execute", "runs/notes/best.json", "--problem", "notes.yaml", "--fact", "query=evolve",
                 "--mcp", f"notes={server}", "--out", "run", "--no-report")
    assert ran.exit_code == 0, ran.output
    [line] = (shop / "published.jsonl").read_text().splitlines()
    assert json.loads(line)["summary"].startswith("evolve searches plans")
    readme = (ROOT / "examples" / "mcp" / "README.md").read_text()
    assert 'evolve import-tools --mcp "python examples/mcp/notes_server.py"' in readme
