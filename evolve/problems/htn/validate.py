"""Checking a domain offline: does every world state its guards can tell apart have a plan?

The states are built from the initial state by varying every key that a
method's guard tests over the values the guards
compare it with, plus "unset" (and ``true`` for a ``has`` test): every
combination when there are at most ``max_states`` of them, else a sample of
that many drawn from ``seed``. For each, the planner must find a plan (no
fallback: this checks the domain alone) and the plan must replay without a
failed precondition; a state without one is reported with what blocked it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import numpy as np

from evolve import defaults
from evolve.problems.htn.decomposition import NoPlan, replay
from evolve.problems.htn.domain import Domain, Eq, Scalar, atoms
from evolve.problems.htn.planner import Planner
from evolve.problems.htn.world import plan_verdict

UNSET = object()


@dataclass(frozen=True)
class StateResult:
    state: dict[str, Scalar]
    ok: bool
    blocked: str = ""
    steps: int = 0


@dataclass(frozen=True)
class DomainReport:
    """The verdict: every state tried, whether it was all of them, and those without a plan."""

    results: tuple[StateResult, ...]
    exhaustive: bool
    combinations: int
    keys: tuple[str, ...] = field(default=())

    @property
    def failures(self) -> list[StateResult]:
        return [r for r in self.results if not r.ok]


def dimensions(domain: Domain) -> dict[str, list[object]]:
    """Each key the guards test -> the values worth trying (UNSET first)."""
    values: dict[str, list[object]] = {}
    for atom in (a for m in domain.methods for a in atoms(m.pre)):
        options = values.setdefault(atom.key, [UNSET])
        value: object = atom.value if isinstance(atom, Eq) else True
        if not any(type(v) is type(value) and v == value for v in options if v is not UNSET):
            options.append(value)
    return values


def synthetic_states(domain: Domain, max_states: int, seed: int) -> tuple[list[dict[str, Scalar]], bool, int]:
    dims = dimensions(domain)
    keys = sorted(dims)
    total = 1
    for k in keys:
        total *= len(dims[k])

    def build(combo: tuple[object, ...]) -> dict[str, Scalar]:
        state = {k: v for k, v in domain.state.items() if k not in dims}
        for k, v in zip(keys, combo):
            if v is not UNSET:
                state[k] = v  # type: ignore[assignment]
        return state

    if total <= max_states:
        return [build(c) for c in itertools.product(*(dims[k] for k in keys))], True, total
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, ...]] = set()
    states: list[dict[str, Scalar]] = []
    while len(states) < max_states:
        pick = tuple(int(rng.integers(len(dims[k]))) for k in keys)
        if pick in seen:
            continue
        seen.add(pick)
        states.append(build(tuple(dims[k][i] for k, i in zip(keys, pick))))
    return states, False, total


def validate_domain(domain: Domain, max_states: int = defaults.HTN_VALIDATE_STATES,
                    seed: int = defaults.SEED) -> DomainReport:
    states, exhaustive, total = synthetic_states(domain, max_states, seed)
    results = []
    for state in states:
        planner = Planner(replace(domain, state=state))
        outcome = planner.plan()
        if isinstance(outcome, NoPlan):
            results.append(StateResult(state, False, str(outcome)))
            continue
        faults = replay(domain, outcome.steps, state)
        if faults:
            results.append(StateResult(state, False, "unsound plan: " + "; ".join(faults)))
            continue
        # the goal judged where the steps lead when replayed, never in the planner's own state
        verdict = plan_verdict(domain, [s.operator for s in outcome.steps], state)
        if verdict.holds:
            results.append(StateResult(state, True, steps=len(outcome.steps)))
        else:
            results.append(StateResult(state, False,
                                       f"the plan does not reach {domain.goal}: {verdict.reason}"))
    return DomainReport(tuple(results), exhaustive, total, tuple(sorted(dimensions(domain))))
