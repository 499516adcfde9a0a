"""A small MCP server for the tests, written with the SDK's own server class: reads, a write that
counts its side effects in a ledger file, a tool that fails transiently, and a crash on demand.

Settings come from the environment so one script serves every test:
``SHOP_LEDGER`` (the write's ledger, one JSON line per side effect), ``SHOP_STATE`` (a folder
for counters), ``SHOP_FLAKY`` (how many calls of ``check_stock`` fail first, retryably),
``SHOP_CRASH_ONCE`` (the first ``find_customer`` call kills the server; ``SHOP_CRASHES``: the
first N), ``SHOP_SLEEP_AFTER_WRITE``
(seconds ``place_order`` sleeps after its ledger line: a test kills the executor then),
``SHOP_HANG`` (``quote`` never answers), ``SHOP_CRASH_IN_WRITE`` (``before`` or ``after``: the
first ``place_order`` kills the server before or after its ledger line), ``SHOP_RECONCILE``
(``place_order`` names ``order_status`` as its ``evolve/reconcile`` tool), ``SHOP_BAD_SCHEMA``
(``quote``'s input schema is not an object), ``SHOP_BAD_OUTPUT`` (``check_stock`` answers against its output
schema). ``--http PORT`` serves streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Annotated, TypedDict

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations

server = MCPServer("shop")
STATE = Path(os.environ.get("SHOP_STATE", "."))


def bump(name: str) -> int:
    """A counter kept in a file (it survives the server's restarts)."""
    path = STATE / f"{name}.count"
    count = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(count))
    return count


def die(where: str) -> None:
    print(f"shop: simulated crash in {where}", file=sys.stderr, flush=True)
    os._exit(3)


class Customer(TypedDict):
    customer_id: str


class Price(TypedDict):
    price: int


class Stock(TypedDict):
    in_stock: bool


class Order(TypedDict):
    order_id: str


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def find_customer(email: str) -> Customer:
    """The customer id of an email address."""
    crashes = 1 if os.environ.get("SHOP_CRASH_ONCE") else int(os.environ.get("SHOP_CRASHES", "0"))
    if crashes and bump("crash") <= crashes:
        die("find_customer")
    return {"customer_id": f"c-{email.split('@')[0]}"}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def quote(customer_id: str, item: str) -> Price:
    """The price of an item for a customer."""
    if os.environ.get("SHOP_HANG"):
        time.sleep(3600)
    return {"price": 40 + len(item)}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def check_stock(item: str) -> Annotated[CallToolResult, Stock]:
    """Whether the item is in stock; fails transiently the first SHOP_FLAKY times."""
    if bump("stock") <= int(os.environ.get("SHOP_FLAKY", "0")):
        return CallToolResult(content=[TextContent(type="text", text="stock service busy")],
                              structured_content={"retryable": True}, is_error=True)
    if os.environ.get("SHOP_BAD_OUTPUT"):  # not what the declared output schema says
        return CallToolResult(content=[TextContent(type="text", text="maybe")],
                              structured_content={"in_stock": "maybe"})
    return CallToolResult(content=[TextContent(type="text", text="in stock")],
                          structured_content={"in_stock": True})


def orders(ledger: Path) -> list[dict[str, object]]:
    if not ledger.exists():
        return []
    return [json.loads(line) for line in ledger.read_text(encoding="utf-8").splitlines() if line.strip()]


WRITE_META = {"evolve/reconcile": "order_status"} if os.environ.get("SHOP_RECONCILE") else None


@server.tool(annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=True, idempotentHint=False),
             meta=WRITE_META)
def place_order(customer_id: str, price: int, in_stock: bool, ctx: Context) -> Order:
    """Place the order: one line in the ledger per side effect."""
    meta = ctx.request_context.meta or {}
    key = meta.get("idempotency_key")
    ledger = Path(os.environ.get("SHOP_LEDGER", "ledger.jsonl"))
    crash = os.environ.get("SHOP_CRASH_IN_WRITE")
    crash_now = crash is not None and bump("write_crash") == 1
    if crash_now and crash == "before":
        die("place_order, before the write")
    with ledger.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"customer_id": customer_id, "price": price, "key": key,
                              "order_id": f"o-{customer_id}-{price}"}) + "\n")
    if crash_now:
        die("place_order, after the write")
    time.sleep(float(os.environ.get("SHOP_SLEEP_AFTER_WRITE", "0")))
    return {"order_id": f"o-{customer_id}-{price}"}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def order_status(idempotency_key: str) -> dict[str, object]:
    """Whether the order placed under this idempotency key was made (evolve's reconcile)."""
    ledger = Path(os.environ.get("SHOP_LEDGER", "ledger.jsonl"))
    made = [o for o in orders(ledger) if o["key"] == idempotency_key]
    return {"made": True, "order_id": made[-1]["order_id"]} if made else {"made": False}


@server.tool(annotations=ToolAnnotations(readOnlyHint=True), structured_output=False)
def receipt(order_id: str) -> str:
    """A receipt for an order, as text."""
    return f"receipt for {order_id}"


if os.environ.get("SHOP_BAD_SCHEMA"):  # a malformed input schema: arguments that are not named
    server._tool_manager._tools["quote"].parameters = {"type": "array", "items": {"type": "string"}}


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
