"""The ``evolve`` command line.

Bad input ends in one line on stderr naming the file, the key and the fault,
with exit status 2; never a traceback.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import math
import sys
import time
from collections.abc import Mapping
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

import click

from evolve import defaults
from evolve.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_NO,
    INTERRUPTED,
    CtrlC,
    friendly,
    runs_root,
    survive_closed_pipes,
)
from evolve.cli.htn import FALLBACK_HELP as HTN_FALLBACK_HELP
from evolve.cli.htn import FALLBACKS as HTN_FALLBACKS
from evolve.cli.htn import htn_fallback_for, input_options, seed_inputs
from evolve.cli.htn import limit_options as htn_limit_options
from evolve.cli.htn import run_problem as htn_run_problem
from evolve.cli.options import LlmSettings, llm_options, search_options
from evolve.fitness.builtin import DEFAULT_OBJECTIVES
from evolve.fitness.registry import resolve_all, survey
from evolve.model.collector import settle_for_one_search
from evolve.model.documents import write_text_file
from evolve.model.errors import EvolveError, RunFailed
from evolve.model.plan import Plan
from evolve.model.plan_file import load_plan
from evolve.model.problem import Problem
from evolve.model.validate import evidence_plan, plan_status, validate
from evolve.problems import load_problem
from evolve.run.checkpoint import CHECKPOINT, checkpointed_generation
from evolve.run.evaluator import capped_jobs
from evolve.run.folder import new_run_dir, nothing_checkpointed, run_search
from evolve.scheduling import Schedule, schedule
from evolve.search.options import SearchOptions

SUBCOMMANDS: Mapping[str, tuple[str, ...]] = {
    "evolve.cli.report": ("report", "plot", "show"),
    "evolve.cli.bench": ("bench",),
    "evolve.cli.bound": ("bound",),
    "evolve.cli.htn": ("validate-domain", "hddl"),
    "evolve.cli.author": ("author",),
    "evolve.cli.execute": ("execute",),
    "evolve.cli.human": ("pending", "approve", "reject", "answer", "resolve"),
    "evolve.cli.patterns": ("patterns",),
    "evolve.cli.plan": ("plan",),
    "evolve.cli.tools": ("import-tools",),
    "evolve.cli.serve": ("serve",),
    "evolve.cli.mcp": ("mcp",),
}
"""The commands the other modules of this package define (their ``COMMANDS``), by module. A
module is imported only when one of its commands runs (or ``evolve --help`` lists them all), so
``evolve run`` does not wait for the server's, the executor's or the bounds' libraries. A test
holds each entry to its module's ``COMMANDS``."""


