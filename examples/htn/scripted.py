"""Scripted tools and a scripted small model for the three HTN examples (heal a red CI run, fix
a red test, heal a deployment), so each runs end to end offline, deterministically:

    python -m examples.htn.demo pr-doctor | fix-red-test | k8s-medic

Each "tool" is a function of its inputs; the model's one decision per domain is a fixed answer
(``ANSWERS``), and so is each argument it fills at run time (``FILLS``: the comment or note
the last step posts). The script makes the first rung fail for real, so every run shows the
ladder falling to its next rung: the lint fix's push leaves CI red, the model's guard leaves
the test red, the model's image does not roll out.
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

ANSWERS: dict[str, Any] = {
    "failure_class": "lint",
    "approach": "guard", "line": "if (systemPrompt.endsWith(FOOTER)) return systemPrompt;",
    "action": "set-image", "image": "nginx:1.27",
}
"""What the scripted small model answers for each field of a hoisted decision."""

FILLS: list[tuple[str, dict[str, Any]]] = [
    ("CI run", {"comment": "Reverted the breaking commit: the lint fix alone left CI red."}),
    ("regression test", {"comment": "Made appendStatus idempotent: strip the footer, then append it."}),
    ("deployment", {"note": "Restored the last known good image after an image pull failure."}),
]
"""What it answers when asked to fill a prompted operator's arguments: the first entry whose
words the prompt contains."""


def small_model(body: dict[str, Any], seen: int) -> Scripted:
    """A chat-completions script: a decision (``Answer {"key": <value>, ...}``) answered field by
    field, or an operator's arguments (``Answer with one JSON object with exactly ...``) filled."""
    messages = body.get("messages") or [{}]
    text = str(messages[-1].get("content", ""))  # the user's turn (the system's is the same for all)
    if "Answer with one JSON object" in text:
        return Scripted(json.dumps(next((args for words, args in FILLS if words in text), {})))
    asked = re.search(r"Answer \{(.*?)\}", text)
    keys = re.findall(r'"([A-Za-z_]\w*)": <value>', asked.group(1)) if asked else []
    return Scripted(json.dumps({key: ANSWERS[key] for key in keys if key in ANSWERS}))


def ok(**outputs: Any) -> ToolFn:
    def tool(inputs: Inputs, call: Any) -> dict[str, Any]:
        return dict(outputs)
    return tool


def echo(name: str) -> ToolFn:
    """A tool that returns the argument ``name`` it was given (filled by the small model)."""
    def tool(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {name: inputs[name]}
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
    "report": echo("comment"),  # posts the comment the small model wrote
    # k8s-medic: the model's image does not roll out; the last known good one does
    "set_model_image": ok(), "verify_model": fails("rollout stuck: ErrImagePull"),
    "restore_image": ok(), "verify_restore": ok(),
    "note_incident": echo("note"),  # annotates the deployment with the model's note
}
