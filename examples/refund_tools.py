"""Scripted tools for examples/refund.yaml: the duplicate charge on order 8472.

    evolve execute examples/refund_plan.yaml --problem examples/refund.yaml \\
        --tools examples.refund_tools:TOOLS

The payment lookup shows two captures of the same amount *and* a refund already ISSUED for the
second one (a colleague refunded it yesterday). The plan's refund task assumes that no refund
exists (``assumes: len($t2.refunds) == 0``), so the run replans as soon as the lookup is done:
the approval and the refund are invalidated, a settlement trace is added in their place, no
refund is issued, and the customer gets a reply that points at the refund already made.

``make_tools(prior_refund=False)`` is the other case (no refund yet): the plan runs as written
and issues exactly one refund. Every write goes through a :class:`Ledger` keyed by the
idempotency key, so a call repeated with the same key returns the first receipt instead of
paying twice, and ``reconcile(key)`` tells the runtime after a crash whether the write was made.
Give the ledger a file (``make_tools(ledger_path=...)`` or the ``EVOLVE_REFUND_LEDGER``
environment variable) and it survives the process, as a payment provider's records would.

The tools do not depend on the values of the initial facts (``order_id``, ``complaint``): a run
that gives none passes them as null.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

try:
    from evolve import ToolFailure
except ImportError:  # an evolve whose package root does not re-export it yet
    from evolve.execute.tools import ToolFailure

ORDER_ID = "8472"
AMOUNT_INR = 1499
PRIOR_REFUND = {"refund_id": "rf_9001", "capture_id": "cap_2", "amount_inr": AMOUNT_INR,
                "status": "ISSUED", "issued_by": "support agent, 2026-11-30"}

Inputs = Mapping[str, Any]
ToolFn = Callable[[Inputs, Any], dict[str, Any]]


class Ledger:
    """The payment provider's record of writes, keyed by idempotency key (thread-safe; kept in
    a JSON file when given one)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else None
        self.lock = threading.Lock()
        self.entries: dict[str, dict[str, Any]] = {}
        if self.path is not None and self.path.exists():
            self.entries = json.loads(self.path.read_text(encoding="utf-8"))
        self.calls: list[tuple[str, str]] = []
        """(tool, idempotency key) of every write call, repeats included: what tests count."""

    def write(self, tool: str, key: str | None, make: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        if not key:
            raise ToolFailure(f"{tool} needs an idempotency key", retryable=False)
        with self.lock:
            self.calls.append((tool, key))
            if key not in self.entries:
                self.entries[key] = {"tool": tool, "outputs": make()}
                self.save()
            return dict(self.entries[key]["outputs"])

    def reconcile(self, key: str) -> dict[str, Any] | None:
        with self.lock:
            entry = self.entries.get(key)
            return None if entry is None else dict(entry["outputs"])

    def made(self, tool: str) -> list[dict[str, Any]]:
        """The outputs of every write ``tool`` made (once per key)."""
        with self.lock:
            return [e["outputs"] for e in self.entries.values() if e["tool"] == tool]

    def save(self) -> None:
        if self.path is not None:
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps(self.entries, sort_keys=True), encoding="utf-8")
            os.replace(temporary, self.path)


class Write:
    """A write tool: its effect goes through the ledger; it can reconcile a key."""

    def __init__(self, name: str, ledger: Ledger, effect: Callable[[Inputs, Any], dict[str, Any]]) -> None:
        self.name = name
        self.ledger = ledger
        self.effect = effect

    def __call__(self, inputs: Inputs, call: Any) -> dict[str, Any]:
        return self.ledger.write(self.name, call.idempotency_key, lambda: self.effect(inputs, call))

    def reconcile(self, idempotency_key: str) -> dict[str, Any] | None:
        return self.ledger.reconcile(idempotency_key)


def field(value: Any, key: str, default: Any = None) -> Any:
    return value.get(key, default) if isinstance(value, Mapping) else default


