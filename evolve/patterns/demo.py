"""``evolve patterns demo``: the five patterns against scripted models (no model, no network).

Each scripted model is a deterministic function of its prompt (the voters answer from a fixed
ballot box), so the demo shows each pattern's control flow, and the same flows are what the
tests assert. The inputs are the ones of ``examples/patterns/``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evolve.patterns.evaluator import evaluator_optimizer
from evolve.patterns.running import Model, PatternResult
from evolve.patterns.workflows import orchestrator_workers, parallel_vote, prompt_chain, route

TOPIC = "evolve 0.2: plans that run"
TICKET = "I was charged twice for order 8472"
UNROUTABLE = "Where is my parcel?"
QUESTION = "Is 391 a prime number?"
REQUEST = "Fix the crash when a plan has an empty task list"
BRIEF = "a tagline for a plan-search engine"
PASS_AT = 3


def echo_model(prompt: str) -> str:
    """The chain's model: it answers each prompt by its first line, marked as its reply."""
    return f"[{prompt.splitlines()[0]}]"


def gate(text: str) -> str:
    """A programmatic check between two model calls."""
    if not text.strip():
        raise ValueError("the outline is empty")
    return text


def ballot_box(ballots: tuple[str, ...] = ("no", "yes", "no", "no", "yes")) -> Model:
    """Voters that answer from ``ballots`` in turn (391 = 17 x 23: the majority says no)."""
    lock = threading.Lock()
    given = iter(ballots * 100)

    def vote(prompt: str) -> str:
        with lock:
            return next(given)

    return vote


def classify(text: str) -> str:
    lowered = text.lower()
    if any(w in lowered for w in ("charge", "refund", "invoice")):
        return "billing"
    return "technical" if any(w in lowered for w in ("crash", "error", "bug")) else "other"


HANDLERS: dict[str, Callable[[str], Any]] = {
    "billing": lambda text: "We are checking the charges on your order.",
    "technical": lambda text: "Please send us the crash log.",
}


def propose(task: str, previous: str | None, feedback: str | None) -> str:
    round_ = 1 if previous is None else int(previous.rsplit("#", 1)[1]) + 1
    return f"{task} #{round_}"


def evaluate(task: str, draft: Any) -> str:
    return "PASS" if int(str(draft).rsplit("#", 1)[1]) >= PASS_AT else "FAIL: shorter, and name the benefit"


def run_demo(root: Path) -> list[PatternResult]:
    """Every pattern once (routing twice: a known label, and one with no handler), each in its
    own run folder under ``root``."""
    return [
        prompt_chain(TOPIC, echo_model, ["Outline the note on: {input}", gate, "Draft from: {input}"],
                     out=root / "prompt_chain"),
        route(TICKET, classify, HANDLERS, out=root / "route"),
        route(UNROUTABLE, classify, HANDLERS, out=root / "route_unknown"),
        parallel_vote(QUESTION, ballot_box(), n=5, out=root / "parallel_vote"),
        orchestrator_workers(
            REQUEST,
            {"research": lambda s: "found in plan loading",
             "code": lambda s: "guard against an empty task list",
             "docs": lambda s: "documented the empty plan"},
            lambda task, results: {"task": task, "from": sorted(results)},
            orchestrator=lambda task, names: ["research", "code"] + (["docs"] if "doc" in task else []),
            out=root / "orchestrator_workers",
        ),
        evaluator_optimizer(BRIEF, propose, evaluate, max_iter=5, out=root / "evaluator_optimizer"),
    ]