class LazyGroup(click.Group):
    """A click group whose commands of :data:`SUBCOMMANDS` are imported on first use."""

    def __init__(self, *args: Any, modules: Mapping[str, tuple[str, ...]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = {name: module for module, names in modules.items() for name in names}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = self.lazy.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            for command in importlib.import_module(module).COMMANDS:
                self.add_command(command)
        return super().get_command(ctx, cmd_name)

@click.group(cls=LazyGroup, modules=SUBCOMMANDS)
@click.version_option(package_name="evolve")
def cli() -> None:
    """evolve: evolutionary search for the best plan (task graph) for a planning problem."""


OPERATORS = ("random", "llm")
"""``--operator``: how children are made."""


def read_problem(path: str) -> Problem:
    return load_problem(path)


@cli.command()
@click.argument("problem_file", type=click.Path(dir_okay=False))
@click.argument("hddl_problem", type=click.Path(dir_okay=False, exists=True), required=False)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Run folder (default: a new folder under runs/).")
@click.option("--fitness", "fitness_specs", multiple=True,
              help="Objective by name (see `evolve fitness list`) or package.module:function; "
                   "repeat, in priority order. "
                   f"Default: {', '.join(DEFAULT_OBJECTIVES)}.")
@click.option("--weights", default=None,
              help="Comma-separated weights, one per --fitness: rank by a weighted sum instead.")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Continue the run in this folder from its last checkpoint.")
@click.option("--operator", type=click.Choice(OPERATORS), default=defaults.OPERATOR, show_default=True,
              help="How children are made: random structural operators, or also an LLM proposing patches.")
@click.option("--htn-fallback", type=click.Choice(HTN_FALLBACKS), default=defaults.HTN_FALLBACK,
              show_default=True, help=HTN_FALLBACK_HELP)
@htn_limit_options
@input_options
@click.option("--force", is_flag=True,
              help="Overwrite the run already in the --out folder (default: refuse).")
@click.option("--no-report", is_flag=True, help="Do not write report.html at the end of the run.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@friendly
@search_options
@llm_options()
def run(problem_file: str, hddl_problem: str | None, options: SearchOptions, llm: LlmSettings,
        out_dir: str | None, fitness_specs: tuple[str, ...], weights: str | None, resume_dir: str | None,
        operator: str, htn_fallback: str, max_depth: int | None, max_nodes: int | None,
        input_items: tuple[str, ...], input_file: str | None, force: bool, no_report: bool,
        as_json: bool) -> None:
    """Search for the best plan for PROBLEM_FILE and write it to a run folder.

    A run writes a checkpoint after its first generation, then about once a second;
    one that was stopped (Ctrl-C, a crash, a killed machine) continues with the same
    command plus --resume RUN_DIR and ends exactly as if never stopped. An HDDL domain and
    problem run directly: DOMAIN.hddl HDDL_PROBLEM.
    """
    problem = htn_run_problem(read_problem(problem_file) if hddl_problem is None else None,
                              hddl_problem, problem_file, max_depth, max_nodes)
    problem, _ = seed_inputs(problem, input_items, input_file)
    settle_for_one_search()
    if resume_dir is not None and out_dir is not None and Path(out_dir) != Path(resume_dir):
        raise click.BadParameter("--out and --resume name different folders", param_hint="--out")
    from joblib import cpu_count  # its import is slow, and only a run needs it

    jobs, cut = capped_jobs(options.jobs, cpu_count(), remote=options.scheduler_address is not None)
    if cut is not None:
        click.echo(f"warning: {cut}", err=True)
        options = replace(options, jobs=jobs)
    fitnesses = resolve_all(fitness_specs or DEFAULT_OBJECTIVES)
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

    folder = Path(resume_dir or out_dir or new_run_dir(runs_root()))
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
                htn_fallback=fallback,
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


@cli.command(name="validate")
@click.argument("plan_file", type=click.Path(dir_okay=False))
@click.option("--problem", "problem_file", required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
@click.option("--fact", "fact_items", multiple=True, metavar="NAME=VALUE",
              help="The run's value of an initial fact (JSON, or text): a task input bound to a "
                   "literal of that name must equal it (rule resource-mismatch).")
@click.option("--evidence-out", "evidence_out", is_flag=False, flag_value=defaults.EVIDENCE_PLAN_PATH,
              default=None, type=click.Path(dir_okay=False), metavar="[PATH]",
              help="Write the evidence plan (status ready or blocked, each task's change, evidence, "
                   f"dependencies, proof and wave) to PATH (default {defaults.EVIDENCE_PLAN_PATH}).")
@friendly
def validate_cmd(plan_file: str, problem_file: str, as_json: bool, fact_items: tuple[str, ...],
                 evidence_out: str | None) -> None:
    """Check PLAN_FILE against a problem: exit 0 when valid (status ready), 1 when not (status
    blocked), 2 when unreadable."""
    from evolve.cli.execute import parse_facts

    problem, plan = read_problem(problem_file), load_plan(plan_file)
    errors = validate(problem, plan, parse_facts(fact_items))
    status = plan_status(errors)
    if evidence_out is not None:
        target = Path(evidence_out)
        with contextlib.suppress(OSError):  # a folder that cannot be made: the write says why
            target.parent.mkdir(parents=True, exist_ok=True)
        write_text_file(evidence_out, json.dumps(evidence_plan(plan, errors), indent=2) + "\n")
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
    from evolve.report.terminal import short_chain  # the report package's import is slow

    tasks = plan.by_id()
    critical = set(sched.critical_path)
    rows = [f"{'task':<8} {'tool':<28} {'start':>9} {'finish':>9} {'slack':>8}  wave"]
    wave_of = {tid: i for i, wave in enumerate(sched.waves) for tid in wave}
    for tid in sorted(sched.start, key=lambda t: (sched.start[t], t)):
        mark = "*" if tid in critical else " "
        rows.append(f"{tid + mark:<8} {tasks[tid].tool:<28} {sched.start[tid]:>9g} "
                    f"{sched.finish[tid]:>9g} {sched.slack[tid]:>8g}  {wave_of[tid]}")
    rows.append(f"makespan {sched.makespan:g}; critical path ({sched.critical_path_length:g}): "
                f"{short_chain(sched.critical_path)}")
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
@click.option("--tools", type=click.IntRange(4, defaults.GENERATE_MAX_TOOLS), default=defaults.GENERATE_TOOLS,
              show_default=True, help="Number of tools.")
@click.option("--seed", type=click.IntRange(min=0), default=defaults.SEED, show_default=True)
@click.option("--name", default=None, help="The problem's name.")
@click.option("--no-approval", is_flag=True, help="Do not require approval for write tools.")
@click.option("--no-resources", is_flag=True, help="No renewable resources.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None,
              help="File to write (.yaml or .json); default: print YAML.")
@friendly
def generate_cmd(tools: int, seed: int, name: str | None, no_approval: bool, no_resources: bool,
                 out_file: str | None) -> None:
    """Generate a random, solvable planning problem of any size (for tests and benchmarks)."""
    import yaml

    from evolve.problems.synthetic import generate_document, save_document

    doc = generate_document(tools, seed, write_requires_approval=not no_approval,
                            resources=not no_resources, name=name)
    if out_file is None:
        click.echo(yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100), nl=False)
        return
    save_document(doc, out_file)
    click.echo(f"wrote {out_file} ({len(doc['tools'])} tools, criteria: {', '.join(doc['criteria'])})",
               err=True)


def main() -> None:
    survive_closed_pipes()
    cli(prog_name="evolve")


__all__ = ["cli", "main"]
