"""MCP servers as the tools a plan runs: each catalog tool a server lists becomes a tool callable
``fn(inputs, call)`` of the executor (:mod:`evolve.execute.tools`), so everything the executor
promises holds as for Python tools: the call is journaled before it is made, retried by the
task's policy, cut off at its timeout, held for an approval bound to the exact action.

A call is ``tools/call`` on the server that lists the tool: the task's bound inputs are the
arguments, under the tool's own parameter names (an input whose fact name was cleaned at import
is given back its parameter's name); ``_meta`` carries ``idempotency_key`` (a write's, the same on
every attempt, so a server can recognise a write it already made), ``evolve/task`` and
``evolve/attempt``. The result becomes the task's outputs: ``structuredContent`` field by field
(and whole, as ``<tool>_result``), a text result as the one output the tool declares.

Failures, by the convention evolve documents for servers (docs/mcp.md): a result with
``isError: true`` is a failure, retried when its ``structuredContent`` (or the result's
``_meta``) says ``"retryable": true``, final otherwise; a server that dies during a call is
started again (once per session), and a read (or a tool annotated ``idempotentHint``) is
called again on it within the same journaled attempt, while a write whose outcome is unknown is
never made again blindly: the executor asks the server's reconcile tool (below) whether it was
made, and without an answer the task is ``unknown`` (the server's stderr tail in its error) and
waits for a person. Everything that can be
known before the run is checked before it starts (:func:`mcp_tools`): each tool the plan names
is listed by exactly one server, its input schema is sound, its parameters match the catalog's
inputs, and a tool the server marks destructive is a write in the catalog.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from evolve import defaults
from evolve.execute.tools import Call, ToolFailure, ToolFn
from evolve.mcp.client import Connection, Lost, connect, one_line
from evolve.mcp.servers import McpError, ServerSpec
from evolve.model.limits import NAME, TOOL_NAME
from evolve.model.problem import Problem, Tool
from evolve.problems.toolspec import read_spec
from evolve.problems.toolspec.catalog import clean_name, result_fact

RETRYABLE = "retryable"
"""The key of an error result's ``structuredContent`` (or ``_meta``) that marks it retryable."""
RECONCILE = "evolve/reconcile"
"""The key of a write tool's ``_meta`` (in ``tools/list``) naming the server's tool that tells
whether a write was made: called with ``{"idempotency_key": KEY}``, it answers
``{"made": false}``, or ``{"made": true, ...}`` with the write's outputs."""


def retryable(result: types.CallToolResult) -> bool:
    """Whether the server says an ``isError`` result may succeed later (see the module doc)."""
    for where in (result.structured_content, result.meta):
        if isinstance(where, Mapping) and where.get(RETRYABLE) is True:
            return True
    return False


def left(deadline: float) -> float:
    """Seconds a call may still take: to the task's deadline and a little past it, so that the
    executor, not this client, ends a call that hangs (see :data:`evolve.defaults.MCP_TIMEOUT_SLACK`)."""
    return deadline - time.time() + defaults.MCP_TIMEOUT_SLACK


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def said(result: types.CallToolResult) -> str:
    """An error result's text on one line (a journal's error is one line)."""
    return " ".join(text_of(result).split()) or "failed (isError, no text)"


