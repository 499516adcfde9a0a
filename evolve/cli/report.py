"""The ``report``, ``plot`` and ``show`` commands, for ``evolve.cli.main`` to register.

They live here rather than in ``evolve/cli.py`` so the report package stays one
piece; bad input ends as one line on stderr with exit status 2, as everywhere
in the ``evolve`` command line.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import click

from evolve import defaults
from evolve.cli.common import EXIT_NO, friendly
from evolve.model.plan_file import load_plan
from evolve.model.validate import validate
from evolve.problems import load_problem
from evolve.report.data import load_run
from evolve.report.execution import write_execution_report
from evolve.report.execution_data import is_execution_folder, load_execution
from evolve.report.html import write_report
from evolve.report.plots import KINDS, save_plot
from evolve.report.terminal import execution_text_gantt, text_gantt
from evolve.report.timeline import timeline_of

PROBLEM_HELP = "The run's problem file, when the run folder has no problem.json."


@click.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--problem", "problem_file", type=click.Path(dir_okay=False), default=None, help=PROBLEM_HELP)
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None,
              help="Where to write the HTML (default: RUN_DIR/report.html).")
@friendly
def report(run_dir: str, problem_file: str | None, out_file: str | None) -> None:
    """Write the run's HTML report: one self-contained file that opens offline.

    RUN_DIR is an ``evolve run`` folder or an ``evolve execute`` one (its execution report:
    planned against actual, revisions, people, every step)."""
    if is_execution_folder(run_dir):
        path = write_execution_report(run_dir, out=out_file)
    else:
        path = write_report(run_dir, problem=problem_file, out=out_file)
    click.echo(str(path))


@click.command()
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--kind", type=click.Choice(KINDS), required=True)
@click.option("--out", "out_file", type=click.Path(dir_okay=False), required=True,
              help="FILE.png or FILE.svg.")
@click.option("--problem", "problem_file", type=click.Path(dir_okay=False), default=None, help=PROBLEM_HELP)
@friendly
def plot(run_dir: str, kind: str, out_file: str, problem_file: str | None) -> None:
    """Save the best plan's Gantt chart or the convergence plot (needs the plot extra)."""
    path = save_plot(load_run(run_dir, problem_file), kind, out_file)
    click.echo(str(path))


@click.command()
@click.argument("plan_file", type=click.Path())
@click.option("--problem", "problem_file", type=click.Path(dir_okay=False), default=None,
              help="The problem file (optional when PLAN is a run folder with problem.json).")
@click.option("--width", type=click.IntRange(min=40), default=None,
              help="Line width (default: the terminal's).")
@click.option("--color/--no-color", default=None, help="Colour the bars (default: when a terminal).")
@friendly
def show(plan_file: str, problem_file: str | None, width: int | None, color: bool | None) -> None:
    """Print PLAN's Gantt chart and critical path as text. PLAN may be a run folder.

    Exit 1, with the validator's errors on stderr, when the plan is not valid: the chart of such
    a plan (a cycle, a task id used twice, a missing reference) is drawn for inspection, but it
    is not a schedule anyone can run, and the exit status must not say it is.

    An ``evolve execute`` run folder is drawn as what ran: each task's attempts on the run
    clock, its status and times, and the revisions (also of a run still going or waiting)."""
    columns = width or shutil.get_terminal_size((defaults.SHOW_WIDTH, 24)).columns
    use_color = sys.stdout.isatty() if color is None else color
    if is_execution_folder(plan_file):
        chart = execution_text_gantt(load_execution(plan_file), width=columns, color=use_color)
        click.echo(chart, color=use_color)
        return
    plan_path = Path(plan_file)
    if plan_path.is_dir():
        if problem_file is None and (plan_path / "problem.json").is_file():
            problem_file = str(plan_path / "problem.json")
        plan_path = plan_path / "best.json"
    if problem_file is None:
        raise click.UsageError("--problem is required (the plan alone does not say how long tasks take)")
    problem, plan = load_problem(problem_file), load_plan(plan_path)
    click.echo(text_gantt(timeline_of(problem, plan), width=columns, color=use_color), color=use_color)
    errors = validate(problem, plan)
    for error in errors:
        click.echo(f"{plan_path}: {error}", err=True)
    if errors:
        click.echo(f"{plan_path}: not valid ({len(errors)} errors)", err=True)
        sys.exit(EXIT_NO)


COMMANDS = (report, plot, show)
"""Register with ``for command in COMMANDS: cli.add_command(command)``."""
