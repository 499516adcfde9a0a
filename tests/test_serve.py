"""``evolve serve``: the API, the inbox's decisions and the security, through Starlette's TestClient.

The run folders are made by the real executor: the refund example waiting for the manager's
approval (as tests/test_execute_people.py makes it), and a run waiting for a person's answer.
Each test gets its own copies, so a decision in one is never seen by another.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest
from click.testing import CliRunner

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient

from evolve.cli.main import cli
from evolve.serve.app import Settings, journal_reader, make_app
from evolve.serve.auth import COOKIE, Auth, read_tokens
from evolve.serve.runs import Runs, run_folder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
TOOLS = f"{EXAMPLES / 'refund_tools.py'}:NO_PRIOR_REFUND"
TOKEN = "asha-token-0123456789abcdef"
OTHER = "ravi-token-0123456789abcdef"
BASE = "http://127.0.0.1"

ASK = """
name: address
objective: Print the customer's label
initial: [order]
criteria: [label]
tools:
  ask_customer: {duration: 1, inputs: [order], outputs: [address, phone], by: human}
  print_label: {duration: 1, inputs: [address], outputs: [label]}
"""
ASK_TOOLS = """
def print_label(inputs, call):
    return {"label": "TO: " + inputs["address"]}

TOOLS = {"print_label": print_label}
"""
ASK_PLAN = {"tasks": [
    {"id": "q", "tool": "ask_customer", "inputs": {"order": "$order"}},
    {"id": "p", "tool": "print_label", "deps": ["q"], "inputs": {"address": "$q.address"}},
]}


def evolve(*args: str | Path) -> Any:
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two waiting runs, made once: ``refund`` (an approval) and ``address`` (an answer)."""
    base = tmp_path_factory.mktemp("made")
    (base / "address.yaml").write_text(ASK)
    (base / "address_tools.py").write_text(ASK_TOOLS)
    (base / "plan.json").write_text(json.dumps(ASK_PLAN))
    for args in (
        (EXAMPLES / "refund_human_plan.yaml", "--problem", EXAMPLES / "refund.yaml", "--tools", TOOLS),
        (base / "plan.json", "--problem", base / "address.yaml",
         "--tools", f"{base / 'address_tools.py'}:TOOLS"),
    ):
        name = "refund" if args[0] == EXAMPLES / "refund_human_plan.yaml" else "address"
        done = subprocess.run(
            [sys.executable, "-m", "evolve", "execute", *map(str, args), "--out", str(base / "runs" / name),
             "--no-report"],
            env={**os.environ, "PYTHONPATH": str(ROOT), "EVOLVE_REFUND_LEDGER": str(base / "ledger.json")},
            capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 4, done.stdout + done.stderr
    return base / "runs"


@pytest.fixture
def runs(made: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    shutil.copytree(made, folder)
    return folder


def client_for(root: Path, **kwargs: Any) -> TestClient:
    auth = Auth({TOKEN: "asha", OTHER: "ravi"})
    settings = Settings(root=root.resolve(), auth=auth, scan_ttl=0.0, **kwargs)  # each request looks again
    return TestClient(make_app(settings), base_url=BASE)


@pytest.fixture
def client(runs: Path) -> Iterator[TestClient]:
    with client_for(runs) as c:
        yield c


def signed_in(client: TestClient, token: str = TOKEN) -> str:
    """Sign in as a browser does (the ?token= of the printed address); the session's CSRF token."""
    first = client.get(f"/?token={token}", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/"
    cookie = first.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie.replace("Strict", "strict")
    page = client.get("/inbox")
    assert page.status_code == 200
    marker = '<meta name="csrf-token" content="'
    start = page.text.index(marker) + len(marker)
    return page.text[start: page.text.index('"', start)]


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def asks(folder: Path) -> list[tuple[Any, ...]]:
    db = sqlite3.connect(folder / "journal.sqlite")
    try:
        return db.execute("SELECT task_id, verdict, decided_by, note, decided_hash, action_hash FROM asks "
                          "ORDER BY ask_id").fetchall()
    finally:
        db.close()


def pending_json(folder: Path) -> list[dict[str, Any]]:
    shown = evolve("pending", folder, "--json")
    assert shown.exit_code == 0, shown.output
    data: list[dict[str, Any]] = json.loads(shown.output)
    return data


# -- authentication -----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/", "/inbox", "/api/runs", "/api/pending", "/runs/refund",
                                  "/runs/refund/events", "/static/serve.js", "/partials/runs", "/nowhere"])
def test_every_request_without_the_token_is_401(client: TestClient, path: str) -> None:
    assert client.get(path).status_code == 401
    assert client.get(path, headers=bearer("wrong-token-0123456789")).status_code == 401
    assert client.get(path, headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
    assert client.get(f"{path}?token=wrong-token-0123456789").status_code == 401
    client.cookies.set(COOKIE, "forged")
    assert client.get(path).status_code == 401


def test_a_post_without_the_token_is_401_even_with_the_token_in_the_query(client: TestClient) -> None:
    body = {"run": "refund", "task": "t6", "verdict": "approved"}
    said = client.post(f"/api/decide?token={TOKEN}", json=body)
    assert said.status_code == 401


def test_the_first_visit_sets_an_httponly_cookie_and_drops_the_token(client: TestClient) -> None:
    first = client.get(f"/inbox?token={TOKEN}&x=1", follow_redirects=False)
    assert first.status_code == 303 and first.headers["location"] == "/inbox?x=1"
    assert TOKEN not in first.headers["location"]
    page = client.get("/inbox")
    assert page.status_code == 200 and "signed in as asha" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]


def test_a_foreign_host_header_is_refused(client: TestClient) -> None:
    """A DNS-rebinding page (evil.example resolving to 127.0.0.1) cannot use the server."""
    said = client.get("/api/runs", headers={**bearer(), "host": "evil.example"})
    assert said.status_code == 400


def test_token_file_names_people_and_refuses_short_tokens(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"# who may decide\n{TOKEN} Asha Rao\n{OTHER}\n")
    assert read_tokens(path, "server-user") == {TOKEN: "Asha Rao", OTHER: "server-user"}
    path.write_text("short asha\n")
    with pytest.raises(ValueError, match="line 1: a token of 5 characters"):
        read_tokens(path, "x")


# -- the API ------------------------------------------------------------------------------------


def test_api_runs_lists_each_run_with_status_and_goal(client: TestClient, runs: Path) -> None:
    search = runs / "search-1"
    search.mkdir()
    (search / "events.jsonl").write_text('{"event": "generation", "generation": 0}\n')
    (search / "problem.json").write_text(json.dumps({"name": "p", "objective": "Ship the pipeline"}))
    (runs / "not-a-run").mkdir()
    listed = client.get("/api/runs", headers=bearer())
    assert listed.status_code == 200
    by_name = {r["name"]: r for r in listed.json()}
    assert set(by_name) == {"refund", "address", "search-1"}
    assert by_name["refund"]["status"] == "waiting" and by_name["refund"]["kind"] == "execution"
    assert by_name["refund"]["goal"] == "Resolve the duplicate charge on order 8472"
    assert by_name["address"]["goal"] == "Print the customer's label"
    assert by_name["search-1"]["status"] == "running" and by_name["search-1"]["goal"] == "Ship the pipeline"
    (search / "summary.json").write_text(json.dumps({"problem": "p", "stop_reason": "generations: 3 done"}))
    done = {r["name"]: r for r in client.get("/api/runs", headers=bearer()).json()}["search-1"]
    assert (done["status"], done["reason"]) == ("completed", "generations: 3 done")
    times = [r["updated"] for r in client.get("/api/runs", headers=bearer()).json()]
    assert times == sorted(times, reverse=True)


def test_api_pending_is_what_evolve_pending_json_prints_across_runs(client: TestClient, runs: Path) -> None:
    served = client.get("/api/pending", headers=bearer()).json()
    expected = [{"run": name, **item} for name in ("refund", "address") for item in pending_json(runs / name)]
    key = lambda item: (item["run"], item["task"])  # noqa: E731
    assert sorted(served, key=key) == sorted(expected, key=key)
    [refund] = [i for i in served if i["run"] == "refund"]
    assert refund["action"]["writes"][0]["tool"] == "payments.issue_refund"


def test_the_run_page_shows_the_reports_drawings_and_the_tool_results(client: TestClient) -> None:
    signed_in(client)
    page = client.get("/runs/refund").text
    assert 'class="graph"' in page or "<svg" in page
    for section in ("plan", "gantt", "revisions", "calls", "timeline", "waiting"):
        section = f'id="{section}"'
        assert section in page, section
    assert "payments.lookup" in page and "approvals.manager" in page
    assert "approves t7 payments.issue_refund" in page  # the lines evolve pending prints


def test_the_event_reader_gives_every_journaled_event_in_order(runs: Path) -> None:
    read = journal_reader(runs / "refund")
    events = read(0)
    db = sqlite3.connect(runs / "refund" / "journal.sqlite")
    total = db.execute("SELECT COUNT(*) FROM events").fetchone()[0]
    db.close()
    assert [e["seq"] for e in events] == list(range(1, total + 1))
    assert read(total) == [] and [e["seq"] for e in read(total - 2)] == [total - 1, total]
    assert any(e["event"] == "awaiting_approval" and e["task"] == "t6" for e in events)


# -- decisions ----------------------------------------------------------------------------------


def form(csrf: str, item: dict[str, Any], verdict: str, note: str = "") -> dict[str, str]:
    return {"csrf": csrf, "run": item["run"], "task": item["task"], "action": item.get("action_hash") or "",
            "verdict": verdict, "note": note}


def test_approving_in_the_inbox_journals_it_like_the_cli(client: TestClient, runs: Path) -> None:
    csrf = signed_in(client)
    [item] = [i for i in client.get("/api/pending").json() if i["run"] == "refund"]
    said = client.post("/inbox/decide", data=form(csrf, item, "approved", "duplicate capture"),
                       headers={"origin": BASE}, follow_redirects=False)
    assert said.status_code == 303 and said.headers["location"] == "/inbox"
    page = client.get("/inbox").text
    assert f"refund: t6 approved by asha (action {item['action_hash'][:12]})" in page
    [row] = asks(runs / "refund")
    assert row == ("t6", "approved", "asha", "duplicate capture", item["action_hash"], item["action_hash"])
    db = sqlite3.connect(runs / "refund" / "journal.sqlite")
    [event] = [json.loads(b) for (b,) in db.execute("SELECT body FROM events") if '"person.approved"' in b]
    db.close()
    assert (event["by"], event["note"]) == ("asha", "duplicate capture")
    assert event["action_hash"] == item["action_hash"]
    assert pending_json(runs / "refund") == []
    assert [i["run"] for i in client.get("/api/pending").json()] == ["address"]


def test_a_changed_action_is_refused_with_a_clear_message(client: TestClient, runs: Path) -> None:
    csrf = signed_in(client)
    [item] = [i for i in client.get("/api/pending").json() if i["run"] == "refund"]
    stale = {**item, "action_hash": "0" * 64}
    page = client.post("/inbox/decide", data=form(csrf, stale, "approved"), headers={"origin": BASE}).text
    assert "is not the action pending" in page and "the plan changed what it approves" in page
    assert asks(runs / "refund")[0][1] is None


def test_reject_needs_a_note_and_is_journaled_with_it(client: TestClient, runs: Path) -> None:
    [item] = [i for i in client.get("/api/pending", headers=bearer(OTHER)).json() if i["run"] == "refund"]
    blank = client.post("/api/decide", json={**form("", item, "rejected", "  ")}, headers=bearer(OTHER))
    assert blank.status_code == 400 and "say why" in blank.json()["error"]
    why = form("", item, "rejected", "customer wants credit")
    said = client.post("/api/decide", json=why, headers=bearer(OTHER))
    assert said.status_code == 200, said.text
    [row] = asks(runs / "refund")
    assert row[:4] == ("t6", "rejected", "ravi", "customer wants credit")


def test_an_answer_from_the_form_gives_the_task_its_outputs(client: TestClient, runs: Path) -> None:
    csrf = signed_in(client)
    [item] = [i for i in client.get("/api/pending").json() if i["run"] == "address"]
    bad = {**form(csrf, item, "answered"), "outputs": '{"address": "12 MG Road"}'}
    assert "missing phone" in client.post("/inbox/decide", data=bad, headers={"origin": BASE}).text
    good = {**form(csrf, item, "answered"), "outputs": '{"address": "12 MG Road", "phone": "+91 80"}'}
    said = client.post("/inbox/decide", data=good, headers={"origin": BASE})
    assert "address: q answered by asha" in said.text
    assert asks(runs / "address")[0][:3] == ("q", "answered", "asha")


def test_two_people_deciding_at_once_the_first_wins_the_second_is_told(client: TestClient,
                                                                        runs: Path) -> None:
    [item] = [i for i in client.get("/api/pending", headers=bearer()).json() if i["run"] == "refund"]
    answers: dict[str, Any] = {}
    start = threading.Barrier(2)

    def decide(token: str, verdict: str, note: str) -> None:
        start.wait()
        answers[token] = client.post("/api/decide", json=form("", item, verdict, note), headers=bearer(token))

    threads = [threading.Thread(target=decide, args=(TOKEN, "approved", "go")),
               threading.Thread(target=decide, args=(OTHER, "rejected", "no"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = sorted(a.status_code for a in answers.values())
    assert codes == [200, 409], {k: a.text for k, a in answers.items()}
    [row] = asks(runs / "refund")
    winner = "asha" if answers[TOKEN].status_code == 200 else "ravi"
    loser = answers[OTHER if winner == "asha" else TOKEN].json()["error"]
    assert row[2] == winner and f"by {winner} already" in loser


# -- cross-site requests ------------------------------------------------------------------------


def test_a_post_without_the_sessions_csrf_token_is_refused(client: TestClient, runs: Path) -> None:
    csrf = signed_in(client)
    [item] = [i for i in client.get("/api/pending").json() if i["run"] == "refund"]
    for token in ("", "forged", csrf[:-1]):
        said = client.post("/inbox/decide", data=form(token, item, "approved"), headers={"origin": BASE})
        assert said.status_code == 403, token
    assert client.post("/api/decide", json=form("", item, "approved")).status_code == 403
    assert asks(runs / "refund")[0][1] is None


def test_a_post_from_another_origin_is_refused_even_with_the_csrf_token(client: TestClient,
                                                                        runs: Path) -> None:
    csrf = signed_in(client)
    [item] = [i for i in client.get("/api/pending").json() if i["run"] == "refund"]
    for headers in ({"origin": "http://evil.example"}, {"origin": "http://127.0.0.1:9"},
                    {"sec-fetch-site": "cross-site"}):
        said = client.post("/inbox/decide", data=form(csrf, item, "approved"), headers=headers)
        assert said.status_code == 403, headers
    assert asks(runs / "refund")[0][1] is None


def test_state_changes_are_post_only(client: TestClient) -> None:
    signed_in(client)
    assert client.get("/inbox/decide").status_code == 405
    assert client.get("/api/decide", headers=bearer()).status_code == 405


# -- paths --------------------------------------------------------------------------------------


@pytest.fixture
def outside(tmp_path: Path, made: Path) -> Path:
    """A run folder outside RUNS_DIR (its goal a secret), a secret file, and a symlink to the run inside."""
    away = tmp_path / "away"
    shutil.copytree(made / "refund", away)
    doc = json.loads((away / "problem.json").read_text())
    (away / "problem.json").write_text(json.dumps({**doc, "objective": "OUTSIDE-SECRET"}))
    (tmp_path / "secret.txt").write_text("OUTSIDE-SECRET")
    return away


def raw_get(app: Any, raw: str) -> tuple[int, str]:
    """A GET with exactly this path, as a server receives it (no client tidies the dots): the
    decoded ``path`` and the ``raw_path`` as sent."""
    replies: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        replies.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET",
             "scheme": "http", "path": unquote(raw), "raw_path": raw.encode(), "query_string": b"",
             "root_path": "", "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 5000),
             "headers": [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {TOKEN}".encode())]}
    asyncio.run(app(scope, receive, send))
    status = next(m["status"] for m in replies if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in replies if m["type"] == "http.response.body")
    return status, body.decode("utf-8", "replace")


@pytest.mark.parametrize("path", [
    "/runs/..", "/runs/%2e%2e", "/runs/..%2F..%2Fetc", "/runs/%2E%2E%2Faway", "/api/runs/..%2Faway",
    "/runs/refund%2F..%2F..%2Faway", "/runs/linked", "/api/runs/linked", "/runs/linked/events",
    "/runs/../away", "/api/runs/../../away", "/runs/%2e%2e/away", "/runs/..%5Caway", "/runs/%00",
    "/static/..%2Fapp.py", "/static/%2e%2e/app.py", "/static/../app.py", "/runs/refund/../../secret.txt",
    "/runs/refund/..%2F..%2Fsecret.txt", "/runs/" + "%252e%252e", "/../secret.txt",
    "/api/runs/%2Fetc%2Fpasswd",
])
def test_no_path_outside_runs_dir_is_readable(runs: Path, outside: Path, path: str) -> None:
    (runs / "linked").symlink_to(outside, target_is_directory=True)
    app = make_app(Settings(root=runs.resolve(), auth=Auth({TOKEN: "asha"})))
    status, body = raw_get(app, path)
    assert status == 404, (path, status, body[:200])
    assert "OUTSIDE-SECRET" not in body and "root:" not in body


def test_a_symlink_out_is_not_listed_nor_decided(client: TestClient, runs: Path, outside: Path) -> None:
    (runs / "linked").symlink_to(outside, target_is_directory=True)
    assert "linked" not in {r["name"] for r in client.get("/api/runs", headers=bearer()).json()}
    assert all(i["run"] != "linked" for i in client.get("/api/pending", headers=bearer()).json())
    for run in ("linked", "../away", "..", "/etc"):
        said = client.post("/api/decide", json={"run": run, "task": "t6", "verdict": "approved"},
                           headers=bearer())
        assert said.status_code == 404, run
    assert asks(outside)[0][1] is None


def test_run_folder_accepts_only_direct_children(runs: Path, outside: Path) -> None:
    (runs / "linked").symlink_to(outside, target_is_directory=True)
    assert run_folder(runs, "refund") == runs / "refund"
    for name in ("", ".", "..", "../away", "refund/..", "linked", str(outside), "refund\x00"):
        assert run_folder(runs, name) is None, name
    assert set(Runs(runs).names()) == {"refund", "address"}


def test_serve_refuses_a_missing_folder_and_a_bad_token_file(tmp_path: Path) -> None:
    missing = evolve("serve", tmp_path / "nowhere")
    assert missing.exit_code == 2 and "not a folder of run folders" in missing.output
    (tmp_path / "tokens").write_text("\n# nothing\n")
    empty = evolve("serve", tmp_path, "--token-file", tmp_path / "tokens")
    assert empty.exit_code == 2 and "no token in it" in empty.output


def test_the_event_stream_sends_the_runs_events_and_status(runs: Path) -> None:
    app = make_app(Settings(root=runs.resolve(), auth=Auth({TOKEN: "asha"})))
    with TestClient(app, base_url=BASE) as client, client.stream(
            "GET", "/runs/refund/events?after=3", headers=bearer()) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        kinds, batches = [], []
        for line in stream.iter_lines():
            if line.startswith("event: "):
                kinds.append(line[7:])
            elif line.startswith("data: ") and kinds[-1] == "events":
                batches.append(json.loads(line[6:]))
            elif line.startswith("data: ") and kinds[-1] == "status":
                assert json.loads(line[6:]) == {"status": "waiting"}
                app.state.server.stopping.set()  # the stream ends, as at the server's Ctrl-C
    [batch] = batches
    assert batch[0]["seq"] == 4 and batch[-1]["event"] == "session.wait"
    assert kinds == ["events", "status"]


def test_deciding_on_the_run_page_comes_back_to_it(client: TestClient, runs: Path) -> None:
    csrf = signed_in(client)
    page = client.get("/runs/refund").text
    assert 'name="back" value="run"' in page
    [item] = [i for i in client.get("/api/pending").json() if i["run"] == "refund"]
    said = client.post("/inbox/decide", data={**form(csrf, item, "approved"), "back": "run"},
                       headers={"origin": BASE}, follow_redirects=False)
    assert said.headers["location"] == "/runs/refund"
    assert "refund: t6 approved by asha" in client.get("/runs/refund").text


def test_serve_warns_off_loopback_and_prints_the_address(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The command up to the point it serves (uvicorn's loop is not started here; the browser
    test runs the real one)."""
    import uvicorn

    served: list[Any] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: served.append(sockets))
    local = CliRunner().invoke(cli, ["serve", str(tmp_path), "--port", "0"])
    assert local.exit_code == 0, local.output
    assert "warning" not in local.output
    assert re.search(r"http://127\.0\.0\.1:\d+/\?token=[\w-]{40,}", local.output), local.output
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{TOKEN} asha\n")
    wide = CliRunner().invoke(cli, ["serve", str(tmp_path), "--host", "0.0.0.0", "--port", "0",
                                    "--token-file", str(tokens)])
    assert wide.exit_code == 0, wide.output
    assert "warning: listening on 0.0.0.0, not this machine only" in wide.output
    assert "?token=" not in wide.output and f"tokens from {tokens}" in wide.output
    assert len(served) == 2
    for sockets in served:
        sockets[0].close()


def test_hostile_decision_bodies_are_400_and_change_nothing(client: TestClient, runs: Path) -> None:
    [item] = [i for i in client.get("/api/pending", headers=bearer()).json() if i["run"] == "address"]
    deep = "[" * 100_000 + "]" * 100_000
    for body in (b"{not json", b"[1, 2]", b"\xff\xfe", deep.encode()):
        headers = {**bearer(), "content-type": "application/json"}
        said = client.post("/api/decide", content=body, headers=headers)
        assert said.status_code == 400, body[:20]
    said = client.post("/api/decide", json={**form("", item, "answered"), "outputs": deep}, headers=bearer())
    assert said.status_code == 400 and "not JSON" in said.json()["error"]
    said = client.post("/api/decide", json={**form("", item, "maybe")}, headers=bearer())
    assert said.status_code == 400 and "verdict must be one of" in said.json()["error"]
    assert asks(runs / "address")[0][1] is None


def test_partials_and_a_search_folder_being_written(client: TestClient, runs: Path) -> None:
    signed_in(client)
    rows = client.get("/partials/runs").text
    assert 'data-run="refund"' in rows and 'data-status="waiting"' in rows and "<html" not in rows
    inbox = client.get("/partials/inbox").text
    assert 'data-key="refund/t6"' in inbox and 'data-key="address/q"' in inbox and "<html" not in inbox
    search = runs / "search-1"
    search.mkdir()
    (search / "events.jsonl").write_text('{"event": "generation", "generation": 0}\n{"event": "gen')
    page = client.get("/runs/search-1")
    assert page.status_code == 200 and 'data-status="running"' in page.text
    assert 'class="no"' in page.text  # what cannot be drawn yet is said, not a 500
