"""A dry run: every tool replaced by a stand-in that takes its catalog duration on the virtual
clock, fails at the rate ``--fail TOOL=RATE`` gives it, and returns placeholder outputs.

Whether a call fails is drawn from its own stream, seeded by ``(seed, task, attempt)``, so the
same seed fails the same calls whatever the order calls are made in, in any process.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from typing import Any

from evolve.execute.tools import Call, ToolFailure, ToolFn
from evolve.model.errors import EvolveError
from evolve.model.problem import Problem


class SimulatedTool:
    """The stand-in for one tool."""

    def __init__(self, name: str, outputs: tuple[str, ...], rate: float, seed: int) -> None:
        self.name = name
        self.outputs = outputs
        self.rate = rate
        self.seed = seed

    def __call__(self, inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        if self.rate > 0:
            draw = random.Random(f"{self.seed}:{call.task_id}:{call.attempt}").random()
            if draw < self.rate:
                raise ToolFailure(f"simulated failure of {self.name} (rate {self.rate:g})", retryable=True)
        return {out: f"<{call.task_id}.{out}>" for out in self.outputs}

    def reconcile(self, idempotency_key: str) -> Mapping[str, Any] | None:
        """A simulated write leaves no trace anywhere: after a crash it is simply made again."""
        return None


def simulated_tools(problem: Problem, rates: Mapping[str, float], seed: int) -> dict[str, ToolFn]:
    return {
        name: SimulatedTool(name, tool.outputs, rates.get(name, 0.0), seed)
        for name, tool in problem.tools.items()
    }


def parse_fail_rates(items: Iterable[str], problem: Problem) -> dict[str, float]:
    """``TOOL=RATE`` items (``--fail``) checked against the catalog: a rate in [0, 1]."""
    rates: dict[str, float] = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        try:
            rate = float(value)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise EvolveError(f"--fail {item}: expected TOOL=RATE")
        if name not in problem.tools:
            raise EvolveError(f"--fail {item}: no tool {name!r} in the problem's catalog")
        if not 0.0 <= rate <= 1.0:
            raise EvolveError(f"--fail {item}: the rate must be within [0, 1], got {value}")
        rates[name] = rate
    return rates
