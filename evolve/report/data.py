"""A run folder read into typed records: the one place that knows the files' shapes.

Everything the report shows comes from here, so the HTML, the plots and the
tests agree on what a run holds. The folder does not have to hold the problem:
with ``problem.json`` (or a problem file passed in) the best plan is scheduled
again and resource usage is exact; without it the stored schedule is drawn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve.model.errors import EvolveError, InputError
from evolve.model.plan import Plan
from evolve.model.plan_file import plan_from_dict
from evolve.model.problem import Problem
from evolve.problems import load_problem
from evolve.report.timeline import Timeline, timeline_from_times, timeline_of

CANDIDATE_KEYS = frozenset({
    "event", "id", "generation", "parents", "operator", "hash", "cached", "patch",
    "values", "feasible", "errors", "failed",
})
"""Keys every candidate event has; any other key is operator metadata (an LLM's model, tokens...)."""


class RunError(EvolveError):
    """A run folder that cannot be reported on: names the folder or file and what is wrong."""


@dataclass(frozen=True)
class CandidateRecord:
    """One ``candidate`` event: a scored plan, how it was made and, for LLM children, the call."""

    id: str
    generation: int
    parents: tuple[str, ...]
    operator: str
    hash: str
    cached: bool
    patch: Mapping[str, Any]
    values: Mapping[str, float]
    feasible: bool
    errors: tuple[str, ...] = ()
    failed: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reason(self) -> str | None:
        """The proposer's one-line reason: in the event itself, under ``llm``, or in the patch."""
        nested = self.meta.get("llm")
        for source in (self.meta, nested if isinstance(nested, Mapping) else {}, self.patch):
            value = source.get("reason")
            if isinstance(value, str) and value.strip():
                return value.strip()
        return None


@dataclass(frozen=True)
class ObjectiveStat:
    best: float
    median: float


@dataclass(frozen=True)
class GenerationRecord:
    """One ``generation_end`` event."""

    generation: int
    best: str
    evaluations: int
    best_values: Mapping[str, float]
    objectives: Mapping[str, ObjectiveStat]
    population: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Run:
    """Everything in a run folder, plus the problem when it could be found."""

    folder: Path
    summary: Mapping[str, Any]
    plan: Plan
    stored_times: Mapping[str, tuple[float, float]]
    candidates: Mapping[str, CandidateRecord]
    generations: tuple[GenerationRecord, ...]
    problem: Problem | None = None
    problem_source: str | None = None

    @property
    def best_id(self) -> str | None:
        best = self.summary.get("best")
        if isinstance(best, Mapping) and isinstance(best.get("id"), str):
            return str(best["id"])
        return self.generations[-1].best if self.generations else None

    @property
    def objectives(self) -> list[str]:
        """Objective names in ranking order.

        Events are written with sorted keys, so their order is alphabetical; the
        summary keeps the order the objectives were given in, which is the ranking's.
        """
        best = self.summary.get("best")
        if isinstance(best, Mapping) and isinstance(best.get("values"), Mapping) and best["values"]:
            return [str(k) for k in best["values"]]
        if self.generations:
            return list(self.generations[-1].objectives or self.generations[-1].best_values)
        record = self.candidates.get(self.best_id or "")
        return list(record.values) if record else []

    def timeline(self) -> Timeline:
        """The best plan's timeline: rescheduled with the problem, else from ``best.json``."""
        if self.problem is not None:
            return timeline_of(self.problem, self.plan)
        best = self.summary.get("best")
        path = best.get("critical_path", []) if isinstance(best, Mapping) else []
        return timeline_from_times(self.plan, self.stored_times, [str(t) for t in path])


def load_run(folder: str | Path, problem: str | Path | Problem | None = None) -> Run:
    """Read a run folder; ``problem`` overrides ``problem.json`` in the folder when given."""
    root = Path(folder)
    if not root.is_dir():
        raise RunError(f"{root}: not a run folder (no such directory)")
    summary = read_json(root / "summary.json")
    if not isinstance(summary, dict):
        raise RunError(f"{root / 'summary.json'}: expected a JSON object")
    best_doc = read_json(root / "best.json")
    if not isinstance(best_doc, dict):
        raise RunError(f"{root / 'best.json'}: expected a JSON object")
    plan = plan_from_dict(best_doc, str(root / "best.json"))
    times = read_times(best_doc.get("schedule"), root / "best.json")
    candidates, generations = read_events(root / "events.jsonl")
    found, source = find_problem(root, problem)
    return Run(folder=root, summary=summary, plan=plan, stored_times=times, candidates=candidates,
               generations=generations, problem=found, problem_source=source)


def find_problem(root: Path, given: str | Path | Problem | None) -> tuple[Problem | None, str | None]:
    if isinstance(given, Problem):
        return given, given.name
    if given is not None:
        return load_problem(given), str(given)
    stored = root / "problem.json"
    if stored.is_file():
        return load_problem(stored), str(stored)
    return None, None


def read_json(path: Path) -> Any:
    try:
        return json.loads(read_run_text(path))
    except json.JSONDecodeError as exc:
        raise RunError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None


def read_run_text(path: Path) -> str:
    """A run folder file's text, or a :class:`RunError` naming it: a run folder is data that may
    have been damaged (a folder where the file was, bytes that are not UTF-8), and each such
    fault must read as bad input, not as a crash of the report."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RunError(f"{path}: missing (is {path.parent} a run folder?)") from None
    except OSError as exc:
        raise RunError(f"{path}: cannot read file ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise RunError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def read_times(doc: object, source: Path) -> dict[str, tuple[float, float]]:
    if doc is None:
        return {}
    if not isinstance(doc, Mapping):
        raise InputError(str(source), "schedule", "expected a mapping of task ids to start/finish")
    times: dict[str, tuple[float, float]] = {}
    for tid, span in doc.items():
        try:
            times[str(tid)] = (float(span["start"]), float(span["finish"]))
        except (TypeError, KeyError, ValueError):
            raise InputError(str(source), f"schedule.{tid}", "expected {start, finish}") from None
    return times


def read_events(path: Path) -> tuple[dict[str, CandidateRecord], tuple[GenerationRecord, ...]]:
    """Candidates by id (in event order) and generation records; other events are skipped."""
    candidates: dict[str, CandidateRecord] = {}
    generations: list[GenerationRecord] = []
    lines = read_run_text(path).splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
            kind = event.get("event")
            if kind == "candidate":
                record = candidate_record(event)
                candidates[record.id] = record
            elif kind == "generation_end":
                generations.append(generation_record(event))
        except (json.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError) as exc:
            raise RunError(f"{path}: line {number}: not a valid event ({exc})") from None
    return candidates, tuple(generations)


def candidate_record(event: Mapping[str, Any]) -> CandidateRecord:
    return CandidateRecord(
        id=str(event["id"]), generation=int(event["generation"]),
        parents=tuple(str(p) for p in event.get("parents", ())),
        operator=str(event.get("operator", "")), hash=str(event.get("hash", "")),
        cached=bool(event.get("cached", False)), patch=dict(event.get("patch") or {}),
        values={str(k): float(v) for k, v in (event.get("values") or {}).items()},
        feasible=bool(event.get("feasible", False)),
        errors=tuple(str(e) for e in event.get("errors", ())),
        failed=str(event["failed"]) if event.get("failed") else None,
        meta={k: v for k, v in event.items() if k not in CANDIDATE_KEYS},
    )


def generation_record(event: Mapping[str, Any]) -> GenerationRecord:
    population = event.get("population")
    return GenerationRecord(
        generation=int(event["generation"]), best=str(event["best"]),
        evaluations=int(event.get("evaluations", 0)),
        best_values={str(k): float(v) for k, v in (event.get("best_values") or {}).items()},
        objectives={str(name): ObjectiveStat(best=float(s["best"]), median=float(s["median"]))
                    for name, s in (event.get("objectives") or {}).items()},
        population=tuple(str(p) for p in population) if isinstance(population, list) else None,
    )
