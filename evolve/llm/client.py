"""A small chat-completions client for any OpenAI-compatible endpoint.

Written on httpx rather than the ``openai`` package so that retries, backoff and
the timeout are ours to decide and to test: a local llama.cpp server, vLLM,
Ollama and OpenAI differ in which errors are worth retrying, and a run must
never hang on one of them. The client returns the model's text and the
endpoint's ``usage``; it never interprets the text.

``timeout`` is a deadline for the whole call, every attempt, backoff and byte of
the answer included: httpx's own timeouts bound each read, so a server that
trickles a byte a second would never trip them. Each attempt gets the time
left as its httpx timeout, and once the headers are in, a timer shuts the
connection's socket at the deadline, which ends even a read blocked in C.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import httpx

from evolve import defaults
from evolve.model.errors import UsageError

RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
"""Statuses that mean "try again later": rate limits and an overloaded or restarting server."""


class Closes:
    """A context manager whose exit calls :meth:`close` (the HTTP client and what owns one)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class Completion:
    """One answered call: the text and what it cost."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    latency: float
    attempts: int
    finish_reason: str | None = None


class CallError(Exception):
    """A call that produced no text. ``kind`` is a short stable word used in counters and events:
    ``timeout``, ``http``, ``connection`` or ``protocol``."""

    def __init__(self, kind: str, message: str, *, attempts: int, latency: float) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message
        self.attempts = attempts
        self.latency = latency


class ChatClient(Closes):
    """POSTs to ``{base_url}/chat/completions`` with retries on 429/5xx and connection errors.

    ``timeout`` bounds the whole call (see the module docstring); ``read_timeout``
    (default: the same) bounds one wait for bytes, so with a shorter one and
    ``retry_timeouts`` a stalled attempt can be retried within the deadline.
    A call that times out is not retried by default: a server that hung once will
    usually hang again, and retrying would multiply the time a generation waits.
    Backoff is exponential without jitter (``backoff * 2**k`` capped at
    ``max_backoff`` and at the time left; a ``Retry-After`` header in seconds wins
    when present), so no random state is involved; it only decides when a call
    is sent, never what.
    """

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None,
                 timeout: float = defaults.LLM_TIMEOUT, read_timeout: float | None = None,
                 max_retries: int = defaults.LLM_MAX_RETRIES, backoff: float = defaults.LLM_BACKOFF,
                 max_backoff: float = defaults.LLM_MAX_BACKOFF, retry_timeouts: bool = False,
                 transport: httpx.BaseTransport | None = None,
                 sleep: Callable[[float], None] = time.sleep,
                 extra_body: Mapping[str, Any] | None = None) -> None:
        if timeout <= 0:
            raise UsageError(f"timeout must be positive, got {timeout}")
        if read_timeout is not None and read_timeout <= 0:
            raise UsageError(f"read_timeout must be positive, got {read_timeout}")
        if max_retries < 0:
            raise UsageError(f"max_retries must be >= 0, got {max_retries}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.extra_body = check_extra_body(extra_body or {})
        self.timeout = timeout
        self.read_timeout = min(read_timeout or timeout, timeout)
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.retry_timeouts = retry_timeouts
        self.sleep = sleep
        headers = {"Content-Type": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.http = httpx.Client(timeout=httpx.Timeout(self.read_timeout), headers=headers,
                                 transport=transport)

    def close(self) -> None:
        self.http.close()

    def complete(self, messages: Sequence[Mapping[str, str]],
                 settings: Mapping[str, Any]) -> Completion:
        """The model's reply to ``messages``; ``settings`` (temperature, max_tokens, seed,
        response_format, ...) go into the request body as they are, and the client's
        ``extra_body`` over them (:meth:`request`). Raises :class:`CallError`, at the latest when
        the deadline ``timeout`` has passed."""
        body = {"model": self.model, "messages": [dict(m) for m in messages], **self.request(settings)}
        began = time.perf_counter()
        ends = began + self.timeout
        attempt = 0
        last = ""
        while True:
            if time.perf_counter() >= ends:
                raise self.overdue(attempt, began, last)
            attempt += 1
            delay: float | None = None
            try:
                response = self.send(body, ends)
            except httpx.TimeoutException as exc:
                if time.perf_counter() >= ends:
                    raise self.overdue(attempt, began, last) from None
                if not self.retry_timeouts or attempt > self.max_retries:
                    raise CallError("timeout", f"no answer in time ({type(exc).__name__})",
                                    attempts=attempt, latency=time.perf_counter() - began) from None
                error = CallError("timeout", type(exc).__name__, attempts=attempt, latency=0.0)
            except httpx.TransportError as exc:
                if time.perf_counter() >= ends:
                    raise self.overdue(attempt, began, last) from None
                error = CallError("connection", f"{type(exc).__name__}: {exc}", attempts=attempt,
                                  latency=0.0)
            else:
                if response.status_code == 200:
                    return parse_response(response, attempt, time.perf_counter() - began)
                error = CallError("http", f"HTTP {response.status_code}: {response.text[:200]}",
                                  attempts=attempt, latency=0.0)
                if response.status_code not in RETRY_STATUS:
                    error.latency = time.perf_counter() - began
                    raise error
                delay = retry_after(response.headers.get("retry-after"))
            last = error.message
            if attempt > self.max_retries:
                error.latency = time.perf_counter() - began
                raise error
            wait = self.backoff * 2 ** (attempt - 1) if delay is None else delay
            self.sleep(max(0.0, min(wait, self.max_backoff, ends - time.perf_counter())))

    def request(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The request's fields besides the model and the messages: ``settings`` and, over them,
        the client's ``extra_body`` (switches a server accepts, such as ``enable_thinking:
        false``). What a reply cache keys on, since a switch changes the reply."""
        return {**settings, **self.extra_body}

    def send(self, body: Mapping[str, Any], ends: float) -> httpx.Response:
        """One attempt, read in full, given until ``ends`` (a ``perf_counter`` time) at most."""
        left = max(ends - time.perf_counter(), 1e-3)
        with self.http.stream("POST", self.url, json=body,
                              timeout=httpx.Timeout(min(self.read_timeout, left))) as response:
            stream = response.extensions.get("network_stream")
            timer = threading.Timer(max(ends - time.perf_counter(), 0.0), cut, args=(stream,))
            timer.daemon = True
            timer.start()
            try:
                response.read()
            finally:
                timer.cancel()
        return response

    def overdue(self, attempts: int, began: float, last: str) -> CallError:
        after = f" (last: {last})" if last else ""
        return CallError("timeout", f"no complete answer within the call's {self.timeout:g}s "
                         f"deadline{after}", attempts=attempts, latency=time.perf_counter() - began)


