"""What the LLM operator spent and what came of it, for the run summary.

Counted under a lock because a generation's calls finish on worker threads.
``calls`` are requests that went to the endpoint; ``cache_hits`` were answered
from disk; both count against ``max_calls``, which bounds how many LLM
proposals a run consults, so that a rerun from the cache makes the same ones.
Tokens are those the endpoint reported for this run's own calls (what was paid
for); replayed replies' tokens are counted apart.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any


class Usage:
    """Thread-safe counters; :meth:`summary` is what goes into ``summary.json``."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests = 0
        self.calls = 0
        self.cache_hits = 0
        self.attempts = 0
        self.skipped_budget = 0
        self.accepted = 0
        self.rejected: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.replayed_prompt_tokens = 0
        self.replayed_completion_tokens = 0
        self.latency = 0.0
        self.menu: Counter[str] = Counter()

    def called(self, *, cached: bool, prompt_tokens: int, completion_tokens: int,
               attempts: int, latency: float) -> None:
        with self.lock:
            self.requests += 1
            if cached:
                self.cache_hits += 1
                self.replayed_prompt_tokens += prompt_tokens
                self.replayed_completion_tokens += completion_tokens
            else:
                self.calls += 1
                self.attempts += attempts
                self.prompt_tokens += prompt_tokens
                self.completion_tokens += completion_tokens
                self.latency += latency

    def skipped(self) -> None:
        with self.lock:
            self.skipped_budget += 1

    def judged(self, rejected: str | None) -> None:
        """A reply was turned into a child (``None``) or rejected for ``rejected``."""
        with self.lock:
            if rejected is None:
                self.accepted += 1
            else:
                self.rejected[rejected] += 1

    def picked(self, outcome: dict[str, int]) -> None:
        """A menu pick was accepted; ``outcome`` compares it with the coin's (see ``MenuPicks``)."""
        with self.lock:
            self.menu.update(outcome)

    def call_failed(self, kind: str) -> None:
        """A call gave no reply at all (``timeout``, ``http``, ``connection``, ``protocol``)."""
        with self.lock:
            self.failed[kind] += 1

    def state(self) -> dict[str, Any]:
        """The counters as plain data, for a checkpoint; :meth:`restore` takes it back."""
        with self.lock:
            return {name: (dict(value) if isinstance(value, Counter) else value)
                    for name, value in vars(self).items() if name != "lock"}

    def restore(self, state: dict[str, Any]) -> None:
        with self.lock:
            for name, value in state.items():
                setattr(self, name, Counter(value) if isinstance(value, dict) else value)

    def summary(self) -> dict[str, Any]:
        """The counters for ``summary.json``. ``patches_accepted`` counts every accepted reply,
        menu picks included; ``menu`` is there once a pick was made."""
        with self.lock:
            judged = self.accepted + sum(self.rejected.values())
            menu = {"menu": dict(sorted(self.menu.items()))} if self.menu else {}
            return {
                "requests": self.requests,
                "calls": self.calls,
                "cache_hits": self.cache_hits,
                "http_attempts": self.attempts,
                "retries": self.attempts - self.calls,
                "skipped_budget": self.skipped_budget,
                "patches_accepted": self.accepted,
                "patches_rejected": sum(self.rejected.values()),
                "accepted_share": (round(self.accepted / judged, 3) if judged else None),
                "rejected_by_reason": dict(sorted(self.rejected.items())),
                "failed_calls": sum(self.failed.values()),
                "failed_by_kind": dict(sorted(self.failed.items())),
                "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens,
                           "total": self.prompt_tokens + self.completion_tokens},
                "replayed_tokens": {"prompt": self.replayed_prompt_tokens,
                                    "completion": self.replayed_completion_tokens},
                "call_seconds": round(self.latency, 3),
                **menu,
            }


def usage_line(summary: dict[str, Any]) -> str:
    """The LLM block of a run summary in one line for the terminal: what was spent, what was
    accepted, and in menu mode how the picks fared against a random pick of the same menus."""
    text = (f"llm ({summary.get('active_mode', 'patch')} mode): {summary['requests']} proposals "
            f"({summary['calls']} calls, {summary['cache_hits']} from cache), "
            f"{summary['patches_accepted']} accepted, {summary['patches_rejected']} rejected, "
            f"{summary['failed_calls']} failed; {summary['tokens']['total']} tokens spent")
    menu = summary.get("menu")
    if menu:
        text += (f"; picks vs a random pick of the same menu: better {menu.get('beat_random', 0)}, "
                 f"same {menu.get('tied_random', 0)}, worse {menu.get('lost_to_random', 0)}")
    return text
