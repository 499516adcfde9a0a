"""The ``evolve serve`` web application (Starlette): runs, one run live, the inbox, and the API.

Routes (every one behind the token, see :mod:`evolve.serve.auth`):

- ``GET /``, ``/partials/runs``: the runs, newest first (the partial is what the page fetches
  again every few seconds, so the list follows the runs without a reload);
- ``GET /runs/NAME``: one run; ``GET /runs/NAME/events``: its events as server-sent events,
  from the journal as they are committed (a search's from its ``events.jsonl``);
- ``GET /inbox``, ``/partials/inbox``; ``POST /inbox/decide``: a person's decision from a form;
- ``GET /api/runs``, ``/api/runs/NAME``, ``/api/pending``; ``POST /api/decide`` (JSON) for scripts;
- ``GET /static/FILE``: the styles and scripts, from the package (no CDN; works offline).

A decision goes through :func:`evolve.execute.inbox.decide_in`, as ``evolve approve`` does.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import URL
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from evolve import defaults
from evolve.execute.inbox import decide_in
from evolve.execute.journal import JournalError
from evolve.execute.outcome import RunStatus
from evolve.execute.people import DecisionError
from evolve.execute.records import VERDICTS, Verdict
from evolve.execute.session import JOURNAL
from evolve.model.errors import EvolveError
from evolve.report.assets import CSS, PAGE_JS
from evolve.report.execution import EXTRA_CSS, event_detail
from evolve.report.execution_data import EVENTS
from evolve.serve import pages
from evolve.serve.auth import COOKIE, CSRF_FIELD, CSRF_HEADER, Auth, Session
from evolve.serve.runs import RunInfo, Runs, run_folder
from evolve.serve.workers import Workers

LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")
CSP = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")


@dataclass(frozen=True)
class Settings:
    """What one server serves and how."""

    root: Path
    auth: Auth
    resume_on_decision: bool = False
    loopback_only: bool = True
    """Accept only loopback names in the Host header (a DNS-rebinding page cannot reach the server)."""
    resume_command: tuple[str, ...] | None = None
    """The worker's command before the run folder (default ``python -m evolve execute --resume``)."""
    scan_ttl: float = defaults.SERVE_SCAN_TTL
    """See :data:`evolve.defaults.SERVE_SCAN_TTL`."""
    warm: bool = True
    """Read every run's pending items in the background at start (a benchmark of the cold first
    request turns it off)."""


def static_files() -> dict[str, tuple[str, str]]:
    """The assets by name: the report's own styles and scripts, and the server's from the package."""
    here = resources.files("evolve.serve") / "static"
    return {
        "report.css": ("text/css", CSS + EXTRA_CSS),
        "report.js": ("text/javascript", PAGE_JS),
        "serve.css": ("text/css", (here / "serve.css").read_text(encoding="utf-8")),
        "serve.js": ("text/javascript", (here / "serve.js").read_text(encoding="utf-8")),
    }


