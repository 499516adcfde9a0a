"""A live MCP server's tools as a problem catalog: ``evolve import-tools --mcp "CMD ARGS"`` or
``--mcp-url URL``. The server is asked for its ``tools/list`` (every page), and the list goes
through the very conversion a saved list does (:func:`evolve.problems.toolspec.import_document`):
names as the server gives them, annotations read as risks, every guess reported."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from evolve.mcp.client import connect
from evolve.mcp.servers import ServerSpec
from evolve.model.limits import NAME
from evolve.problems.toolspec import Imported, import_document
from evolve.problems.toolspec.catalog import clean_name


def listed_tools(spec: ServerSpec) -> tuple[list[dict[str, Any]], str | None]:
    """The server's tools as its ``tools/list`` gives them, and the name the server gives
    itself (``None``: it did not say); the server is stopped after."""
    conn = connect(spec)
    try:
        info = conn.client.server_info if conn.client is not None else None
        return conn.list_tools(), info.name if info is not None and info.name else None
    finally:
        conn.close()


def import_server(
    spec: ServerSpec,
    *,
    meta_path: str | Path | None = None,
    trace_path: str | Path | None = None,
    goal: Sequence[str] = (),
    known: Sequence[str] | None = None,
    name: str | None = None,
) -> Imported:
    """The problem catalog of the server's tools; a fault in the list names the server and the
    field (``MCP server shop (python shop.py): tools[2].inputSchema.type: ...``)."""
    tools, own = listed_tools(spec)
    return import_document({"tools": tools}, f"MCP server {spec.describe()}", meta_path=meta_path,
                           trace_path=trace_path, goal=goal, known=known,
                           name=name or clean_name(own or spec.name, NAME))
