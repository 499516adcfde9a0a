"""Scripted model tools for the five workflow patterns in examples/patterns/.

    evolve execute examples/patterns/<pattern>_plan.yaml --problem examples/patterns/<pattern>.yaml \\
        --tools examples.patterns.scripted:TOOLS

Each "model" here is a deterministic function of its inputs, so a run shows the pattern's
control flow (what runs, what is skipped, in which order, how often) rather than a model's
whims, and a test can assert it. Initial facts may arrive as null (``evolve execute`` without
``--fact``): every tool then uses the example's default text.

What each pattern's tools do:

- prompt chaining: ``llm.outline`` -> ``gate.outline`` (fails the plan on fewer than three
  points) -> ``llm.draft`` -> ``llm.polish``.
- routing: ``llm.classify`` labels by keywords (``charge``/``refund``/``invoice`` -> billing,
  ``crash``/``error``/``bug`` -> technical, anything else -> ``other``, which the plan sends
  to the default handler: escalate to a human).
- parallel vote: ``llm.answer`` answers by its ``sample`` (three of five samples say "no");
  ``vote.majority`` counts every ``answer*`` input.
- orchestrator-workers: ``llm.orchestrate`` picks research and code for a bug report (docs too
  when the request mentions documentation); ``llm.synthesize`` joins what ran (null for the rest).
- evaluator-optimizer: ``llm.evaluate`` passes a draft from its third revision on;
  ``select.final`` returns the first passing draft.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

try:
    from evolve import ToolFailure
except ImportError:  # an evolve whose package root does not re-export it yet
    from evolve.execute.tools import ToolFailure

Inputs = Mapping[str, Any]
ToolFn = Callable[[Inputs, Any], dict[str, Any]]

TOPIC = "evolve 0.2: plans that run"
TICKET = "I was charged twice for order 8472"
QUESTION = "Is 391 a prime number?"
REQUEST = "Fix the crash when a plan has an empty task list"
BRIEF = "a tagline for a plan-search engine"
PASS_FROM_REVISION = 3


# -- prompt chaining ----------------------------------------------------------------------------

def outline(inputs: Inputs, call: Any) -> dict[str, Any]:
    topic = inputs.get("topic") or TOPIC
    return {"outline": [f"what {topic} is", "what changed", "how to try it"]}


def gate_outline(inputs: Inputs, call: Any) -> dict[str, Any]:
    points = inputs.get("outline") or []
    if len(points) < 3 or not all(isinstance(p, str) and p.strip() for p in points):
        raise ToolFailure(f"the outline has {len(points)} usable points, at least 3 are needed")
    return {"checked_outline": list(points)}


def draft(inputs: Inputs, call: Any) -> dict[str, Any]:
    points = inputs.get("checked_outline") or []
    return {"draft": " ".join(f"{p.capitalize()}: ...." for p in points)}


def polish(inputs: Inputs, call: Any) -> dict[str, Any]:
    text = str(inputs.get("draft") or "")
    return {"article": text.replace("....", "done.").strip()}


# -- routing ------------------------------------------------------------------------------------

ROUTES = {"billing": ("charge", "refund", "invoice"), "technical": ("crash", "error", "bug")}


def classify(inputs: Inputs, call: Any) -> dict[str, Any]:
    text = str(inputs.get("ticket") or TICKET).lower()
    for route, words in ROUTES.items():
        if any(word in text for word in words):
            return {"route": route}
    return {"route": "other"}


def billing(inputs: Inputs, call: Any) -> dict[str, Any]:
    return {"reply": {"handler": "billing", "text": "We are checking the charges on your order."}}


def technical(inputs: Inputs, call: Any) -> dict[str, Any]:
    return {"reply": {"handler": "technical", "text": "Please send us the crash log."}}


def escalate(inputs: Inputs, call: Any) -> dict[str, Any]:
    return {"reply": {"handler": "default", "text": "escalate to human"}}


# -- parallel vote ------------------------------------------------------------------------------

SAMPLES = {1: "no", 2: "yes", 3: "no", 4: "no", 5: "yes"}
"""What each sample answers: a majority of three "no" (391 = 17 x 23)."""


def answer(inputs: Inputs, call: Any) -> dict[str, Any]:
    sample = inputs.get("sample", 1)
    return {"answer": SAMPLES.get(sample if isinstance(sample, int) else 1, "no")}


def majority(inputs: Inputs, call: Any) -> dict[str, Any]:
    ballots = [v for k, v in sorted(inputs.items()) if k.startswith("answer") and v is not None]
    if not ballots:
        raise ToolFailure("no answers to count")
    counts = Counter(ballots)
    winner, votes = max(sorted(counts.items()), key=lambda item: item[1])
    return {"verdict": {"answer": winner, "votes": votes, "of": len(ballots)}}


# -- orchestrator-workers -----------------------------------------------------------------------

def orchestrate(inputs: Inputs, call: Any) -> dict[str, Any]:
    request = str(inputs.get("request") or REQUEST).lower()
    subtasks = {"research": f"find where this happens: {request}", "code": "write the fix and a test"}
    if "doc" in request:
        subtasks["docs"] = "update the documentation"
    return {"subtasks": subtasks}


def worker(field: str, result: str) -> ToolFn:
    def run(inputs: Inputs, call: Any) -> dict[str, Any]:
        return {field: {"by": call.task_id if call is not None else field, "result": result}}
    return run


def synthesize(inputs: Inputs, call: Any) -> dict[str, Any]:
    parts = {k: v for k, v in sorted(inputs.items()) if v is not None}
    return {"report": {"from": sorted(parts), "skipped": sorted(k for k, v in inputs.items() if v is None)}}


# -- evaluator-optimizer ------------------------------------------------------------------------

def propose(inputs: Inputs, call: Any) -> dict[str, Any]:
    previous = inputs.get("previous")
    revision = previous["revision"] + 1 if isinstance(previous, Mapping) else 1
    feedback = inputs.get("feedback")
    text = f"{inputs.get('brief') or BRIEF} (revision {revision})"
    return {"draft": {"revision": revision, "text": text, "answered": feedback}}


def evaluate(inputs: Inputs, call: Any) -> dict[str, Any]:
    candidate = inputs.get("draft")
    revision = candidate.get("revision", 0) if isinstance(candidate, Mapping) else 0
    if revision >= PASS_FROM_REVISION:
        return {"verdict": "PASS", "feedback": None}
    return {"verdict": "FAIL", "feedback": f"revision {revision}: shorter, and name the benefit"}


def select_final(inputs: Inputs, call: Any) -> dict[str, Any]:
    rounds = []
    for k in range(1, 100):
        suffix = "" if k == 1 else f"_{k}"
        if f"draft{suffix}" not in inputs:
            break
        rounds.append((inputs.get(f"draft{suffix}"), inputs.get(f"verdict{suffix}")))
    ran = [(d, v) for d, v in rounds if d is not None]
    if not ran:
        raise ToolFailure("no round produced a draft")
    passed = [d for d, v in ran if v == "PASS"]
    chosen = passed[0] if passed else ran[-1][0]
    return {"final": {"draft": chosen, "passed": bool(passed), "rounds": len(ran)}}


TOOLS: dict[str, ToolFn] = {
    "llm.outline": outline, "gate.outline": gate_outline, "llm.draft": draft, "llm.polish": polish,
    "llm.classify": classify, "handlers.billing": billing, "handlers.technical": technical,
    "handlers.default": escalate,
    "llm.answer": answer, "vote.majority": majority,
    "llm.orchestrate": orchestrate, "worker.research": worker("notes", "found in plan loading"),
    "worker.code": worker("patch", "guard against an empty task list"),
    "worker.docs": worker("docs", "documented the empty plan"), "llm.synthesize": synthesize,
    "llm.propose": propose, "llm.evaluate": evaluate, "select.final": select_final,
}
"""Every pattern's tools in one table (their names do not collide)."""

PATTERNS = ("chaining", "routing", "voting", "orchestrator", "evaluator")
"""The examples: ``<name>.yaml`` (the problem) and ``<name>_plan.yaml`` (the plan)."""