@dataclass
class McpTool:
    """The callable of one catalog tool served by ``conn``."""

    conn: Connection
    name: str
    """The tool's name on the server."""
    tool: Tool
    """The catalog's entry for it."""
    params: Mapping[str, str]
    """Catalog input (a fact) -> the tool's parameter name."""
    required: frozenset[str]
    safe_again: bool
    """Whether a call lost with its server may be made again (a read, or ``idempotentHint``)."""
    checker: str | None = None
    """The server's tool that tells whether a write was made (``_meta["evolve/reconcile"]``)."""

    def reconcile(self, idempotency_key: str) -> Mapping[str, Any] | None:
        """The outputs of the write made under ``idempotency_key``, ``None`` when it was not
        made; raises when the server offers no way to tell (the executor then waits for a
        person: the write's outcome is unknown)."""
        if self.checker is None:
            raise ToolFailure(f"{self.where}: the server names no {RECONCILE} tool")
        result, _ = self.conn.call(self.checker, {"idempotency_key": idempotency_key}, {},
                                   self.conn.connect_timeout)
        data = result.structured_content
        if result.is_error or not isinstance(data, Mapping) or not isinstance(data.get("made"), bool):
            raise ToolFailure(f"{self.where}: {self.checker} did not say whether the write was made")
        if not data["made"]:
            return None
        rest = {k: v for k, v in data.items() if k != "made"}
        return self.outputs(result.model_copy(update={"structured_content": rest}))

    @property
    def where(self) -> str:
        return f"MCP server {self.conn.spec.name}, tool {self.name}"

    def arguments(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        args: dict[str, Any] = {}
        for fact, value in inputs.items():
            param = self.params.get(fact)
            if param is None:
                raise ToolFailure(f"{self.where}: the task's input {fact!r} is no parameter of the tool")
            if value is None and param not in self.required:
                continue  # an optional argument with no value: left to the tool's default
            args[param] = value
        return args

    def __call__(self, inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        args = self.arguments(inputs)
        meta: dict[str, Any] = {"evolve/task": call.task_id, "evolve/attempt": call.attempt}
        if call.idempotency_key is not None:
            meta["idempotency_key"] = call.idempotency_key
        try:
            result = self.made(args, meta, call.deadline)
        except TimeoutError as exc:
            raise ToolFailure(f"{self.where}: {exc}", retryable=True) from None
        except MCPError as exc:
            raise ToolFailure(f"{self.where}: the server refused the call: {exc.message}") from None
        except RuntimeError as exc:  # the SDK's check of the result against the output schema
            raise ToolFailure(f"{self.where}: {one_line(exc)}") from None
        except ValidationError as exc:
            raise ToolFailure(f"{self.where}: a malformed result ({one_line(exc)})") from None
        if result.is_error:
            raise ToolFailure(f"{self.where}: {said(result)}",
                              retryable=retryable(result))
        return self.outputs(result)

    def made(self, args: dict[str, Any], meta: dict[str, Any], deadline: float) -> types.CallToolResult:
        """The call's result; a server that dies is started again, and the call made again on
        it only when that is safe."""
        try:
            return self.conn.call(self.name, args, meta, left(deadline))[0]
        except Lost as lost:
            seen = lost.generation
        restarted = self.conn.restart(seen)
        if not self.safe_again:  # retryable once reconcile says it was not made
            raise ToolFailure(f"{self.where}: the server died during the call ("
                              + ("it was started again" if restarted else "not started again")
                              + f"); whether this write was made is unknown{self.conn.tail()}",
                              retryable=True, uncertain=True)
        if not restarted:
            raise ToolFailure(f"{self.where}: the server died and was not started again (restarted "
                              f"{self.conn.restarts} time(s) already){self.conn.tail()}")
        try:
            return self.conn.call(self.name, args, meta, left(deadline))[0]
        except Lost:
            raise ToolFailure(f"{self.where}: the server died again during the call after a "
                              f"restart{self.conn.tail()}") from None

    def outputs(self, result: types.CallToolResult) -> dict[str, Any]:
        """The catalog outputs from the result (see the module doc)."""
        declared = self.tool.outputs
        whole = result_fact(self.tool.name)
        data: Any = result.structured_content
        text = text_of(result)
        if data is None and text:
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            data = parsed if isinstance(parsed, dict) else None
        out: dict[str, Any] = {}
        if isinstance(data, Mapping):
            keys = {clean_name(k, NAME): k for k in data}
            for fact in declared:
                key = fact if fact in data else keys.get(fact)
                if key is not None:
                    out[fact] = data[key]
            if whole in declared and whole not in out:
                out[whole] = dict(data)
            gave = ", ".join(sorted(data)) or "no fields"
        else:
            others = [f for f in declared if f != whole]
            if whole in declared:
                out[whole] = text
            if len(others) == 1:
                out[others[0]] = text
            gave = "text only"
        missing = [f for f in declared if f not in out]
        if missing:
            raise ToolFailure(f"{self.where}: the result has no {', '.join(repr(f) for f in missing)} "
                              f"(it gave {gave})")
        return out


@dataclass
class Toolset:
    """The started servers of a run and the callables of their tools; :meth:`close` stops them."""

    connections: list[Connection] = field(default_factory=list)
    tools: dict[str, ToolFn] = field(default_factory=dict)

    def close(self) -> None:
        for conn in self.connections:
            conn.close()

    def __enter__(self) -> Toolset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def listing(conn: Connection) -> dict[str, dict[str, Any]]:
    """The server's tools by catalog name, each checked as ``import-tools`` checks a list."""
    tools = conn.list_tools()
    source = f"MCP server {conn.spec.describe()}"
    read_spec({"tools": tools}, source)  # a malformed entry or input schema: one line naming it
    return {clean_name(str(t["name"]), TOOL_NAME): t for t in tools}


def adapter(conn: Connection, listed: Mapping[str, Any], tool: Tool) -> McpTool:
    """The callable of ``tool``, its inputs matched to the listed tool's parameters."""
    where = f"MCP server {conn.spec.name}, tool {listed['name']}"
    schema = listed.get("inputSchema") or {}
    props = list((schema.get("properties") or {}).keys())
    required = frozenset(schema.get("required") or ())
    by_fact = {clean_name(p, NAME): p for p in props}
    params: dict[str, str] = {}
    for fact in tool.inputs:
        param = fact if fact in props else by_fact.get(fact)
        if param is None:
            raise McpError(f"{where}: the catalog's input {fact!r} is no parameter of the tool "
                           f"(its parameters: {', '.join(props) or 'none'})")
        params[fact] = param
    unfed = sorted(required - set(params.values()))
    if unfed:
        raise McpError(f"{where}: the tool requires {', '.join(unfed)}, which the catalog's "
                       f"{tool.name} does not give it (its inputs: {', '.join(tool.inputs) or 'none'})")
    notes = listed.get("annotations") or {}
    destructive = notes.get("readOnlyHint") is not True and notes.get("destructiveHint") is True
    if destructive and tool.risk != "write":
        raise McpError(f"{where}: the server marks it destructive, but the catalog's {tool.name} is a "
                       f"{tool.risk}: make it risk: write (an idempotency key, and approvals by policy)")
    safe = ((tool.risk == "read" and notes.get("readOnlyHint") is not False)
            or notes.get("idempotentHint") is True)
    checker = (listed.get("_meta") or {}).get(RECONCILE)
    return McpTool(conn=conn, name=str(listed["name"]), tool=tool, params=params, required=required,
                   safe_again=bool(safe), checker=checker if isinstance(checker, str) else None)


def mcp_tools(problem: Problem, used: Iterable[str], specs: Sequence[ServerSpec],
              leave: Iterable[str] = ()) -> Toolset:
    """Start the servers and make the callables of the catalog tools they list; every tool in
    ``used`` but not in ``leave`` (tools a person owns, or a ``--tools`` mapping gives) must be
    listed by exactly one server. The servers are stopped again when a check fails."""
    toolset = Toolset()
    try:
        listed: dict[str, list[tuple[Connection, dict[str, Any]]]] = {}
        for spec in specs:
            conn = connect(spec)
            toolset.connections.append(conn)
            for name, entry in listing(conn).items():
                listed.setdefault(name, []).append((conn, entry))
        skip = set(leave)
        for name in sorted(set(used) - skip):
            found = listed.get(name, [])
            if not found:
                names = ", ".join(s.name for s in specs)
                raise McpError(f"the plan's tool {name!r} is listed by no MCP server ({names}), and no "
                               "--tools callable gives it")
            if len(found) > 1:
                raise McpError(f"the plan's tool {name!r} is listed by more than one MCP server "
                               f"({', '.join(c.spec.name for c, _ in found)}): give one of them")
        needed = set(used)
        for name, found in listed.items():
            if name in skip or name not in problem.tools or len(found) != 1:
                continue
            conn, entry = found[0]
            try:
                toolset.tools[name] = adapter(conn, entry, problem.tools[name])
            except McpError:
                if name in needed:
                    raise  # a tool the plan does not use stays without a callable (a replan
                    # that picks it is then refused as one with no callable)
    except BaseException:
        toolset.close()
        raise
    return toolset
