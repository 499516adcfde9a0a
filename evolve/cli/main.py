"""The ``evolve`` command line.

Bad input ends in one line on stderr naming the file, the key and the fault,
with exit status 2; never a traceback.
"""

from __future__ import annotations

import json
import math
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click
import yaml

from evolve import defaults
from evolve.cli.bench import bench
from evolve.cli.common import EXIT_INTERRUPTED, EXIT_NO, friendly, runs_root
from evolve.cli.execute import COMMANDS as EXECUTE_COMMANDS
from evolve.cli.htn import COMMANDS as HTN_COMMANDS
from evolve.cli.htn import FALLBACK_HELP as HTN_FALLBACK_HELP
from evolve.cli.htn import FALLBACKS as HTN_FALLBACKS
from evolve.cli.htn import htn_fallback_for
from evolve.cli.htn import limit_options as htn_limit_options
from evolve.cli.htn import run_problem as htn_run_problem
from evolve.cli.report import COMMANDS as REPORT_COMMANDS
from evolve.fitness.builtin import DEFAULT_OBJECTIVES
from evolve.fitness.registry import resolve_all, survey
from evolve.llm.factory import make_llm_operator
from evolve.llm.modes import MODES
from evolve.llm.operator import RESPONSE_FORMATS, TOKEN_PARAMS
from evolve.llm.usage import usage_line
from evolve.model.errors import EvolveError, RunFailed
from evolve.model.files import load_plan
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.model.validate import plan_status, validate
from evolve.problems import load_problem
from evolve.problems.synthetic import generate_document, save_document
from evolve.report import write_report
from evolve.run.backends import BACKENDS
from evolve.run.checkpoint import CHECKPOINT
from evolve.run.folder import new_run_dir, run_search
from evolve.scheduling import Schedule, schedule
from evolve.search.options import DEFAULTS, SearchOptions


@click.group()
@click.version_option(package_name="evolve")
def cli() -> None:
    """evolve: evolutionary search for the best plan (task graph) for a planning problem."""


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C: a ``KeyboardInterrupt``, or the ``SystemError`` a compiled
    kernel raises when the interrupt lands while it runs (the interrupt is its context)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def read_problem(path: str) -> Problem:
    return load_problem(path)


@cli.command()
@click.argument("problem_file", type=click.Path(dir_okay=False))
@click.argument("hddl_problem", type=click.Path(dir_okay=False, exists=True), required=False)
@click.option("--generations", type=click.IntRange(min=0), default=DEFAULTS.generations, show_default=True)
@click.option("--population", type=click.IntRange(min=2), default=DEFAULTS.population, show_default=True)
@click.option("--keep", type=click.IntRange(min=1), default=DEFAULTS.keep, show_default=True,
              help="How many of the best survive each generation.")
@click.option("--seed", type=click.IntRange(min=0), default=DEFAULTS.seed, show_default=True)
@click.option("--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: every core).")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Run folder (default: a new folder under runs/).")
@click.option("--fitness", "fitness_specs", multiple=True,
              help="Objective by name (see `evolve fitness list`) or package.module:function; "
                   "repeat, in priority order. "
                   f"Default: {', '.join(DEFAULT_OBJECTIVES)}.")
@click.option("--weights", default=None,
              help="Comma-separated weights, one per --fitness: rank by a weighted sum instead.")
@click.option("--backend", type=click.Choice(BACKENDS), default=DEFAULTS.backend, show_default=True,
              help="joblib backend for parallel evaluation.")
@click.option("--scheduler-address", default=None,
              help="Address of a running Dask scheduler or Ray cluster (default: a local one).")
@click.option("--eval-timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds one evaluation may take; past it the candidate is scored as failed.")
@click.option("--isolate/--no-isolate", default=None,
              help="Run every evaluation in a worker process, so a crashing objective costs only its "
                   "candidate (default: on when a plugin objective or --eval-timeout is used).")
@click.option("--max-evaluations", type=click.IntRange(min=1), default=None,
              help="Stop after this many evaluations (checked after each generation).")
