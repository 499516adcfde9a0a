"""Scripted tools and a scripted small model for the three HTN examples (heal a red CI run, fix
a red test, heal a deployment), so each runs end to end offline, deterministically:

    python -m examples.htn.demo pr-doctor | fix-red-test | k8s-medic

Each "tool" is a function of its inputs; the model's one decision per domain is a fixed answer
(``ANSWERS``). The script makes the first rung fail for real, so every run shows the ladder
falling to its next rung: the lint fix's push leaves CI red, the model's guard leaves the test
red, the model's image does not roll out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

try:
    from evolve import ToolFailure
except ImportError:  # an evolve whose package root does not re-export it yet
    from evolve.execute.tools import ToolFailure

from evolve.llm.testing import Scripted

Inputs = Mapping[str, Any]
ToolFn = Callable[[Inputs, Any], dict[str, Any]]

ANSWERS = {"failure_class": "lint", "approach": "guard", "image": "nginx:1.27"}
"""What the scripted small model answers for each decision key."""


def small_model(body: dict[str, Any], seen: int) -> Scripted:
    """A chat-completions script: the decision asked for (``Answer {"key": ...``), answered."""
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    found = re.search(r'Answer \{"([A-Za-z_]\w*)"', text)
    key = found.group(1) if found else ""
    return Scripted(json.dumps({key: ANSWERS[key]}) if key in ANSWERS else "{}")


def ok(**outputs: Any) -> ToolFn:
    def tool(inputs: Inputs, call: Any) -> dict[str, Any]:
        return dict(outputs)
    return tool


def fails(message: str) -> ToolFn:
    def tool(inputs: Inputs, call: Any) -> dict[str, Any]:
        raise ToolFailure(message, retryable=False)
    return tool


TOOLS: dict[str, ToolFn] = {
    # pr-doctor: the lint fix is made, but the push leaves CI red; the revert heals it
    "rerun_ci": ok(), "lint_fix": ok(), "push_fix": fails("CI is still red after the lint fix"),
    "revert_commit": ok(), "comment_pr": ok(url="https://example.invalid/pr/7#comment-1"),
    # fix-red-test: the model's guard does not make the test green; strip-then-append does
    "apply_guard": ok(), "verify_guard": fails("1 failed: footer still appears twice"),
    "apply_dedupe": ok(), "verify_dedupe": ok(), "rewrite_fn": ok(), "verify_rewrite": ok(),
    "report": ok(comment="Made appendStatus idempotent: strip the footer, then append it."),
    # k8s-medic: the model's image does not roll out; the last known good one does
    "set_model_image": ok(), "verify_model": fails("rollout stuck: ErrImagePull"),
    "restore_image": ok(), "verify_restore": ok(),
    "note_incident": ok(note="Restored the last known good image after an image pull failure."),
}
