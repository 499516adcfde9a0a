"""A real chat-completions server with scripted replies, on 127.0.0.1, for tests and demos.

The operator's tests need an endpoint that misbehaves on cue (rate limits, hangs,
broken JSON) without a model or a network; users can use it the same way to
check a prompt template or a CI setup offline. It speaks just enough of the
OpenAI protocol: ``POST .../chat/completions`` answering with ``choices`` and
``usage``. A script is a function of the request body and how many times that
exact body was seen before, so a reply never depends on the order in which
concurrent requests arrive.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Scripted:
    """One scripted answer: the assistant's text (status 200), or an error status, after ``delay``
    seconds. ``raw`` replaces the whole response body (e.g. to send something that is not JSON).
    ``trickle`` sends the headers at once and then the body one byte every ``trickle`` seconds:
    the server that never trips a per-read timeout."""

    content: str | None = ""
    status: int = 200
    delay: float = 0.0
    raw: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    trickle: float = 0.0


Script = Callable[[dict[str, Any], int], Scripted]
"""``script(request_body, seen_before)`` -> the answer."""


class ScriptedServer:
    """A threaded HTTP server answering chat-completions requests from ``script``.

    ``url`` is the base URL to give a client (``http://127.0.0.1:PORT/v1``).
    ``requests`` holds every request body received, ``auth`` every Authorization
    header. :meth:`stop` also cuts short any scripted delay still running.
    """

    def __init__(self, script: Script, host: str = "127.0.0.1", port: int = 0) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self.auth: list[str | None] = []
        self.seen: dict[str, int] = {}
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.httpd = ThreadingHTTPServer((host, port), self.handler_class())
        self.httpd.daemon_threads = True
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def start(self) -> ScriptedServer:
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,),
                                       name="scripted-llm",
                                       daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def answer(self, body: dict[str, Any], auth: str | None) -> Scripted:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self.lock:
            self.requests.append(body)
            self.auth.append(auth)
            seen = self.seen.get(digest, 0)
            self.seen[digest] = seen + 1
        return self.script(body, seen)

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self.send_error(404)
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self.send_error(400, "body is not JSON")
                    return
                reply = server.answer(body, self.headers.get("Authorization"))
                if reply.delay and server.stopping.wait(reply.delay):
                    return
                payload = reply.raw if reply.raw is not None else json.dumps(
                    completion(body, reply.content) if reply.status == 200
                    else {"error": {"message": f"scripted status {reply.status}"}})
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload.encode())))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    if reply.trickle > 0:
                        self.wfile.flush()
                        for i in range(len(payload.encode())):
                            if server.stopping.wait(reply.trickle):
                                return
                            self.wfile.write(payload.encode()[i:i + 1])
                            self.wfile.flush()
                    else:
                        self.wfile.write(payload.encode())
                except OSError:
                    pass  # the client gave up (a scripted hang past its timeout)

            def log_message(self, format: str, *args: Any) -> None:
                return

        return Handler


def completion(body: dict[str, Any], content: str | None) -> dict[str, Any]:
    """A chat-completions response; token counts are whitespace-split words, which is enough
    to check that usage is read and summed."""
    prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    answer = len((content or "").split())
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion", "model": body.get("model", ""),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                     "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": answer,
                  "total_tokens": prompt + answer},
    }
