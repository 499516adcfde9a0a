"""What ``evolve run`` does once its first plan (if any) is on disk: the problem read (an
HDDL pair grounded), the search run into the run folder, the result printed.

Its own module because it imports the engine, which :mod:`evolve.cli.run` loads only then.
"""

from __future__ import annotations

import json
import math
import sys
import time
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

import click

from evolve import defaults
from evolve.cli.checks import schedule_table
from evolve.cli.common import EXIT_INTERRUPTED, INTERRUPTED, CtrlC, runs_root
from evolve.cli.htn import htn_fallback_for, seed_inputs
from evolve.cli.htn import run_problem as htn_run_problem
from evolve.cli.options import LlmSettings
from evolve.fitness.registry import resolve_all
from evolve.model.collector import settle_for_one_search
from evolve.model.errors import EvolveError, RunFailed
from evolve.problems import load_problem
from evolve.run.checkpoint import CHECKPOINT, checkpointed_generation
from evolve.run.evaluator import capped_jobs
from evolve.run.folder import nothing_checkpointed, run_search
from evolve.run.location import new_run_dir
from evolve.scheduling import schedule
from evolve.search.options import SearchOptions


def search_command(problem_file: str, hddl_problem: str | None, options: SearchOptions, llm: LlmSettings,
        *, out_dir: str | None, fitness_specs: tuple[str, ...], weights: str | None, resume_dir: str | None,
        operator: str, htn_fallback: str, max_depth: int | None, max_nodes: int | None,
        input_items: tuple[str, ...], input_file: str | None, force: bool, no_report: bool,
        as_json: bool, steps: tuple[str, ...] = (), prepared: Path | None = None) -> None:
    """The search of ``evolve run`` (its options, see :func:`evolve.cli.run.run`): ``steps``,
    a plan found before grounding, which the search's first plan follows; ``prepared``, the run
    folder when :mod:`evolve.cli.run` already made it ready and wrote that plan into it."""
    problem = htn_run_problem(load_problem(problem_file) if hddl_problem is None else None,
                              hddl_problem, problem_file, max_depth, max_nodes)
    problem, _ = seed_inputs(problem, input_items, input_file)
    settle_for_one_search()
    from joblib import cpu_count  # its import is slow, and only a run needs it

    jobs, cut = capped_jobs(options.jobs, cpu_count(), remote=options.scheduler_address is not None)
    if cut is not None:
        click.echo(f"warning: {cut}", err=True)
        options = replace(options, jobs=jobs)
    fitnesses = resolve_all(fitness_specs or defaults.DEFAULT_OBJECTIVES)
    weight_list = parse_weights(weights, len(fitnesses))
    # the live rate counts from the end of the first generation this process ran: that one
    # also loads (or, the first time, compiles) the kernels and starts the workers, so a rate
    # that counted it would read "1/s" for a search summary.json says ran at 110/s
    first: list[tuple[int, float]] = []

    def progress(event: dict[str, Any]) -> None:
        if as_json:
            return
        now, evaluations = time.perf_counter(), event["evaluations"]
        values = "  ".join(f"{k}={v:g}" for k, v in event["best_values"].items())
        if not first:
            first.append((evaluations, now))
            rate = "warm-up"
        else:
            done, since = first[0]
            rate = f"{(evaluations - done) / max(now - since, 1e-9):.0f}/s"
        click.echo(f"gen {event['generation']:>3}/{options.generations}  best {values}  "
                   f"({evaluations} evals, {rate})", err=True)

    folder = prepared or Path(resume_dir or out_dir or new_run_dir(runs_root()))
    if resume_dir is not None and nothing_checkpointed(folder):
        click.echo(f"note: {folder}: nothing is checkpointed (the run stopped before its first "
                   "generation ended); starting it from the beginning", err=True)
    ctrl_c = CtrlC()
    try:
        with ctrl_c, ExitStack() as stack:
            proposer = None
            fallback = htn_fallback_for(
                problem, operator, htn_fallback, base_url=llm.base_url, model=llm.model,
                max_calls=llm.max_calls, timeout=llm.timeout, response_format=llm.response_format,
                cache_dir=llm.cache_dir, seed=options.seed)
            if fallback is not None:
                stack.enter_context(fallback)
            if operator == "llm" and fallback is None:
                proposer = stack.enter_context(llm.operator("--operator llm"))
            ctrl_c.deferring = True
            outcome = run_search(
                problem, options=options, fitnesses=fitnesses, weights=weight_list, out_dir=folder,
                resume=resume_dir is not None, overwrite=force, on_generation=progress, proposer=proposer,
                htn_fallback=fallback, steps=steps, prepared=prepared is not None,
                # a Ctrl-C during the search ends it at the generation's end (see
                # CtrlC.deferring), and so does one that landed where Python could not raise
                # it (a finalizer, a ctypes callback)
                stop=lambda: INTERRUPTED if ctrl_c.seen else None,
                proposer_share=llm.ratio if proposer is not None else 0.0,
                extra_summary=(lambda: {"llm": proposer.usage_summary()}) if proposer is not None else None)
    except BaseException as exc:
        if isinstance(exc, SystemExit) or not ctrl_c.caused(exc):
            raise
        if (folder / CHECKPOINT).exists():
            resumable(folder, f"generation {checkpointed_generation(folder)} is checkpointed")
        again = (f"the same command with --resume {folder} starts it from the beginning"
                 if nothing_checkpointed(folder) else "start the run again")
        click.echo("\ninterrupted before the first generation ended: there is no checkpoint "
                   f"to resume; {again}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if outcome.result.stop_reason == INTERRUPTED:
        resumable(folder, f"generation {outcome.summary['generations']} is checkpointed and its best "
                          f"plan written to {outcome.out_dir / 'best.json'}")
    written = ["best.json", "summary.json", "events.jsonl"]
    if not no_report:
        from evolve.report import write_report
        try:
            written.append(write_report(outcome.out_dir, problem=problem).name)
        except EvolveError as exc:
            click.echo(f"warning: the run is complete but its report failed: {exc}", err=True)
    failures = run_failures(outcome.summary)
    if as_json:
        click.echo(json.dumps({**outcome.summary, "out": str(outcome.out_dir)}, indent=2))
        if failures:
            raise RunFailed("; ".join(failures))
        return
    best = outcome.result.best
    sched = schedule(problem, best.plan)
    click.echo(f"\nbest plan {best.id} ({best.operator}, generation {best.generation}): "
               f"{len(best.plan.tasks)} tasks, makespan {sched.makespan:g}, "
               f"{'feasible' if best.evaluation.feasible else 'NOT feasible'}")
    for error in best.evaluation.errors:
        click.echo(f"  error: {error}")
    click.echo(schedule_table(best.plan, sched, problem))
    if "llm" in outcome.summary:
        from evolve.llm.usage import usage_line

        click.echo(usage_line(outcome.summary["llm"]))
    click.echo(f"\nwritten to {outcome.out_dir}/ ({', '.join(written)})")
    if failures:
        raise RunFailed("; ".join(failures))


def resumable(folder: Path, what: str) -> NoReturn:
    """End an interrupted run whose checkpoint can be resumed: say ``what`` is on disk and the
    command that continues it."""
    click.echo(f"\ninterrupted: {what}; continue with the same command and --resume {folder}", err=True)
    sys.exit(EXIT_INTERRUPTED)


def run_failures(summary: dict[str, Any]) -> list[str]:
    """What made a finished run useless, to say on the terminal and in the exit status:
    every evaluation failed, or every LLM call did."""
    out = []
    evaluations = summary.get("evaluations") or 0
    if evaluations and summary.get("failed_evaluations", 0) >= evaluations:
        reason = summary.get("best", {}).get("failed") or "see events.jsonl"
        out.append(f"every one of the {evaluations} evaluations failed (the best: {reason})")
    llm = summary.get("llm") or {}
    calls = llm.get("calls") or 0
    if calls and llm.get("failed_calls", 0) >= calls:
        kinds = ", ".join(f"{k}: {v}" for k, v in (llm.get("failed_by_kind") or {}).items())
        out.append(f"every one of the {calls} LLM calls failed ({kinds or 'see events.jsonl'})")
    return out


def parse_weights(text: str | None, count: int) -> list[float] | None:
    if text is None:
        return None
    try:
        weights = [float(w) for w in text.split(",")]
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers, got {text!r}",
                                 param_hint="--weights") from None
    if len(weights) != count:
        raise click.BadParameter(f"{len(weights)} weights for {count} objectives", param_hint="--weights")
    if not all(math.isfinite(w) for w in weights):
        raise click.BadParameter(f"weights must be finite numbers, got {text!r}", param_hint="--weights")
    return weights