@click.option("--max-seconds", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Stop after this much wall time (checked after each generation).")
@click.option("--target", "targets", multiple=True, metavar="NAME=VALUE",
              help="Stop once the best plan is feasible and reaches VALUE on objective NAME.")
@click.option("--patience", type=click.IntRange(min=1), default=None,
              help="Stop after this many generations without improvement.")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Continue the run in this folder from its last checkpoint.")
@click.option("--operator", type=click.Choice(["random", "llm"]), default="random", show_default=True,
              help="How children are made: random structural operators, or also an LLM proposing patches.")
@click.option("--htn-fallback", type=click.Choice(HTN_FALLBACKS), default="none", show_default=True,
              help=HTN_FALLBACK_HELP)
@htn_limit_options
@click.option("--llm-base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1.")
@click.option("--llm-model", default=None, help="Model name the endpoint serves.")
@click.option("--llm-ratio", type=click.FloatRange(0, 1), default=defaults.LLM_SHARE, show_default=True,
              help="Share of each generation's children made by the LLM (the rest: random operators).")
@click.option("--llm-max-calls", type=click.IntRange(min=0), default=None,
              help="At most this many LLM proposals in the run.")
@click.option("--llm-timeout", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Seconds one whole LLM call may take, retries included "
                   f"(default {defaults.LLM_TIMEOUT:g}).")
@click.option("--llm-concurrency", type=click.IntRange(min=1), default=None,
              help="LLM calls in flight at once (default 4).")
@click.option("--llm-response-format", type=click.Choice(RESPONSE_FORMATS), default=None,
              help="How JSON is asked for (default json_object).")
@click.option("--llm-prompt-dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Folder with system.txt and/or user.txt replacing the shipped prompt templates.")
@click.option("--llm-cache-dir", type=click.Path(file_okay=False), default=None,
              help="Where LLM replies are cached (default ~/.cache/evolve/llm).")
@click.option("--llm-mode", type=click.Choice(MODES), default=defaults.LLM_MODE, show_default=True,
              help="patch: the model writes plan patches; menu: it picks one of the engine's pre-scored "
                   "edits; auto: menu for models known (by name) or measured to be small.")
@click.option("--llm-menu-size", type=click.IntRange(min=2), default=defaults.LLM_MENU_SIZE,
              show_default=True, help="Edits on each menu (menu mode).")
@click.option("--llm-max-tokens", type=click.IntRange(min=1), default=defaults.LLM_MAX_TOKENS,
              show_default=True, help="Completion limit of a call "
                                      f"(menu replies get at most {defaults.LLM_MENU_MAX_TOKENS}).")
@click.option("--llm-token-param", type=click.Choice(TOKEN_PARAMS), default=defaults.LLM_TOKEN_PARAM,
              show_default=True, help="Request field of the completion limit (some models require "
                                      "max_completion_tokens).")
@click.option("--force", is_flag=True,
              help="Overwrite the run already in the --out folder (default: refuse).")
@click.option("--no-report", is_flag=True, help="Do not write report.html at the end of the run.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@friendly
def run(problem_file: str, hddl_problem: str | None, generations: int, population: int, keep: int, seed: int,
        jobs: int | None, out_dir: str | None, fitness_specs: tuple[str, ...], weights: str | None,
        backend: str, scheduler_address: str | None, eval_timeout: float | None,
        isolate: bool | None, max_evaluations: int | None, max_seconds: float | None,
        targets: tuple[str, ...], patience: int | None, resume_dir: str | None, operator: str,
        htn_fallback: str, max_depth: int | None, max_nodes: int | None,
        llm_base_url: str | None, llm_model: str | None, llm_ratio: float, llm_max_calls: int | None,
        llm_timeout: float | None, llm_concurrency: int | None, llm_response_format: str | None,
        llm_prompt_dir: str | None, llm_cache_dir: str | None, llm_mode: str, llm_menu_size: int,
        llm_max_tokens: int, llm_token_param: str, force: bool, no_report: bool, as_json: bool) -> None:
    """Search for the best plan for PROBLEM_FILE and write it to a run folder.

    A run writes a checkpoint after every generation; one that was stopped
    (Ctrl-C, a crash, a killed machine) continues with the same command plus
    --resume RUN_DIR. An HDDL domain and problem run directly: DOMAIN.hddl HDDL_PROBLEM.
    """
    problem = htn_run_problem(read_problem(problem_file) if hddl_problem is None else None,
                              hddl_problem, problem_file, max_depth, max_nodes)
    if resume_dir is not None and out_dir is not None and Path(out_dir) != Path(resume_dir):
        raise click.BadParameter("--out and --resume name different folders", param_hint="--out")
    options = SearchOptions(
        population=population, keep=keep, generations=generations, seed=seed, jobs=jobs,
        backend=backend, scheduler_address=scheduler_address, eval_timeout=eval_timeout,
        isolate=isolate, max_evaluations=max_evaluations, max_seconds=max_seconds,
        target=parse_targets(targets), patience=patience)
    fitnesses = resolve_all(fitness_specs or DEFAULT_OBJECTIVES)
    weight_list = parse_weights(weights, len(fitnesses))
    began = time.perf_counter()

    def progress(event: dict[str, Any]) -> None:
        if as_json:
            return
        rate = event["evaluations"] / max(time.perf_counter() - began, 1e-9)
        values = "  ".join(f"{k}={v:g}" for k, v in event["best_values"].items())
        click.echo(f"gen {event['generation']:>3}/{generations}  best {values}  "
                   f"({event['evaluations']} evals, {rate:.0f}/s)", err=True)

    folder = Path(resume_dir or out_dir or new_run_dir(runs_root()))
    try:
        with ExitStack() as stack:
            proposer = None
            fallback = htn_fallback_for(
                problem, operator, htn_fallback, base_url=llm_base_url, model=llm_model,
                max_calls=llm_max_calls, timeout=llm_timeout, response_format=llm_response_format,
                cache_dir=llm_cache_dir, seed=seed)
            if fallback is not None:
                stack.enter_context(fallback)
            if operator == "llm" and fallback is None:
                if not llm_base_url or not llm_model:
                    raise click.UsageError("--operator llm needs --llm-base-url and --llm-model")
                settings: dict[str, Any] = {"max_calls": llm_max_calls, "timeout": llm_timeout,
                            "concurrency": llm_concurrency, "response_format": llm_response_format,
                            "prompt_dir": llm_prompt_dir, "cache_dir": llm_cache_dir,
                            "mode": llm_mode, "menu_size": llm_menu_size, "max_tokens": llm_max_tokens,
                            "token_param": llm_token_param}
                proposer = stack.enter_context(make_llm_operator(
                    llm_base_url, llm_model, **{k: v for k, v in settings.items() if v is not None}))
            outcome = run_search(
                problem, options=options, fitnesses=fitnesses, weights=weight_list, out_dir=folder,
                resume=resume_dir is not None, overwrite=force, on_generation=progress, proposer=proposer,
                htn_fallback=fallback,
                proposer_share=llm_ratio if proposer is not None else 0.0,
                extra_summary=(lambda: {"llm": proposer.usage_summary()}) if proposer is not None else None)
    except (KeyboardInterrupt, SystemError) as exc:
        if not interrupted(exc):
            raise
        if (folder / CHECKPOINT).exists():
            click.echo("\ninterrupted: the last completed generation is checkpointed; continue with "
                       f"the same command and --resume {folder}", err=True)
        else:
            click.echo("\ninterrupted before the first generation ended: there is no checkpoint "
                       "to resume; start the run again", err=True)
        sys.exit(EXIT_INTERRUPTED)
    written = ["best.json", "summary.json", "events.jsonl"]
    if not no_report:
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
        click.echo(usage_line(outcome.summary["llm"]))
    click.echo(f"\nwritten to {outcome.out_dir}/ ({', '.join(written)})")
    if failures:
        raise RunFailed("; ".join(failures))


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


def parse_targets(items: tuple[str, ...]) -> dict[str, float]:
    targets: dict[str, float] = {}
    for item in items:
        name, sep, value = item.partition("=")
        try:
            targets[name.strip()] = float(value)
        except ValueError:
            sep = ""
        if sep and not math.isfinite(targets[name.strip()]):
            raise click.BadParameter(f"the target must be a finite number, got {item!r}",
                                     param_hint="--target")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected NAME=VALUE, got {item!r}", param_hint="--target")
    return targets


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


@cli.command(name="validate")
@click.argument("plan_file", type=click.Path(dir_okay=False))
@click.option("--problem", "problem_file", required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
@friendly
def validate_cmd(plan_file: str, problem_file: str, as_json: bool) -> None:
    """Check PLAN_FILE against a problem: exit 0 when valid (status ready), 1 when not (status
    blocked), 2 when unreadable."""
    problem, plan = read_problem(problem_file), load_plan(plan_file)
    errors = validate(problem, plan)
    status = plan_status(errors)
    if as_json:
        click.echo(json.dumps({"valid": not errors, "status": status, "errors": [
            {"rule": e.rule, "task": e.task, "message": e.message} for e in errors]}, indent=2))
    elif errors:
        for error in errors:
            click.echo(str(error))
        click.echo(f"{plan_file}: status {status} ({len(errors)} errors)")
    else:
        click.echo(f"{plan_file}: valid, status {status} ({len(plan.tasks)} tasks)")
    sys.exit(1 if errors else 0)


@cli.command(name="schedule")
@click.argument("plan_file", type=click.Path(dir_okay=False))
@click.option("--problem", "problem_file", required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
@friendly
def schedule_cmd(plan_file: str, problem_file: str, as_json: bool) -> None:
    """Simulate PLAN_FILE: makespan, critical path, slack and waves (exit 1, with the
    validator's errors, when the plan is not valid)."""
    problem, plan = read_problem(problem_file), load_plan(plan_file)
    errors = validate(problem, plan)
    if errors:
        for error in errors:
            click.echo(f"{plan_file}: {error}", err=True)
        click.echo(f"{plan_file}: not valid ({len(errors)} errors), so it is not scheduled", err=True)
        sys.exit(EXIT_NO)
    sched = schedule(problem, plan)
    if as_json:
        click.echo(json.dumps({
            "makespan": sched.makespan, "critical_path": list(sched.critical_path),
            "critical_path_length": sched.critical_path_length, "schedule": sched.to_dict(),
            "slack": dict(sched.slack), "waves": [list(w) for w in sched.waves],
            "unscheduled": list(sched.unscheduled)}, indent=2))
        return
    click.echo(schedule_table(plan, sched, problem))


def schedule_table(plan: Plan, sched: Schedule, problem: Problem) -> str:
    """A plain-text table of the schedule, critical tasks marked with ``*``."""
    tasks = plan.by_id()
    critical = set(sched.critical_path)
    rows = [f"{'task':<8} {'tool':<28} {'start':>9} {'finish':>9} {'slack':>8}  wave"]
    wave_of = {tid: i for i, wave in enumerate(sched.waves) for tid in wave}
    for tid in sorted(sched.start, key=lambda t: (sched.start[t], t)):
        mark = "*" if tid in critical else " "
        rows.append(f"{tid + mark:<8} {tasks[tid].tool:<28} {sched.start[tid]:>9g} "
                    f"{sched.finish[tid]:>9g} {sched.slack[tid]:>8g}  {wave_of[tid]}")
    rows.append(f"makespan {sched.makespan:g}; critical path ({sched.critical_path_length:g}): "
                f"{' -> '.join(sched.critical_path) or '-'}")
    if sched.unscheduled:
        rows.append(f"not schedulable (on or behind a cycle): {', '.join(sched.unscheduled)}")
    return "\n".join(rows)


@cli.group(name="fitness")
def fitness_group() -> None:
    """Fitness functions: what is available and where it comes from."""


@fitness_group.command(name="list")
@click.option("--json", "as_json", is_flag=True)
@friendly
def fitness_list(as_json: bool) -> None:
    """List every fitness function: built-ins and installed plugins, with where each comes from.

    Plugins that fail to load are listed on stderr, and the exit status is then 1.
    """
    result = survey()
    found = result.found
    if as_json:
        click.echo(json.dumps([{
            "name": f.name, "direction": f.direction, "low": f.spec.low, "high": f.spec.high,
            "source": f.source, "description": f.spec.description} for f in found.values()], indent=2))
    else:
        name_width = max((len(n) for n in found), default=4) + 2
        source_width = max((len(f.source) for f in found.values()), default=6) + 2
        for f in found.values():
            click.echo(f"{f.name:<{name_width}}{f.direction:<5}{f.source:<{source_width}}{f.spec.description}")
    for problem in result.problems:
        click.echo(f"error: {problem}", err=True)
    if result.problems:
        sys.exit(1)


@cli.command(name="generate")
@click.option("--tools", type=int, default=60, show_default=True, help="Number of tools (>= 4).")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--name", default=None, help="The problem's name.")
@click.option("--no-approval", is_flag=True, help="Do not require approval for write tools.")
@click.option("--no-resources", is_flag=True, help="No renewable resources.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None,
              help="File to write (.yaml or .json); default: print YAML.")
@friendly
def generate_cmd(tools: int, seed: int, name: str | None, no_approval: bool, no_resources: bool,
                 out_file: str | None) -> None:
    """Generate a random, solvable planning problem of any size (for tests and benchmarks)."""
    doc = generate_document(tools, seed, write_requires_approval=not no_approval,
                            resources=not no_resources, name=name)
    if out_file is None:
        click.echo(yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100), nl=False)
        return
    save_document(doc, out_file)
    click.echo(f"wrote {out_file} ({len(doc['tools'])} tools, criteria: {', '.join(doc['criteria'])})",
               err=True)


for command in (*REPORT_COMMANDS, bench, *HTN_COMMANDS, *EXECUTE_COMMANDS):
    cli.add_command(command)


def main() -> None:
    cli(prog_name="evolve")


__all__ = ["cli", "main"]