EXTRA_BODY_RESERVED = frozenset({"model", "messages", "stream"})
"""Request fields an extra body may not set: the client owns them."""


def check_extra_body(extra: Mapping[str, Any]) -> dict[str, Any]:
    """``extra`` as the client sends it; raises :class:`UsageError` for a field the client owns."""
    if not isinstance(extra, Mapping):
        raise UsageError(f"the extra body must be a JSON object, got {type(extra).__name__}")
    owned = sorted(set(extra) & EXTRA_BODY_RESERVED)
    if owned:
        raise UsageError(f"the extra body may not set {', '.join(owned)} (the client sends it)")
    return dict(extra)


def cut(stream: object) -> None:
    """Shut a connection's socket, which wakes a read blocked on it (the deadline's timer)."""
    get = getattr(stream, "get_extra_info", None)
    sock = get("socket") if callable(get) else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):  # already closed: the read has ended anyway
            sock.shutdown(socket.SHUT_RDWR)


def retry_after(value: str | None) -> float | None:
    """Seconds from a ``Retry-After`` header; ``None`` when absent or an HTTP date."""
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def parse_response(response: httpx.Response, attempts: int, latency: float) -> Completion:
    """Text and usage from a chat-completions body; a body of another shape is a protocol error."""
    try:
        data = response.json()
        choice = data["choices"][0]
        text = choice.get("message", {}).get("content") or ""
        usage = data.get("usage") or {}
        return Completion(
            text=str(text),
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency=latency,
            attempts=attempts,
            finish_reason=choice.get("finish_reason"),
        )
    except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
        detail = f"not a chat-completions response ({type(exc).__name__}: {exc})"
        raise CallError("protocol", f"{detail}; body starts {response.text[:120]!r}",
                        attempts=attempts, latency=latency) from None


class OwnsClient(Closes):
    """For what holds a :class:`ChatClient` in ``self.client``: a context manager that closes it."""

    client: ChatClient

    def close(self) -> None:
        self.client.close()

