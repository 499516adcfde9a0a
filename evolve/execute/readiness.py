"""When a task may run: the readiness truth table, as data.

A pending task's fate depends on three things: what its upstream tasks have become, what its
``when`` condition says, and, when an upstream task failed for good, that task's ``on_failure``.
The answer is one of four decisions: ``ready`` (dispatch it), ``skip`` (it will not run, and it
counts as satisfied for its dependents), ``fail`` (it cannot run: it fails for good without a
call) or ``wait``. :data:`RULES` is the whole table in a few rows (first match wins, ``*`` matches
anything); :data:`TABLE` is its expansion over every combination, which the tests walk.

Upstream states, aggregated over the task's deps (the worst wins):

- ``failed``: some dep ended without its outputs (failed for good, or a write left ``unknown``,
  or it was itself skipped because a dep failed: that skip passes on as ``skip_dependents``);
  this dominates a sibling still running, because the task can never run in this revision;
- ``waiting``: some dep is pending, running or waiting for a retry;
- ``branch``: every dep that ended without its outputs is one whose status the task's ``when``
  tests (``failed($t9)``, ``status($t9) == "failed"``: a failure branch), and the rest are done;
- ``done``: every dep is done or skipped by its ``when`` (also: no deps at all).

The ``when`` column is only read when upstream is ``done`` or ``branch`` (a condition reads its
deps' outputs, or their statuses):
``absent``, ``true``, ``false``, ``unknown`` (it reads an output a skipped task never made) or
``error`` (a type error, e.g. ``'abc' > 1``). The policy column is the on_failure of the failed
dep (the most severe when several failed: ``fail_plan``/``retry``, then ``replan``, then
``skip_dependents``), and ``none`` when no dep failed. A fallback runs when the dep it tests
failed under ``skip_dependents``: under ``fail_plan`` the run is ending, under ``replan`` the
replan decides.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Final, Literal

from evolve.model.plan import FAILURE_POLICIES, FailurePolicy
from evolve.model.status import ENDED_WITHOUT_OUTPUTS, SATISFIED

Upstream = Literal["done", "waiting", "failed", "branch"]
When = Literal["absent", "true", "false", "unknown", "error"]
Policy = FailurePolicy | Literal["none"]
"""A failed dep's ``on_failure``, or ``none``: no dep failed."""
Decision = Literal["ready", "skip", "fail", "wait"]

UPSTREAM: Final[tuple[Upstream, ...]] = ("done", "waiting", "failed", "branch")
WHEN: Final[tuple[When, ...]] = ("absent", "true", "false", "unknown", "error")
POLICIES: Final[tuple[Policy, ...]] = ("none", *FAILURE_POLICIES)
DECISIONS: Final[tuple[Decision, ...]] = ("ready", "skip", "fail", "wait")

RULES: Final[tuple[tuple[str, str, str, Decision], ...]] = (
    # upstream   when       policy of the failed dep   decision
    ("failed", "*", "fail_plan", "fail"),  # the run is ending: this task never runs
    ("failed", "*", "retry", "fail"),  # retries ran out: as fail_plan
    ("failed", "*", "replan", "wait"),  # the replan decides what becomes of it
    ("failed", "*", "skip_dependents", "skip"),
    ("branch", "*", "fail_plan", "fail"),  # the tested dep failed the run: no fallback
    ("branch", "*", "retry", "fail"),
    ("branch", "*", "replan", "wait"),
    ("branch", "true", "skip_dependents", "ready"),  # the fallback runs
    ("branch", "error", "skip_dependents", "fail"),
    ("branch", "*", "skip_dependents", "skip"),  # its condition does not hold
    ("waiting", "*", "*", "wait"),  # fan-in: one sibling still running
    ("done", "absent", "*", "ready"),
    ("done", "true", "*", "ready"),
    ("done", "false", "*", "skip"),
    ("done", "unknown", "*", "skip"),  # it reads what a skipped task never made
    ("done", "error", "*", "fail"),  # the condition itself is broken
)
"""The readiness truth table in rows; :data:`TABLE` expands it."""

SEVERITY: Final[dict[Policy, int]] = {
    "none": 0,
    "skip_dependents": 1,
    "replan": 2,
    "retry": 3,
    "fail_plan": 3,
}
"""Which failed dep's policy speaks for the task when several failed: the most severe."""


def combinations() -> Iterable[tuple[Upstream, When, Policy]]:
    """Every meaningful row key: a policy exactly when some dep failed."""
    for upstream, when, policy in itertools.product(UPSTREAM, WHEN, POLICIES):
        if (upstream in ("failed", "branch")) == (policy != "none"):
            yield upstream, when, policy


def expand(rules: Iterable[tuple[str, str, str, Decision]]) -> dict[tuple[Upstream, When, Policy], Decision]:
    """The table over :func:`combinations`, each from its first matching rule; a combination no
    rule matches is a hole in the table and raises."""
    rows = list(rules)
    table: dict[tuple[Upstream, When, Policy], Decision] = {}
    for key in combinations():
        for *pattern, decision in rows:
            if all(p in ("*", k) for p, k in zip(pattern, key)):
                table[key] = decision
                break
        else:
            raise ValueError(f"the readiness table has no row for {key}")
    return table


TABLE: Final = expand(RULES)


def aggregate(dep_states: Iterable[tuple[str, Policy] | tuple[str, Policy, bool]]) -> tuple[Upstream, Policy]:
    """The upstream column and policy for deps given as ``(status, on_failure)`` pairs, or
    ``(status, on_failure, tested)`` triples (``tested``: the task's ``when`` tests that dep's
    status, so its failure is a branch, not a failed upstream).

    Statuses are the journal's: ``done`` and ``skipped`` satisfy; ``failed`` and ``unknown``
    ended without outputs; anything else (``pending``, ``dispatched``) is still to come.
    An ``invalidated`` dep never runs: the patch that invalidated it rewired its dependents,
    so meeting one here is a bug, and it is treated as still to come.
    """
    failed: Policy | None = None
    branch: Policy | None = None
    waiting = False
    for status, on_failure, *tested in dep_states:
        if status in SATISFIED:
            continue
        if status in ENDED_WITHOUT_OUTPUTS:
            if tested and tested[0]:
                branch = on_failure if branch is None or SEVERITY[on_failure] > SEVERITY[branch] else branch
            else:
                failed = on_failure if failed is None or SEVERITY[on_failure] > SEVERITY[failed] else failed
        else:
            waiting = True
    if failed is not None:
        return "failed", failed
    if waiting:
        return "waiting", "none"
    if branch is not None:
        return "branch", branch
    return "done", "none"


def decide(upstream: Upstream, when: When, policy: Policy) -> Decision:
    """The table's decision for one pending task."""
    return TABLE[(upstream, when, policy)]
