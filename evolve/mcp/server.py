"""``evolve mcp``: evolve as an MCP server, for any agent that speaks the protocol.

Tools: ``plan`` (a problem in, the best plan the search finds and its schedule out, within a
budget of generations; progress notifications each generation), ``validate``, ``execute``
(starts a durable run of a plan, ``evolve execute`` in a process of its own, and returns the
run's id), ``status``, ``pending``, ``approve``, ``reject``, ``answer``. Resources: a run's
outcome (``evolve://runs/{run}/outcome``) and report (``evolve://runs/{run}/report``).

Runs live in folders under one root (``--runs``, default ``runs/``); a run's id is its folder's
name, and nothing outside the root is read or written. A run waits for a person by polling its
journal (``--wait``), so a decision given through ``approve`` (journaled with who gave it, by
:func:`evolve.execute.inbox.decide_in`, exactly as ``evolve approve``) is taken up by the
running process; a run whose process has ended is resumed by the decision's tool.
"""

from __future__ import annotations

import getpass
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations

from evolve import defaults
from evolve.execute.inbox import decide_in
from evolve.execute.outcome import RunStatus
from evolve.execute.people import pending as pending_items
from evolve.execute.records import Verdict
from evolve.execute.session import read_run
from evolve.execute.state import RunState
from evolve.model.errors import EvolveError
from evolve.model.plan_file import load_plan
from evolve.model.validate import validate as validate_plan
from evolve.problems import load_problem
from evolve.report import write_execution_report
from evolve.run.folder import run_search
from evolve.run.location import new_run_dir
from evolve.search.options import SearchOptions

STARTED = 60.0
"""Seconds ``execute`` waits for the run's process to journal its start (or to refuse its input)."""

READ = ToolAnnotations(read_only_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False)


class Runs:
    """The runs this server starts and reads: folders under ``root``, and their processes."""

    def __init__(self, root: Path, wait: float) -> None:
        self.root = root
        self.wait = wait
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def folder(self, run: str) -> Path:
        """The folder of run ``run`` (its name under the root; nothing else)."""
        if not run or Path(run).name != run or run in (".", ".."):
            raise ToolError(f"run {run!r}: a run id is the name of its folder under {self.root}")
        path = self.root / run
        if not (path / "journal.sqlite").is_file():
            raise ToolError(f"run {run!r}: no such run under {self.root}")
        return path

    def running(self, run: str) -> bool:
        proc = self.procs.get(run)
        return proc is not None and proc.poll() is None

    def start(self, run: str, args: list[str]) -> subprocess.Popen[bytes]:
        """``evolve execute ARGS`` in a process of its own, its output in the run folder."""
        folder = self.root / run
        log = (folder / "mcp-session.log").open("ab")
        proc = subprocess.Popen([sys.executable, "-m", "evolve", "execute", *args], stdout=log,
                                stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
        log.close()
        self.procs[run] = proc
        return proc

    def resume(self, run: str) -> bool:
        """Continue the run when no process of this server runs it (``True``: started)."""
        if self.running(run):
            return False
        self.start(run, ["--resume", str(self.root / run), "--wait", f"{self.wait:g}", "--json"])
        return True


def document_file(value: str | Mapping[str, Any], folder: Path, name: str) -> str:
    """A path given as is, or a document given inline written to ``folder`` (as JSON)."""
    if isinstance(value, str):
        return value
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps(value, indent=1), encoding="utf-8")
    return str(path)


def started(folder: Path) -> bool:
    """Whether the run in ``folder`` has journaled what it is (its first transaction)."""
    if not (folder / "journal.sqlite").is_file():
        return False
    try:
        read_run(folder)[0].close()
    except EvolveError:
        return False
    return True


def failing(exc: Exception) -> ToolError:
    return ToolError(str(exc))


