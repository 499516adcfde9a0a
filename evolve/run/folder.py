"""A run on disk: wires the engine's parts together and writes the run folder.

The folder holds ``best.json`` (the best plan with its schedule), ``summary.json``
(fitness, options, counters, wall time) and ``events.jsonl`` (one event a line).
``best.json`` and ``events.jsonl`` depend only on the problem, options and seed,
so they are byte-identical across ``--jobs``; wall time lives in the summary.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.fitness.base import Fitness
from evolve.fitness.builtin import DEFAULT_OBJECTIVES
from evolve.fitness.registry import resolve_all
from evolve.model.errors import UsageError
from evolve.model.fingerprint import fingerprint
from evolve.model.plan import Plan, plan_hash
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_to_dict
from evolve.problems import family_of
from evolve.problems.htn import DecompositionFallback
from evolve.run import checkpoint
from evolve.run.evaluator import Evaluator
from evolve.run.location import RUN_FILES as RUN_FILES
from evolve.run.location import RUNS_DIR_VARIABLE as RUNS_DIR_VARIABLE  # importers read these
from evolve.run.location import new_run_dir, prepare_folder, replace_file
from evolve.run.location import runs_root as runs_root  # three from here
from evolve.scheduling import Schedule, schedule
from evolve.scheduling.kernel import warm_up
from evolve.search.algorithm import Algorithm, SearchResult, minimize
from evolve.search.family import Request
from evolve.search.loop import Proposer
from evolve.search.operators import OperatorSet
from evolve.search.options import SearchOptions
from evolve.search.ranking import Ranking
from evolve.search.termination import Interruptible


@dataclass
class RunOutcome:
    """A finished run: where it was written and what it found."""

    out_dir: Path
    result: SearchResult
    summary: dict[str, Any]


def nothing_checkpointed(path: Path) -> bool:
    """Whether ``path`` holds a run stopped before its first checkpoint was on disk: it began
    (its problem or events are written) but has neither a checkpoint nor a result. Nothing of
    it is kept, so resuming it starts it from the beginning, which ends exactly as a run never
    stopped (a folder with no run in it, or a result without its checkpoint, is refused)."""
    def has(name: str) -> bool:
        return (path / name).exists()
    # best.json alone is an anytime search's plan so far, written before any checkpoint; best.ipc
    # alone, an HDDL problem's first plan, written before grounding (evolve.cli.run)
    return (not any(has(name) for name in (checkpoint.CHECKPOINT, checkpoint.LEGACY_CHECKPOINT,
                                            "summary.json"))
            and any(has(name) for name in ("events.jsonl", "problem.json", "best.ipc")))


def dump_json(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, default=str) + "\n"


def run_search(
    problem: Problem,
    *,
    options: SearchOptions,
    fitnesses: Sequence[Fitness] | None = None,
    weights: Sequence[float] | None = None,
    operators: OperatorSet | None = None,
    proposer: Proposer | None = None,
    proposer_share: float = 0.0,
    out_dir: str | Path | None = None,
    resume: bool = False,
    overwrite: bool = False,
    on_generation: Callable[[dict[str, Any]], None] | None = None,
    extra_summary: Callable[[], dict[str, Any]] | None = None,
    htn_fallback: DecompositionFallback | None = None,
    checkpoint_seconds: float | None = None,
    seeds: Sequence[Plan] = (),
    stop: Callable[[], str | None] | None = None,
    steps: Sequence[str] = (),
    prepared: bool = False,
) -> RunOutcome:
    """Search ``problem`` and write the run folder. The programmatic twin of ``evolve run``.

    With ``resume=True`` the search continues from ``out_dir``'s checkpoint, which
    must have been made for the same problem, objectives and options; one stopped before its
    first checkpoint starts again from the beginning (:func:`nothing_checkpointed`). The problem's
    family (:func:`evolve.problems.family_of`) builds the algorithm; an HTN domain's asks
    ``htn_fallback`` (if given) for decompositions no method covers, and writes ``best.json`` at
    each better plan as it finds it. A folder that
    already holds a run is refused unless resumed or ``overwrite=True``. The run checkpoints
    after its first generation and then at most every ``checkpoint_seconds`` (default
    :data:`evolve.defaults.CHECKPOINT_SECONDS`, read at call time; 0: every generation).
    ``seeds`` join the plan search's first population (so its best is never worse than theirs).
    ``stop`` is asked at every generation's end, after the budget: a reason ends the run there
    as a budget would (stop reason, checkpoint, result), so it can be resumed (what ``evolve
    run`` does with a first Ctrl-C). ``steps``: an HTN problem's plan found before its search
    (ground action names, in order), which the search's first plan follows when its domain
    decomposes to it (:mod:`evolve.problems.htn.hddl_first`). ``prepared``: the caller already made
    ``out_dir`` ready for this run (:func:`~evolve.run.location.prepare_folder`) and may have
    written that plan's ``best.ipc`` into it, which is then no sign of a run already there.
    """
    interval = defaults.CHECKPOINT_SECONDS if checkpoint_seconds is None else checkpoint_seconds
    if interval < 0:
        raise UsageError(f"checkpoint interval must be at least 0 seconds, got {interval}")
    fitnesses = list(fitnesses) if fitnesses is not None else resolve_all(DEFAULT_OBJECTIVES)
    request = Request(problem, operators, proposer, proposer_share, tuple(seeds), htn_fallback,
                      tuple(steps))
    family = family_of(request)
    request = family.resolve(request)
    ranking = Ranking.of(fitnesses, weights)
    unknown = [name for name in options.target if name not in ranking.objectives]
    if unknown:
        raise UsageError(f"--target names {', '.join(unknown)}, not among the objectives "
                         f"({', '.join(ranking.objectives)})")
    if resume and out_dir is None:
        raise UsageError("resuming needs the run folder")
    out = Path(out_dir) if out_dir is not None else new_run_dir()
    if not prepared:
        prepare_folder(out, resume=resume, overwrite=overwrite)
    problem_doc = problem_to_dict(problem)
    identity: dict[str, Any] = {
        "problem": fingerprint(problem_doc),
        "options": fingerprint(options.fingerprint()),
        "ranking": ranking.describe(),
        "operators": family.identity(request),
    }
    if seeds:
        identity["seeds"] = [plan_hash(p) for p in seeds]
    # a run stopped before its first checkpoint kept nothing: resuming it starts it again
    restored = checkpoint.load(out, identity) if resume and not nothing_checkpointed(out) else None
    events_path = out / "events.jsonl"
    digest = checkpoint.check_events(events_path, restored) if restored is not None else None
    (out / "problem.json").write_text(dump_json(problem_doc))
    if restored is not None:
        with events_path.open("r+b") as stream:
            stream.truncate(restored.events_bytes)
    if options.max_seconds is not None:
        # the compiled kernels load (seconds, and no deadline can cut it short) before the
        # clock --max-seconds counts starts, so the deadline is met to a tenth of a second
        warm_up()
        family.prepare(request, fitnesses)  # and the family's own (an HTN planner's heuristic)
    began = time.perf_counter()
    with EventLog(events_path, digest) as events, \
            checkpoint.Writer(out, identity, interval) as checkpoints, \
            Evaluator(problem, fitnesses, jobs=options.jobs, backend=options.backend,
                      scheduler_address=options.scheduler_address,
                      eval_timeout=options.eval_timeout, isolate=options.isolate,
                      development=family.development(request)) as evaluator:
        checkpoints.runner = evaluator.defer  # a checkpoint's text overlaps the next development

        def save_checkpoint(search: Algorithm, last: bool = False) -> None:
            # the last generation always: a finished run continues from it with a larger budget
            if checkpoints.due() or (last and checkpoints.generation != search.generation):
                events.flush()
                checkpoints.save(search.state(), events.size, events.digest.hexdigest())

        emit = event_writer(events, on_generation)
        # a family whose search can hand on each better plan as found (an HTN domain's) has it
        # on disk at once: a run killed before its end keeps it
        search = family.build(request, evaluator, ranking, options, emit,
                              lambda plan, ipc: write_best(out, problem, plan, ipc))
        if restored is not None:
            search.restore(restored.state)
        budget = options.budget()
        result = minimize(search, budget if stop is None else Interruptible(budget, stop), emit=emit,
                          on_generation=save_checkpoint,
                          on_stop=lambda search: save_checkpoint(search, last=True))
        jobs = evaluator.jobs
        worker_failures = evaluator.worker_failures
    seconds = time.perf_counter() - began
    best = result.best
    sched = write_best(out, problem, best.plan)
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
        "generations": search.generation,
        "stop_reason": result.stop_reason,
        "evaluations": result.evaluations,
        "failed_evaluations": result.failed,
        "worker_failures": worker_failures,
        "cache_hits": result.cache_hits,
        "resumed": restored is not None,
        "seconds": round(search.seconds, 3),
        "session_seconds": round(seconds, 3),
        "evaluations_per_second": (round(result.evaluations / search.seconds, 1)
                                   if search.seconds > 0 else None),
        **search.summary(),
        **(extra_summary() if extra_summary is not None else {}),
    }
    (out / "summary.json").write_text(dump_json(summary))
    return RunOutcome(out_dir=out, result=result, summary=summary)


def write_best(out: Path, problem: Problem, plan: Plan, ipc: str | None = None) -> Schedule:
    """``best.json``: the plan and its schedule, replaced atomically (a run killed while writing
    it leaves the previous one whole); the schedule is returned. ``ipc``, an HDDL problem's plan
    in the competition's format (what its verifiers read), goes to ``best.ipc`` first, before the
    schedule is computed: it needs none, and the first schedule of a process loads the scheduling
    kernels (a third of a second), which the first plan on disk need not wait for."""
    if ipc is not None:
        replace_file(out / "best.ipc", ipc)
    sched = schedule(problem, plan)
    replace_file(out / "best.json", dump_json({**plan.to_dict(), "schedule": sched.to_dict()}))
    return sched


class EventLog:
    """``events.jsonl`` opened for appending, keeping its length and running SHA-256, which each
    checkpoint records so a resume can tell the log is still the one it was written with."""

    def __init__(self, path: Path, resumed: hashlib._Hash | None) -> None:
        self.stream = path.open("ab" if resumed is not None else "wb")
        self.digest = resumed if resumed is not None else hashlib.sha256()
        self.size = self.stream.tell()

    def write(self, line: str) -> None:
        data = line.encode("utf-8")
        self.stream.write(data)
        self.digest.update(data)
        self.size += len(data)

    def flush(self) -> None:
        self.stream.flush()

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stream.close()


def event_writer(log: EventLog, on_generation: Callable[[dict[str, Any]], None] | None
                 ) -> Callable[[dict[str, Any]], None]:
    """An event sink appending JSON lines, and telling ``on_generation`` at each generation's end."""
    def write(event: dict[str, Any]) -> None:
        log.write(json.dumps(event, sort_keys=True, default=str) + "\n")
        if on_generation is not None and event.get("event") == "generation_end":
            on_generation(event)
    return write