def make_tools(prior_refund: bool = True, ledger_path: str | Path | None = None,
               ledger: Ledger | None = None) -> dict[str, ToolFn]:
    """The tool table for refund.yaml; ``prior_refund`` says whether the duplicate capture was
    refunded already (the case the example is about)."""
    book = ledger or Ledger(ledger_path or os.environ.get("EVOLVE_REFUND_LEDGER") or None)

    def order(inputs: Inputs, call: Any) -> dict[str, Any]:
        order_id = inputs.get("order_id") or ORDER_ID
        return {"order": {"order_id": str(order_id), "customer_id": "cus_311",
                          "amount_inr": AMOUNT_INR, "items": 1}}

    def policy(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {"policy": {"duplicate_charge": "refund the duplicate capture once",
                           "auto_approve_limit_inr": 5000}}

    captures = [{"capture_id": "cap_1", "amount_inr": AMOUNT_INR, "status": "SETTLED"},
                {"capture_id": "cap_2", "amount_inr": AMOUNT_INR, "status": "SETTLED"}]
    refunds = [dict(PRIOR_REFUND)] if prior_refund else []

    def lookup(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {"captures": [dict(c) for c in captures], "refunds": [dict(r) for r in refunds]}

    def ledger_export(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {"captures": [dict(c) for c in captures]}

    def compare(inputs: Inputs, call: Any) -> dict[str, Any]:
        seen = inputs.get("captures") or []
        amount = field(inputs.get("order"), "amount_inr", AMOUNT_INR)
        dupes = [c for c in seen if field(c, "amount_inr") == amount][1:]
        return {"finding": {"duplicate": bool(dupes), "captures": len(seen),
                            "duplicate_capture": field(dupes[0], "capture_id") if dupes else None,
                            "excess_inr": sum(field(c, "amount_inr", 0) for c in dupes)}}

    def decide(inputs: Inputs, call: Any) -> dict[str, Any]:
        finding = inputs.get("finding") or {}
        done = [r for r in inputs.get("refunds") or []
                if field(r, "capture_id") == field(finding, "duplicate_capture")
                and field(r, "status") == "ISSUED"]
        if not field(finding, "duplicate"):
            return {"decision": {"action": "none", "refund_inr": 0, "reason": "no duplicate capture"}}
        if done:
            return {"decision": {"action": "none", "refund_inr": 0, "refund_id": done[0]["refund_id"],
                                 "reason": f"refund {done[0]['refund_id']} already ISSUED for "
                                           f"{done[0]['capture_id']}"}}
        return {"decision": {"action": "refund", "refund_inr": field(finding, "excess_inr", 0),
                             "capture_id": field(finding, "duplicate_capture"),
                             "reason": "duplicate capture"}}

    def llm_decide(inputs: Inputs, call: Any) -> dict[str, Any]:
        # the model sees no refund state: it decides as if none had been made
        return decide({**inputs, "refunds": []}, call)

    def auto_approve(inputs: Inputs, call: Any) -> dict[str, Any]:
        amount = field(inputs.get("decision"), "refund_inr", 0)
        limit = field(inputs.get("policy"), "auto_approve_limit_inr", 0)
        if amount > limit:
            raise ToolFailure(f"INR {amount} is over the auto-approval limit of INR {limit}")
        return {"approval": {"approved": True, "by": "auto", "refund_inr": amount}}

    def manager_approve(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {"approval": {"approved": True, "by": "manager",
                             "refund_inr": field(inputs.get("decision"), "refund_inr", 0)}}

    def refund_effect(inputs: Inputs, call: Any) -> dict[str, Any]:
        decision = inputs.get("decision") or {}
        if field(decision, "action") != "refund":
            raise ToolFailure(f"the decision is not a refund ({field(decision, 'reason', '?')})")
        return {"receipt": {"kind": "refund", "refund_id": f"rf_{call.idempotency_key}",
                            "capture_id": field(decision, "capture_id"),
                            "amount_inr": field(decision, "refund_inr"), "status": "ISSUED"}}

    def void_effect(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {"receipt": {"kind": "void", "capture_id": "cap_2", "status": "VOIDED"}}

    def trace(inputs: Inputs, call: Any) -> dict[str, Any]:
        issued = [r for r in inputs.get("refunds") or [] if field(r, "status") == "ISSUED"]
        if not issued:
            return {"receipt": {"kind": "settlement_trace", "status": "NONE",
                                "summary": "no refund found for the captures"}}
        first = issued[0]
        return {"receipt": {"kind": "settlement_trace", "status": "ISSUED",
                            "refund_id": first["refund_id"], "capture_id": first["capture_id"],
                            "amount_inr": first["amount_inr"],
                            "summary": f"capture {first['capture_id']} was refunded by "
                                       f"{first['refund_id']} ({first['issued_by']})"}}

    def customer(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {"customer": {"name": "Asha Rao", "email": "asha@example.com"}}

    def reply_text(decision: Any, receipt: Any, name: str) -> str:
        if field(receipt, "kind") == "settlement_trace" and field(receipt, "status") == "ISSUED":
            return (f"Dear {name}, the duplicate charge of INR {field(receipt, 'amount_inr')} on your "
                    f"order was already refunded ({field(receipt, 'refund_id')}); it will reach "
                    "your account within 5-7 days.")
        if field(receipt, "kind") == "refund":
            return (f"Dear {name}, we have refunded the duplicate charge of INR "
                    f"{field(receipt, 'amount_inr')} ({field(receipt, 'refund_id')}).")
        return f"Dear {name}, {field(decision, 'reason', 'we looked into your charge')}."

    def render(inputs: Inputs, call: Any) -> dict[str, Any]:
        name = field(inputs.get("customer"), "name", "customer")
        return {"reply": reply_text(inputs.get("decision"), inputs.get("receipt"), name)}

    def draft(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {"reply": reply_text(inputs.get("decision"), inputs.get("receipt"), "customer")}

    def fraud(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {"fraud_score": 0.02}

    def log_contact(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {"contact_id": "ct_1"}

    return {
        "orders.get": order, "orders.search": order,
        "policy.search": policy, "policy.fetch_all": policy,
        "payments.lookup": lookup, "payments.ledger_export": ledger_export,
        "runtime.compare_captures": compare, "llm.compare_captures": compare,
        "rules.decide": decide, "llm.decide": llm_decide,
        "approvals.auto": auto_approve, "approvals.manager": manager_approve,
        "payments.issue_refund": Write("payments.issue_refund", book, refund_effect),
        "payments.void_capture": Write("payments.void_capture", book, void_effect),
        "payments.trace_settlement": trace,
        "crm.get_customer": customer,
        "templates.render_reply": render, "llm.draft_reply": draft,
        "fraud.score": fraud, "analytics.log_contact": log_contact,
    }


TOOLS = make_tools()
"""The example's case: a refund was already issued for the duplicate capture."""
NO_PRIOR_REFUND = make_tools(prior_refund=False)
"""The plain case: no refund yet, so the plan issues one."""