def build_server(root: Path, *, wait: float = defaults.MCP_RUN_WAIT) -> MCPServer:
    """The ``evolve mcp`` server over the runs under ``root`` (``wait``: seconds a run it starts
    waits for a person before it stops; ``approve`` resumes a stopped one)."""
    runs = Runs(root, wait)
    server = MCPServer("evolve", instructions=(
        "Plan with `plan` (a problem file or document), check a plan with `validate`, run it durably "
        "with `execute` (it returns a run id), then `status`; a run that needs a person shows in "
        "`pending`, and `approve`/`reject`/`answer` decide (journaled with `by`)."))

    @server.tool(annotations=WRITE)
    async def plan(problem: str | dict[str, Any], ctx: Context,
                   generations: int = defaults.MCP_PLAN_GENERATIONS,
                   seed: int = defaults.SEED) -> dict[str, Any]:
        """Search for the best plan of a problem (a file path, or the problem document): the plan,
        its schedule and objective values, and the search's run folder. Progress is reported each
        generation."""
        if generations < 1:
            raise ToolError("generations: at least 1")
        scratch = Path(tempfile.mkdtemp(prefix="evolve-mcp-"))
        try:
            loaded = load_problem(document_file(problem, scratch, "problem"))
        except EvolveError as exc:
            raise failing(exc) from None
        folder = new_run_dir(root)

        def generation(event: Mapping[str, Any]) -> None:
            done = int(event.get("generation", 0))  # 0: the first population, before any generation
            anyio.from_thread.run(ctx.report_progress, float(done), float(generations),
                                  f"generation {done} of {generations}")

        def search() -> Path:
            options = SearchOptions(generations=generations, seed=seed, jobs=1)
            return run_search(loaded, options=options, out_dir=folder, on_generation=generation,
                              overwrite=True).out_dir

        try:
            out = await anyio.to_thread.run_sync(search)
        except EvolveError as exc:
            raise failing(exc) from None
        best = json.loads((out / "best.json").read_text())
        summary = json.loads((out / "summary.json").read_text())
        steps = {k: v for k, v in best.items() if k != "schedule"}
        return {"run": out.name, "folder": str(out), "plan": steps,
                "schedule": best.get("schedule"), "best": summary.get("best"),
                "stop_reason": summary.get("stop_reason")}

    @server.tool(annotations=READ)
    def validate(problem: str | dict[str, Any], plan: str | dict[str, Any]) -> dict[str, Any]:
        """Check a plan against a problem (paths or documents): the validator's errors, if any."""
        scratch = Path(tempfile.mkdtemp(prefix="evolve-mcp-"))
        try:
            errors = validate_plan(load_problem(document_file(problem, scratch, "problem")),
                                   load_plan(document_file(plan, scratch, "plan")))
        except EvolveError as exc:
            raise failing(exc) from None
        return {"valid": not errors, "errors": [str(e) for e in errors]}

    @server.tool(annotations=WRITE)
    async def execute(problem: str | dict[str, Any], plan: str | dict[str, Any],
                      mcp: dict[str, str] | None = None, mcp_url: dict[str, str] | None = None,
                      tools: str | None = None, simulate: bool = False,
                      facts: dict[str, Any] | None = None) -> dict[str, Any]:
        """Start a durable run of a plan (``evolve execute``): its tools from MCP servers (``mcp``:
        name -> command; ``mcp_url``: name -> URL), a Python mapping (``tools``, MODULE:ATTR) or
        simulated. Returns the run's id at once; ``status`` follows it."""
        folder = new_run_dir(root)
        inputs = folder / "mcp-request"
        args = [document_file(plan, inputs, "plan"), "--problem", document_file(problem, inputs, "problem"),
                "--out", str(folder), "--wait", f"{runs.wait:g}", "--json"]
        for name, value in (facts or {}).items():
            args += ["--fact", f"{name}={json.dumps(value)}"]
        for name, command in (mcp or {}).items():
            args += ["--mcp", f"{name}={command}"]
        for name, url in (mcp_url or {}).items():
            args += ["--mcp-url", f"{name}={url}"]
        if tools is not None:
            args += ["--tools", tools]
        if simulate:
            args.append("--simulate")
        proc = runs.start(folder.name, args)
        began = time.monotonic()
        while time.monotonic() - began < STARTED:
            if proc.poll() is not None and proc.returncode == 2:
                said = (folder / "mcp-session.log").read_text(errors="replace").strip().splitlines()
                raise ToolError(said[-1] if said else "evolve execute refused the run (exit 2)")
            if proc.poll() is not None or started(folder):
                break
            await anyio.sleep(0.2)
        return {"run": folder.name, "folder": str(folder)}

    def state_of(run: str) -> tuple[RunState, Path]:
        folder = runs.folder(run)
        journal, _, _ = read_run(folder)
        try:
            return RunState.restore(journal), folder
        finally:
            journal.close()

    @server.tool(annotations=READ)
    def status(run: str) -> dict[str, Any]:
        """Where a run is: running or ended, each task's status, what it waits for, and once
        it has ended its outcome (status, reason, message)."""
        if runs.running(run) and not started(runs.root / run):
            return {"run": run, "running": True, "status": "starting", "tasks": {}, "pending": []}
        try:
            state, folder = state_of(run)
        except EvolveError as exc:
            raise failing(exc) from None
        waiting = pending_items(state)
        found: dict[str, Any] = {"run": run, "running": runs.running(run),
                                 "tasks": dict(state.status), "pending": [i["task"] for i in waiting]}
        outcome = folder / "outcome.json"
        if not found["running"] and outcome.is_file():
            done = json.loads(outcome.read_text())
            found.update({k: done.get(k) for k in ("status", "reason", "message")})
        else:
            found["status"] = RunStatus.WAITING if waiting else RunStatus.RUNNING
        return found

    @server.tool(annotations=READ)
    def pending(run: str) -> list[dict[str, Any]]:
        """What a run waits for: each task, its tool, the exact action (its hash), since when."""
        try:
            items: list[dict[str, Any]] = json.loads(json.dumps(pending_items(state_of(run)[0]), default=str))
        except EvolveError as exc:
            raise failing(exc) from None
        return items

    def decide(run: str, task: str, verdict: Verdict, by: str | None, note: str | None,
               action: str | None = None, outputs: Any = None) -> dict[str, Any]:
        who = by or getpass.getuser()
        try:
            made = decide_in(runs.folder(run), task, verdict, by=who, note=note, action=action,
                             outputs=outputs, name=run)
        except EvolveError as exc:
            raise failing(exc) from None
        resumed = runs.resume(run)
        return {"run": run, "task": task, "verdict": verdict, "by": who, "action_hash": made.action_hash,
                "resumed": resumed}

    @server.tool(annotations=WRITE)
    def approve(run: str, task: str, by: str | None = None, note: str | None = None,
                action: str | None = None) -> dict[str, Any]:
        """Approve the action a run's task waits for (``action``: its hash or a prefix, refused
        if no longer pending); journaled with ``by`` (default: this server's user)."""
        return decide(run, task, Verdict.APPROVED, by, note, action)

    @server.tool(annotations=WRITE)
    def reject(run: str, task: str, note: str, by: str | None = None,
               action: str | None = None) -> dict[str, Any]:
        """Reject the action a run's task waits for (``note``: why, required)."""
        if not note.strip():
            raise ToolError("note: say why the action is rejected")
        return decide(run, task, Verdict.REJECTED, by, note, action)

    @server.tool(annotations=WRITE)
    def answer(run: str, task: str, outputs: dict[str, Any], by: str | None = None,
               note: str | None = None) -> dict[str, Any]:
        """Give the outputs of a task a person owns (each output its tool declares)."""
        return decide(run, task, Verdict.ANSWERED, by, note, outputs=outputs)

    @server.resource("evolve://runs/{run}/outcome", mime_type="application/json")
    def outcome(run: str) -> str:
        """A run's outcome.json (what ``evolve execute --json`` prints)."""
        path = runs.folder(run) / "outcome.json"
        return path.read_text() if path.is_file() else json.dumps({"status": RunStatus.RUNNING})

    @server.resource("evolve://runs/{run}/report", mime_type="text/html")
    def report(run: str) -> str:
        """A run's report.html (written from its journal when it has none yet)."""
        folder = runs.folder(run)
        path = folder / "report.html"
        return (path if path.is_file() else write_execution_report(folder)).read_text()

    return server


def serve(root: Path, *, http_port: int | None, wait: float) -> None:
    """Serve until the client goes (stdio) or the process is stopped (HTTP on 127.0.0.1)."""
    server = build_server(root, wait=wait)
    if http_port is None:
        if sys.__stdout__ is not None:  # the protocol owns stdout: the SDK claims the real stream
            sys.stdout = sys.__stdout__  # (not the command line's broken-pipe-safe wrapper)
        server.run()
    else:
        server.run("streamable-http", host=defaults.MCP_HTTP_HOST, port=http_port)


__all__ = ["build_server", "serve"]