class Guard:
    """Every request authenticated (401 otherwise), cross-site POSTs refused (403), and the
    security headers on every answer."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.auth = settings.auth
        self.loopback_only = settings.loopback_only

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        refused = self.check(request)
        if isinstance(refused, Response):
            await secured(refused)(scope, receive, send)
            return
        person, session = refused
        scope.setdefault("state", {})
        scope["state"]["person"] = person
        scope["state"]["session"] = session

        async def send_secured(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend((k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items())
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_secured)

    def check(self, request: Request) -> Response | tuple[str, Session | None]:
        host = (request.url.hostname or "").lower()
        if self.loopback_only and host not in LOOPBACK and f"[{host}]" not in LOOPBACK:
            return PlainTextResponse(f"400: host {host!r} is not this server's (it listens on loopback)", 400)
        header = request.headers.get("authorization", "")
        if header:
            scheme, _, token = header.partition(" ")
            bearer = self.auth.owner(token.strip()) if scheme.lower() == "bearer" else None
            if bearer is None:
                return unauthorized("the Authorization header carries no valid Bearer token")
            return bearer, None
        session = self.auth.session(request.cookies.get(COOKIE))
        if session is None:
            query_token = request.query_params.get("token")
            person = self.auth.owner(query_token)
            if person is None or request.method not in ("GET", "HEAD"):
                return unauthorized("open the address evolve serve printed (with its ?token=), "
                                    "or send Authorization: Bearer TOKEN")
            sid = self.auth.open_session(person)
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            answer = RedirectResponse(target, status_code=303)
            answer.set_cookie(COOKIE, sid, httponly=True, samesite="strict", path="/",
                              secure=request.url.scheme == "https")
            return answer
        if request.method not in ("GET", "HEAD"):
            site = request.headers.get("sec-fetch-site")
            origin = request.headers.get("origin")
            mine = f"{request.url.scheme}://{request.url.netloc}"
            if (origin is not None and origin != mine) or site == "cross-site":
                return PlainTextResponse(f"403: a request from {origin or 'another site'} may not change "
                                         "anything here", 403)
        return session.person, session


SECURITY_HEADERS = {
    "content-security-policy": CSP,
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",  # no-referrer would make Chromium send Origin: null on POST
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


def secured(response: Response) -> Response:
    response.headers.update(SECURITY_HEADERS)
    return response


def unauthorized(why: str) -> Response:
    return PlainTextResponse(f"401: not signed in: {why}", 401, headers={"www-authenticate": "Bearer"})


def person_of(request: Request) -> str:
    return str(request.state.person)


def session_of(request: Request) -> Session | None:
    session = request.state.session
    return session if isinstance(session, Session) else None


class Server:
    """The application's state: the runs, the workers, the settings."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.root = settings.root
        self.workers = Workers(settings.resume_command)
        self.runs = Runs(settings.root, self.workers.running, settings.scan_ttl)
        self.assets = static_files()
        self.stopping = threading.Event()
        """Set when the server is told to stop: the event streams end, so it need not wait for them."""

    # -- pages --------------------------------------------------------------------------------

    async def page(self, request: Request, title: str, body: str, active: str) -> HTMLResponse:
        session = session_of(request)
        flash = []
        if session is not None:
            flash, session.flash = session.flash, []
        csrf = session.csrf if session is not None else ""
        pending = len(await run_in_threadpool(self.runs.pending))
        return HTMLResponse(pages.layout(title, body, person=person_of(request), csrf=csrf, active=active,
                                         flash=flash, pending=pending))

    async def index(self, request: Request) -> Response:
        runs = await run_in_threadpool(self.runs.all)
        return await self.page(request, "evolve: runs", pages.runs_page(runs, self.root), "runs")

    async def runs_partial(self, request: Request) -> Response:
        runs = await run_in_threadpool(self.runs.all)
        return HTMLResponse(pages.runs_rows(runs))

    def csrf(self, request: Request) -> str:
        session = session_of(request)
        return session.csrf if session is not None else ""

    async def inbox(self, request: Request) -> Response:
        items = await run_in_threadpool(self.runs.pending)
        body = pages.inbox_page(items, self.csrf(request), self.root, dict(self.runs.errors))
        return await self.page(request, "evolve: inbox", body, "inbox")

    async def inbox_partial(self, request: Request) -> Response:
        items = await run_in_threadpool(self.runs.pending)
        return HTMLResponse(pages.inbox_items(items, self.csrf(request), self.root, dict(self.runs.errors)))

    def named(self, request: Request) -> tuple[str, Path] | Response:
        name = str(request.path_params["name"])
        folder = run_folder(self.root, name)
        if folder is None or self.runs.info(name) is None:
            return PlainTextResponse(f"404: no run {name!r} in this folder", 404)
        return name, folder

    async def with_pending(
        self, request: Request
    ) -> tuple[str, Path, RunInfo, list[dict[str, Any]]] | Response:
        """The run the path names, its folder, what is known of it and (an execution) what it
        waits for; or the response that says why there is none."""
        found = self.named(request)
        if isinstance(found, Response):
            return found
        name, folder = found
        info = self.runs.info(name)
        assert info is not None
        pending = await run_in_threadpool(self.runs.pending_of, name) if info.kind == "execution" else []
        return name, folder, info, pending

    async def run(self, request: Request) -> Response:
        found = await self.with_pending(request)
        if isinstance(found, Response):
            return found
        name, folder, info, pending = found
        body = await run_in_threadpool(pages.run_page, info, folder, pending, self.csrf(request), self.root)
        return await self.page(request, f"evolve: {name}", body, "runs")

    # -- the event stream ---------------------------------------------------------------------

    async def events(self, request: Request) -> Response:
        found = self.named(request)
        if isinstance(found, Response):
            return found
        name, folder = found
        try:
            after = max(0, int(request.query_params.get("after", "0")))
        except ValueError:
            return PlainTextResponse("400: after= must be a whole number", 400)
        if "last-event-id" in request.headers:
            with suppress(ValueError):
                after = max(after, int(request.headers["last-event-id"]))
        read = journal_reader(folder) if (folder / JOURNAL).is_file() else lines_reader(folder)
        return StreamingResponse(self.stream(name, read, after), media_type="text/event-stream",
                                 headers={"x-accel-buffering": "no"})

    async def stream(self, name: str, read: Callable[[int], list[dict[str, Any]]], after: int
                     ) -> AsyncIterator[str]:
        seen = after
        status = None
        idle = 0.0
        loop = asyncio.get_running_loop()
        while not self.stopping.is_set():
            batch = await loop.run_in_executor(None, read, seen)
            if batch:
                seen = int(batch[-1]["seq"])
                yield f"id: {seen}\nevent: events\ndata: {json.dumps(batch, default=str)}\n\n"
                idle = 0.0
            info = self.runs.info(name)
            now = info.status if info is not None else "gone"
            if name in self.workers.running():
                now = RunStatus.RUNNING
            if now != status:
                status = now
                yield f"event: status\ndata: {json.dumps({'status': now})}\n\n"
            if not batch:
                await asyncio.sleep(defaults.SERVE_STREAM_POLL)
                idle += defaults.SERVE_STREAM_POLL
                if idle >= defaults.SERVE_HEARTBEAT:
                    idle = 0.0
                    yield ": keep-alive\n\n"

    # -- decisions ----------------------------------------------------------------------------

    async def take(self, request: Request, fields: Mapping[str, Any], *, form: bool) -> tuple[int, str]:
        """Check and commit one decision; (HTTP status, message for the person)."""
        run, task = str(fields.get("run") or ""), str(fields.get("task") or "")
        verdict = str(fields.get("verdict") or "")
        note = str(fields.get("note") or "").strip() or None
        action = str(fields.get("action") or "").strip() or None
        folder = run_folder(self.root, run)
        if folder is None or self.runs.info(run) is None:
            return 404, f"no run {run!r} in this folder"
        if verdict not in VERDICTS:
            return 400, f"verdict must be one of {', '.join(VERDICTS)}, got {verdict!r}"
        chosen = Verdict(verdict)
        if chosen == Verdict.REJECTED and note is None:
            return 400, f"{run}: {task}: say why the action is rejected (the note is empty)"
        if form and chosen != Verdict.ANSWERED and action is None:
            return 400, f"{run}: {task}: the form carries no action hash; load the inbox again"
        outputs: Any = fields.get("outputs")
        if chosen == Verdict.ANSWERED and isinstance(outputs, str):
            try:
                outputs = json.loads(outputs)
            except (json.JSONDecodeError, RecursionError) as exc:
                return 400, f"{run}: {task}: the outputs are not JSON ({exc})"
        person = person_of(request)

        def commit() -> str:
            try:
                made = decide_in(folder, task, chosen, by=person, note=note, action=action, outputs=outputs,
                                 name=run)
            except JournalError:
                # Another decision was committed between our check and our write: the first
                # wins. Checking again names it ("was approved by ... already").
                decide_in(folder, task, chosen, by=person, note=note, action=action, outputs=outputs,
                          name=run)
                return f"{run}: {task} {verdict} by {person}"
            digest = f" (action {made.action_hash[:12]})" if made.action_hash else ""
            return f"{run}: {made.task_id} {verdict} by {person}{digest}"

        try:
            said = await run_in_threadpool(commit)
        except (DecisionError, JournalError) as exc:
            return 409, str(exc)
        except sqlite3.OperationalError as exc:  # the journal stayed locked past SQLite's wait
            return 503, f"{run}: the run's journal is busy ({exc}); try again"
        except EvolveError as exc:
            return 400, str(exc)
        self.runs.forget()
        if self.settings.resume_on_decision:
            self.workers.resume(run, folder)
            said += "; the run is resumed"
        else:
            said += f"; go on with: evolve execute --resume {folder}"
        return 200, said

    async def decide_form(self, request: Request) -> Response:
        form = await request.form()
        session = session_of(request)
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        if session is None or not Auth.csrf_ok(session, fields.get(CSRF_FIELD)):
            return PlainTextResponse("403: the form's CSRF token is missing or not this session's; "
                                     "load the page again", 403)
        code, said = await self.take(request, fields, form=True)
        session.flash.append(("ok" if code == 200 else "no", said))
        back = URL("/inbox")
        if fields.get("back") == "run" and run_folder(self.root, fields.get("run", "")) is not None:
            back = URL(f"/runs/{fields['run']}")
        return RedirectResponse(str(back), status_code=303)

    async def decide_api(self, request: Request) -> Response:
        session = session_of(request)
        if session is not None and not Auth.csrf_ok(session, request.headers.get(CSRF_HEADER)):
            return JSONResponse({"ok": False, "error": "missing or wrong X-CSRF-Token"}, 403)
        try:
            fields = await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return JSONResponse({"ok": False, "error": "the body is not JSON"}, 400)
        if not isinstance(fields, dict):
            return JSONResponse({"ok": False, "error": "expected a JSON object"}, 400)
        code, said = await self.take(request, fields, form=False)
        body = {"ok": True, "message": said} if code == 200 else {"ok": False, "error": said}
        return JSONResponse(body, code)

    # -- the API ------------------------------------------------------------------------------

    async def api_runs(self, request: Request) -> Response:
        runs = await run_in_threadpool(self.runs.all)
        return JSONResponse([r.to_dict() for r in runs])

    async def api_run(self, request: Request) -> Response:
        found = await self.with_pending(request)
        if isinstance(found, Response):
            return found
        name, _, info, pending = found
        ended = self.workers.ended.get(name)
        worker = None if ended is None else {"status": ended.status, "at": ended.at, "tail": ended.tail}
        return JSONResponse({**info.to_dict(), "pending": pending, "worker": worker,
                             "resuming": name in self.workers.running()})

    async def api_pending(self, request: Request) -> Response:
        items = await run_in_threadpool(self.runs.pending)
        return Response(json.dumps(items, default=str), media_type="application/json")

    async def static(self, request: Request) -> Response:
        name = str(request.path_params["name"])
        if name not in self.assets:
            return PlainTextResponse("404: no such asset", 404)
        kind, text = self.assets[name]
        return Response(text, media_type=kind)

    def warm(self) -> None:
        """Read every run's pending items once at start, so the first inbox is quick too."""
        with suppress(Exception):  # a warm-up that fails costs only the first page's speed
            self.runs.pending()


