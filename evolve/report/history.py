"""How the search got there: the best plan's lineage and the final population.

The event log records every candidate once, with its parents, but not who was
alive at the end. The final population is rebuilt by replaying the engine's
own rule (the ``keep`` best survive, the children join, :class:`Ranking`
sorts, stably) over the logged evaluations; each generation's replayed best is
checked against the logged one, so a replay that drifted is reported, not shown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evolve.fitness.base import Direction
from evolve.fitness.evaluation import Evaluation
from evolve.report.data import CandidateRecord, Run
from evolve.search.ranking import Ranking

TERM = re.compile(r"(?:(?P<weight>[-+0-9.eE]+)\*)?(?P<name>\S+) \((?P<dir>min|max)\)")


def lineage(run: Run, last: str | None = None) -> list[CandidateRecord]:
    """The chain of first parents from a generation-0 plan down to ``last`` (the best by default).

    The first parent is the one each child's patch is written against, so
    reading the chain top to bottom replays the edits that made the plan.
    """
    chain: list[CandidateRecord] = []
    seen: set[str] = set()
    current = last or run.best_id
    while current is not None and current in run.candidates and current not in seen:
        seen.add(current)
        record = run.candidates[current]
        chain.append(record)
        current = record.parents[0] if record.parents else None
    return list(reversed(chain))


def ranking_from(description: str) -> Ranking | None:
    """The :class:`Ranking` that :meth:`Ranking.describe` wrote, or ``None`` if it is not one."""
    kind, _, body = description.partition(": ")
    if kind not in ("lexicographic", "weighted"):
        return None
    parts = body.split(" > " if kind == "lexicographic" else " + ")
    names: list[str] = []
    directions: list[Direction] = []
    weights: list[float] = []
    for part in parts:
        match = TERM.fullmatch(part.strip())
        if match is None:
            return None
        names.append(match["name"])
        directions.append("min" if match["dir"] == "min" else "max")
        if kind == "weighted":
            if match["weight"] is None:
                return None
            weights.append(float(match["weight"]))
    return Ranking(objectives=tuple(names), directions=tuple(directions),
                   weights=tuple(weights) if kind == "weighted" else None)


@dataclass(frozen=True)
class Population:
    """The final population, best first. ``verified`` says the replay matched every logged best."""

    members: tuple[CandidateRecord, ...]
    verified: bool
    note: str = ""


def final_population(run: Run) -> Population:
    """The population alive after the last generation (logged if the run has it, else replayed)."""
    last = run.generations[-1] if run.generations else None
    if last is not None and last.population is not None:
        members = tuple(run.candidates[c] for c in last.population if c in run.candidates)
        return Population(members, verified=True)
    ranking = ranking_from(str(run.summary.get("ranking", "")))
    options = run.summary.get("options")
    keep = options.get("keep") if isinstance(options, Mapping) else None
    if ranking is None or not isinstance(keep, int):
        every = sorted(run.candidates.values(), key=lambda c: c.generation)
        return Population(tuple(every), verified=False,
                          note="the summary does not say how candidates rank: every candidate is listed")
    ranked = replay(ranking, keep, list(run.candidates.values()), run.generations)
    if ranked is None:
        return Population(tuple(run.candidates.values()), verified=False,
                          note="replaying the ranking did not match the logged bests")
    return Population(tuple(ranked), verified=True)


def replay(ranking: Ranking, keep: int, candidates: Sequence[CandidateRecord],
           generations: Sequence[Any]) -> list[CandidateRecord] | None:
    """Re-run the engine's survival rule; ``None`` when a generation's best disagrees with the log."""
    by_generation: dict[int, list[CandidateRecord]] = {}
    for record in candidates:
        by_generation.setdefault(record.generation, []).append(record)
    logged = {g.generation: g.best for g in generations}

    def rank(group: list[CandidateRecord]) -> list[CandidateRecord]:
        return sorted(group, key=lambda c: ranking.key(as_evaluation(c)))

    population = rank(by_generation.get(0, []))
    for generation in range(0, max(by_generation, default=0) + 1):
        if generation > 0:
            population = rank(population[:keep] + by_generation.get(generation, []))
        if generation in logged and (not population or population[0].id != logged[generation]):
            return None
    return population


def as_evaluation(record: CandidateRecord) -> Evaluation:
    return Evaluation(values=dict(record.values), feasible=record.feasible,
                      errors=record.errors, failed=record.failed)


def describe_patch(patch: Mapping[str, Any]) -> list[str]:
    """A patch in short lines a person can scan: ``+ t10 crm.get_customer``, ``- t4``, ``~ t3 tool=...``."""
    lines: list[str] = []
    for task in patch.get("add") or ():
        if isinstance(task, Mapping):
            deps = ", ".join(str(d) for d in task.get("deps") or ())
            lines.append(f"+ {task.get('id')} {task.get('tool')}" + (f" after {deps}" if deps else ""))
    lines.extend(f"- {tid}" for tid in patch.get("remove") or ())
    for change in patch.get("update") or ():
        if isinstance(change, Mapping):
            fields = [f"{k}={short(v)}" for k, v in change.items() if k != "id"]
            lines.append(f"~ {change.get('id')} " + " ".join(fields))
    if patch.get("priority"):
        lines.append("priority " + " ".join(str(p) for p in patch["priority"]))
    return lines


def short(value: Any) -> str:
    if value is None:
        return "(removed)"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(str(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{v}" for k, v in value.items()) + "}"
    return str(value)


def changed_values(record: CandidateRecord, parent: CandidateRecord | None
                   ) -> dict[str, tuple[float | None, float]]:
    """The objective values that differ from the first parent's, as ``(before, after)``."""
    if parent is None:
        return {k: (None, v) for k, v in record.values.items()}
    return {k: (parent.values.get(k), v) for k, v in record.values.items() if parent.values.get(k) != v}
