"""Python tools for the incident journeys: real callables that keep a ledger on disk.

Every write call, repeats included, is appended to ``$INCIDENT_DIR/calls.jsonl`` (what the tests
count); the provider's own record of what was done, keyed by idempotency key, is
``$INCIDENT_DIR/provider.json``, so ``service.restart`` can reconcile after a crash and a repeated
key returns the first receipt, as an idempotent API would. ``slack.post_message`` has no
``reconcile``: after a crash inside it only a person can say whether the post went out.

Switches, all files in ``$INCIDENT_DIR``: ``logs-503`` makes the log API fail (retryably) once;
``metrics-down`` makes the metrics API fail for good; ``hang-in-restart`` and ``hang-in-post``
make the write record its effect, touch ``<name>.entered`` and then hang, so a test can SIGKILL
the executor inside the write.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from evolve import ToolFailure


def folder() -> Path:
    return Path(os.environ["INCIDENT_DIR"])


def provider() -> dict[str, Any]:
    path = folder() / "provider.json"
    return json.loads(path.read_text()) if path.exists() else {}


def record(tool: str, key: str | None, inputs: Mapping[str, Any]) -> None:
    with (folder() / "calls.jsonl").open("a") as out:
        out.write(json.dumps({"tool": tool, "key": key, "inputs": dict(inputs)}, default=str) + "\n")


def switch(name: str) -> bool:
    return (folder() / name).exists()


def hang_if(name: str) -> None:
    if switch(name):
        (folder() / f"{name}.entered").touch()
        time.sleep(120)


def alerts_get(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
    return {"alert": {"id": inputs.get("alert_id"), "signal": "5xx rate 31%"}}


def logs_fetch(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
    if switch("logs-503"):
        (folder() / "logs-503").unlink()
        raise ToolFailure("log API: 503 Service Unavailable", retryable=True)
    return {"logs": ["OOMKilled", "OOMKilled"]}


def logs_archive(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
    return {"logs": ["OOMKilled"]}


def metrics_query(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
    if switch("metrics-down"):
        raise ToolFailure("metrics API: 401 token revoked", retryable=False)
    return {"metrics": {"memory": 0.99}}


def metrics_scrape(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
    return {"metrics": {"memory": 0.98}}


def diagnose_rules(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
    return {"diagnosis": {"cause": "out of memory", "action": "restart"}}


class Restart:
    """An idempotent restart API: a repeated key returns the first receipt."""

    def __call__(self, inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
        record("service.restart", call.idempotency_key, inputs)
        done = provider()
        if call.idempotency_key not in done:
            done[call.idempotency_key] = {"restarted": inputs.get("service")}
            (folder() / "provider.json").write_text(json.dumps(done))
        hang_if("hang-in-restart")
        return {"restart_receipt": done[call.idempotency_key]}

    def reconcile(self, idempotency_key: str) -> dict[str, Any] | None:
        made = provider().get(idempotency_key)
        return None if made is None else {"restart_receipt": made}


def slack_post_message(inputs: Mapping[str, Any], call: Any) -> dict[str, Any]:
    record("slack.post_message", call.idempotency_key, inputs)
    hang_if("hang-in-post")
    return {"post_receipt": {"ts": "1765000000.1"}}


TOOLS = {
    "alerts.get": alerts_get,
    "logs.fetch": logs_fetch,
    "logs.archive": logs_archive,
    "metrics.query": metrics_query,
    "metrics.scrape": metrics_scrape,
    "diagnose.rules": diagnose_rules,
    "service.restart": Restart(),
    "slack.post_message": slack_post_message,
}