def journal_reader(folder: Path) -> Callable[[int], list[dict[str, Any]]]:
    """The events of an execution after a sequence number, read from its journal (read only),
    each with the report's one-line detail."""
    path = folder / JOURNAL

    def read(after: int) -> list[dict[str, Any]]:
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        except sqlite3.Error:
            return []
        try:
            rows = db.execute("SELECT seq, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
                              (after, defaults.SERVE_STREAM_BATCH)).fetchall()
        except sqlite3.Error:
            return []
        finally:
            db.close()
        return [shown(int(seq), json.loads(body)) for seq, body in rows]

    return read


def lines_reader(folder: Path) -> Callable[[int], list[dict[str, Any]]]:
    """The events of a search after a line number, read from its ``events.jsonl``."""
    path = folder / EVENTS
    offset = {"lines": 0, "bytes": 0}

    def read(after: int) -> list[dict[str, Any]]:
        if after < offset["lines"]:
            offset["lines"], offset["bytes"] = 0, 0
        try:
            with path.open("rb") as stream:
                stream.seek(offset["bytes"])
                chunk = stream.read()
        except OSError:
            return []
        out = []
        end = chunk.rfind(b"\n") + 1  # a line being written is read when it is whole
        for line in chunk[:end].splitlines():
            offset["lines"] += 1
            if offset["lines"] <= after or not line.strip():
                continue
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict):
                out.append(shown(offset["lines"], event))
        offset["bytes"] += end
        return out

    return read


