"""The commands that read a plan or list what evolve has: ``validate``, ``schedule``,
``fitness list`` and ``generate`` (loaded when one of them runs: see ``evolve.cli.main``)."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path

import click

from evolve import defaults
from evolve.cli.common import EXIT_NO, friendly
from evolve.fitness.registry import survey
from evolve.model.documents import write_text_file
from evolve.model.plan import Plan
from evolve.model.plan_file import load_plan
from evolve.model.problem import Problem
from evolve.model.validate import evidence_plan, plan_status, validate
from evolve.problems import load_problem
from evolve.scheduling import Schedule, schedule


@click.command(name="validate")
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

    problem, plan = load_problem(problem_file), load_plan(plan_file)
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


@click.command(name="schedule")
@click.argument("plan_file", type=click.Path(dir_okay=False))
@click.option("--problem", "problem_file", required=True, type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True)
@friendly
def schedule_cmd(plan_file: str, problem_file: str, as_json: bool) -> None:
    """Simulate PLAN_FILE: makespan, critical path, slack and waves (exit 1, with the
    validator's errors, when the plan is not valid)."""
    problem, plan = load_problem(problem_file), load_plan(plan_file)
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


@click.group(name="fitness")
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


@click.command(name="generate")
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


COMMANDS = (validate_cmd, schedule_cmd, fitness_group, generate_cmd)
"""What the command line adds (see ``evolve.cli.main.SUBCOMMANDS``)."""
