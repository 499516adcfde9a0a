"""A run on disk: wires the engine's parts together and writes the run folder.

The folder holds ``best.json`` (the best plan with its schedule), ``summary.json``
(fitness, options, counters, wall time) and ``events.jsonl`` (one event a line).
``best.json`` and ``events.jsonl`` depend only on the problem, options and seed,
so they are byte-identical across ``--jobs``; wall time lives in the summary.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from evolve.engine import Search, SearchResult
from evolve.evaluate import Evaluator
from evolve.operators import STRUCTURAL, OperatorSet
from evolve.options import SearchOptions
from evolve.problem import Problem
from evolve.rank import Ranking
from evolve.schedule import schedule
from fitness.base import Fitness
from fitness.builtin import DEFAULT_OBJECTIVES
from fitness.registry import resolve_all


@dataclass
class RunOutcome:
    """A finished run: where it was written and what it found."""

    out_dir: Path
    result: SearchResult
    summary: dict[str, Any]


def new_run_dir(root: str | Path = "runs") -> Path:
    """A fresh folder under ``root`` named by the time, never reusing an existing one."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    base = Path(root)
    for n in range(1000):
        path = base / (stamp if n == 0 else f"{stamp}-{n}")
        if not path.exists():
            path.mkdir(parents=True)
            return path
    raise RuntimeError(f"cannot create a new run folder under {base}")


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"


def run_search(
    problem: Problem,
    *,
    options: SearchOptions,
    fitnesses: Sequence[Fitness] | None = None,
    weights: Sequence[float] | None = None,
    operators: OperatorSet = STRUCTURAL,
    out_dir: str | Path | None = None,
    on_generation: Callable[[dict[str, Any]], None] | None = None,
) -> RunOutcome:
    """Search ``problem`` and write the run folder. The programmatic twin of ``evolve run``."""
    fitnesses = list(fitnesses) if fitnesses is not None else resolve_all(DEFAULT_OBJECTIVES)
    ranking = Ranking.of(fitnesses, weights)
    out = Path(out_dir) if out_dir is not None else new_run_dir()
    out.mkdir(parents=True, exist_ok=True)
    began = time.perf_counter()
    with (out / "events.jsonl").open("w", encoding="utf-8") as events, \
            Evaluator(problem, fitnesses, jobs=options.jobs, backend=options.backend) as evaluator:
        sink = event_writer(events, on_generation)
        result = Search(problem, operators=operators, evaluator=evaluator, ranking=ranking,
                        options=options, on_event=sink).run()
        jobs = evaluator.jobs
    seconds = time.perf_counter() - began
    best = result.best
    sched = schedule(problem, best.plan)
    (out / "best.json").write_text(dump_json({**best.plan.to_dict(), "schedule": sched.to_dict()}))
    summary = {
        "problem": problem.name,
        "best": {
            "id": best.id, "hash": best.hash, "generation": best.generation,
            "operator": best.operator, **best.evaluation.to_dict(),
            "makespan": sched.makespan, "critical_path": list(sched.critical_path),
            "tasks": len(best.plan.tasks),
        },
        "ranking": ranking.describe(),
        "options": {**options.to_dict(), "jobs": jobs},
        "evaluations": result.evaluations,
        "cache_hits": result.cache_hits,
        "seconds": round(seconds, 3),
        "evaluations_per_second": round(result.evaluations / seconds, 1) if seconds > 0 else None,
    }
    (out / "summary.json").write_text(dump_json(summary))
    return RunOutcome(out_dir=out, result=result, summary=summary)


def event_writer(stream: IO[str], on_generation: Callable[[dict[str, Any]], None] | None
                 ) -> Callable[[dict[str, Any]], None]:
    """An event sink appending JSON lines, and telling ``on_generation`` at each generation's end."""
    def write(event: dict[str, Any]) -> None:
        stream.write(json.dumps(event, sort_keys=True, default=str) + "\n")
        if on_generation is not None and event.get("event") == "generation_end":
            on_generation(event)
    return write
