"""One live MCP server per :class:`Connection`: its own event loop on its own thread, so the
executor's worker threads (and the import) make calls with a plain blocking API and a timeout.

The SDK is asynchronous and its client must be entered and left by one task: :meth:`Connection._serve`
is that task, holding the session open until the connection closes; calls are tasks of the same
loop that share the session (requests are multiplexed). A stdio server's stderr goes to a file of
its own, whose tail is quoted when the server dies or is not an MCP server at all. A server that
dies is started again (:data:`evolve.defaults.MCP_RESTARTS` times per session); the call it was
serving is reported lost, and the tool adapter decides whether it may be made again (a read may, a
write whose outcome is unknown may not).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import os
import tempfile
import threading
import time
from collections.abc import Coroutine
from typing import Any, TextIO, TypeVar, cast

import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from evolve import defaults
from evolve.mcp.servers import McpError, ServerSpec

T = TypeVar("T")

logging.getLogger("mcp.client").setLevel(logging.CRITICAL)
"""The SDK logs what it cannot parse with a traceback; evolve says it in one line instead."""


class Lost(Exception):
    """The server went away during a call (its process died, its connection closed);
    ``generation`` is the start the call was made on."""

    def __init__(self, message: str, generation: int) -> None:
        super().__init__(message)
        self.generation = generation


def flat(exc: BaseException) -> BaseException:
    """The first leaf of nested exception groups (anyio wraps a task's failure in one)."""
    inner = getattr(exc, "exceptions", None)  # BaseExceptionGroup (3.11, or its backport)
    while isinstance(inner, tuple) and inner and isinstance(inner[0], BaseException):
        exc = inner[0]
        inner = getattr(exc, "exceptions", None)
    return exc


def one_line(exc: BaseException) -> str:
    """An error of the SDK in one line; a malformed message names its field (``tools[1].inputSchema.type:
    Input should be 'object'``), as the loader names a file's."""
    leaf = flat(exc)
    if isinstance(leaf, ValidationError) and leaf.errors():
        first = leaf.errors()[0]
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"])
        more = f" (and {leaf.error_count() - 1} more)" if leaf.error_count() > 1 else ""
        return f"{where.lstrip('.')}: {first['msg']}{more}"
    text = " ".join(str(leaf).split()) or type(leaf).__name__
    return text if len(text) < 300 else text[:297] + "..."


class Connection:
    """A server named by ``spec``, started (or reached) by :meth:`start`, closed by :meth:`close`."""

    def __init__(self, spec: ServerSpec, *, connect_timeout: float = defaults.MCP_CONNECT_TIMEOUT) -> None:
        self.spec = spec
        self.connect_timeout = connect_timeout
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True,
                                       name=f"evolve-mcp-{spec.name}")
        self.thread.start()
        self.lock = threading.Lock()
        self.client: Client | None = None
        self.closing: asyncio.Event | None = None
        self.serving: concurrent.futures.Future[None] | None = None
        self.generation = 0
        """Counts the starts; a call remembers the one it was made on, so two threads that see
        the same death restart the server once."""
        self.restarts = 0
        self.stderr = tempfile.NamedTemporaryFile(  # noqa: SIM115 (open while the server lives)
            "a+", encoding="utf-8", errors="replace", prefix=f"evolve-mcp-{spec.name}-", suffix=".log")

    # -- the loop thread -------------------------------------------------------------------
    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def wait(self, coro: Coroutine[Any, Any, T], timeout: float, what: str) -> T:
        """Run ``coro`` on the loop; past ``timeout`` seconds it is cancelled and a one-line
        error says ``what`` did not answer."""
        future = self.submit(coro)
        try:
            return future.result(timeout=max(0.0, timeout))
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpError(f"MCP server {self.spec.describe()}: no answer to {what} within "
                           f"{timeout:g} s{self.tail()}") from None

    async def _serve(self, ready: asyncio.Future[Client]) -> None:
        """Hold one session open until :meth:`close` (or the server) ends it."""
        self.closing = asyncio.Event()
        try:
            async with self.make_client() as client:
                ready.set_result(client)
                await self.closing.wait()
        except Exception as exc:  # the SDK's errors come wrapped in exception groups
            if not ready.done():
                ready.set_exception(exc)

    def make_client(self) -> Client:
        if self.spec.url is not None:
            return Client(self.spec.url, cache=None)
        params = StdioServerParameters(command=self.spec.command[0], args=list(self.spec.command[1:]),
                                       env=dict(os.environ))
        return Client(stdio_client(params, errlog=cast(TextIO, self.stderr)), cache=None)

    async def _open(self) -> Client:
        ready: asyncio.Future[Client] = self.loop.create_future()
        self.serving = asyncio.run_coroutine_threadsafe(self._serve(ready), self.loop)
        return await ready

    # -- the blocking API ------------------------------------------------------------------
    def start(self) -> None:
        """Start (or reach) the server and finish the handshake; a one-line error otherwise."""
        with self.lock:
            self.begin()

    def begin(self) -> None:
        """:meth:`start` with the lock held."""
        self.client = None
        try:
            self.client = self.wait(self._open(), self.connect_timeout, "the handshake")
        except McpError:
            raise
        except Exception as exc:
            raise McpError(f"MCP server {self.spec.describe()}: not an MCP server, or it failed to "
                           f"start ({one_line(exc)}){self.tail()}") from None
        self.generation += 1

    def restart(self, seen: int) -> bool:
        """Start the server again after a death seen on start ``seen``; ``False`` when the
        restarts are spent (another thread may have restarted it already: then ``True``)."""
        with self.lock:  # held throughout: a thread that sees the same death waits, then goes on
            if self.generation != seen:
                return True
            if self.restarts >= defaults.MCP_RESTARTS:
                return False
            self.restarts += 1
            self.shut()
            try:
                self.begin()
            except McpError:
                return False
            return True

    def session(self) -> tuple[Client, int]:
        if self.client is None:
            raise Lost("the server is not running", self.generation)
        return self.client, self.generation

    def list_tools(self) -> list[dict[str, Any]]:
        """Every tool the server lists, page after page, as JSON-RPC data (``inputSchema`` ...)."""
        client, _ = self.session()

        async def pages() -> list[dict[str, Any]]:
            found: list[dict[str, Any]] = []
            cursor: str | None = None
            for _ in range(defaults.MCP_LIST_PAGES):
                page = await client.list_tools(cursor=cursor)
                found += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
                cursor = page.next_cursor
                if cursor is None:
                    return found
            raise McpError(f"MCP server {self.spec.describe()}: tools/list still has more pages after "
                           f"{defaults.MCP_LIST_PAGES}")

        try:
            return self.wait(pages(), self.connect_timeout, "tools/list")
        except McpError:
            raise
        except Exception as exc:
            raise McpError(f"MCP server {self.spec.describe()}: tools/list failed or is malformed "
                           f"({one_line(exc)}){self.tail()}") from None

    def call(self, tool: str, arguments: dict[str, Any], meta: dict[str, Any],
             timeout: float) -> tuple[types.CallToolResult, int]:
        """``tools/call``; raises :class:`Lost` when the server went away during it,
        :class:`TimeoutError` past ``timeout`` (the request is cancelled), and the SDK's own
        errors otherwise. Returns the result and the start it was made on."""
        client, generation = self.session()
        coro = client.call_tool(tool, arguments, read_timeout_seconds=timeout, meta=meta)  # type: ignore[arg-type]
        future = self.submit(coro)
        try:
            return future.result(timeout=max(0.0, timeout)), generation
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer within {timeout:g} s") from None
        except MCPError as exc:
            if exc.code == types.CONNECTION_CLOSED:
                raise Lost(exc.message, generation) from None
            raise
        except (OSError, EOFError) as exc:
            raise Lost(one_line(exc), generation) from None

    def tail(self) -> str:
        """The last lines the server wrote on stderr, for an error message (empty: none)."""
        try:
            fd = self.stderr.fileno()
            size = os.fstat(fd).st_size
            start = max(0, size - defaults.MCP_STDERR_TAIL)
            text = os.pread(fd, size - start, start).decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        text = " | ".join(line.strip() for line in text.splitlines() if line.strip())
        return f"; its stderr ends: {text}" if text else ""

    def shut(self) -> None:
        """End the session (the SDK stops a stdio server: stdin closed, then signals)."""
        closing, serving = self.closing, self.serving
        self.client = None
        if closing is not None:
            self.loop.call_soon_threadsafe(closing.set)
        if serving is not None:
            try:
                serving.result(timeout=5)
            except concurrent.futures.TimeoutError:  # stuck in a handshake: cancelled, the
                serving.cancel()                     # SDK's shielded shutdown stops the process
                concurrent.futures.wait([serving], timeout=5)
            except BaseException:  # a session that failed on its way out is closed all the same
                pass

    def close(self) -> None:
        with self.lock:
            self.shut()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()
        self.stderr.close()


def connect(spec: ServerSpec, *, connect_timeout: float = defaults.MCP_CONNECT_TIMEOUT) -> Connection:
    """A started connection to ``spec`` (closed again if the start fails)."""
    conn = Connection(spec, connect_timeout=connect_timeout)
    try:
        conn.start()
    except BaseException:
        conn.close()
        raise
    return conn


def still(deadline: float) -> float:
    """Seconds left until the wall time ``deadline``."""
    return deadline - time.time()
