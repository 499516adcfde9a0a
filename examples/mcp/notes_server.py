"""A small MCP server to plan and run against (see README.md beside it): find a note, summarise
it, publish the summary. Written with the official SDK's server class (``pip install
'evolve[mcp]'``); ``publish`` is a write (destructive), and it keeps what it published in
``published.jsonl`` in the current folder, keyed by the idempotency key evolve sends in the
request's ``_meta``, so ``published`` can tell evolve after a crash whether a write was made.

    python examples/mcp/notes_server.py              # stdio (what evolve starts)
    python examples/mcp/notes_server.py --http 8765  # streamable HTTP on 127.0.0.1:8765/mcp
"""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path
from typing import TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("notes")
LEDGER = Path("published.jsonl")
NOTES = {"evolve": "n1", "mcp": "n2"}
TEXTS = {"n1": "evolve searches plans and runs them durably.", "n2": "MCP servers expose tools."}


class Found(TypedDict):
    note_id: str


class Summary(TypedDict):
    summary: str


class Published(TypedDict):
    url: str


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def search_notes(query: str) -> Found:
    """The note that best matches a query."""
    return {"note_id": NOTES.get(query.lower(), "n1")}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def summarize(note_id: str) -> Summary:
    """A one-line summary of a note."""
    return {"summary": TEXTS.get(note_id, "")[:80]}


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True),
             meta={"evolve/reconcile": "published"})
def publish(summary: str, ctx: Context) -> Published:
    """Publish a summary (a side effect: one line in published.jsonl)."""
    key = (ctx.request_context.meta or {}).get("idempotency_key")
    url = f"https://notes.example/{zlib.crc32(summary.encode()) % 10_000}"
    with LEDGER.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"key": key, "summary": summary, "url": url}) + "\n")
    return {"url": url}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def published(idempotency_key: str) -> dict[str, object]:
    """Whether a publish under this idempotency key was made (evolve's reconcile convention)."""
    lines = LEDGER.read_text(encoding="utf-8").splitlines() if LEDGER.exists() else []
    made = [json.loads(line) for line in lines if json.loads(line)["key"] == idempotency_key]
    return {"made": True, "url": made[-1]["url"]} if made else {"made": False}


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