def shown(seq: int, event: Mapping[str, Any]) -> dict[str, Any]:
    return {"seq": seq, "time": event.get("time"), "event": str(event.get("event", "")),
            "task": event.get("task", ""), "detail": event_detail(event)}


def make_app(settings: Settings) -> Starlette:
    """The application over ``settings.root``."""
    server = Server(settings)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if settings.warm:
            threading.Thread(target=server.warm, daemon=True, name="evolve-serve-warm").start()
        yield
        await server.workers.close()

    def route(path: str, endpoint: Callable[[Request], Awaitable[Response]], methods: list[str]) -> Route:
        return Route(path, endpoint, methods=methods)

    routes = [
        route("/", server.index, ["GET"]),
        route("/partials/runs", server.runs_partial, ["GET"]),
        route("/inbox", server.inbox, ["GET"]),
        route("/partials/inbox", server.inbox_partial, ["GET"]),
        route("/inbox/decide", server.decide_form, ["POST"]),
        route("/runs/{name}", server.run, ["GET"]),
        route("/runs/{name}/events", server.events, ["GET"]),
        route("/api/runs", server.api_runs, ["GET"]),
        route("/api/runs/{name}", server.api_run, ["GET"]),
        route("/api/pending", server.api_pending, ["GET"]),
        route("/api/decide", server.decide_api, ["POST"]),
        route("/static/{name}", server.static, ["GET"]),
    ]
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.server = server
    app.add_middleware(Guard, settings=settings)  # type: ignore[arg-type]
    return app
