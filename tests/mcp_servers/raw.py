"""An MCP server written by hand, not with the SDK (as servers in the wild are): it answers the
handshake and then lists a tool whose input schema is not an object, which the SDK's own server
class would never send. ``RAW_TOOLS`` (JSON) replaces the tool list; ``RAW_PAGED`` lists it one
tool a page (``nextCursor``)."""

from __future__ import annotations

import json
import os
import sys

TOOLS = json.loads(os.environ.get("RAW_TOOLS", '[{"name": "x", "inputSchema": {"type": "array"}}]'))

for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue  # a notification
    method = message.get("method")
    if method == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "raw", "version": "0"}}
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": result}
    elif method == "tools/list" and os.environ.get("RAW_PAGED"):
        at = int((message.get("params") or {}).get("cursor") or 0)
        page: dict[str, object] = {"tools": TOOLS[at:at + 1]}
        if at + 1 < len(TOOLS):
            page["nextCursor"] = str(at + 1)
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": page}
    elif method == "tools/list":
        reply = {"jsonrpc": "2.0", "id": message["id"], "result": {"tools": TOOLS}}
    else:
        error = {"code": -32601, "message": "no such method"}
        reply = {"jsonrpc": "2.0", "id": message["id"], "error": error}
    print(json.dumps(reply), flush=True)
