"""``evolve run``: the first plan of an HDDL problem on disk before anything heavy loads, then
the search (:mod:`evolve.cli.searching`).

Reading, grounding and the engine's imports (numba, numpy, joblib: about a second) come before
a grounded search's first plan. An HDDL problem's lifted search (:mod:`~evolve.problems.htn.
hddl_first`) needs none of them: its verified plan goes to the run folder's ``best.ipc`` first,
and the engine is imported after it.
"""

from __future__ import annotations

from pathlib import Path

import click

from evolve import defaults
from evolve.cli.common import friendly, runs_root
from evolve.cli.htn_options import FALLBACK_HELP, FALLBACKS, input_options, limit_options
from evolve.cli.options import LlmSettings, llm_options, search_options
from evolve.problems.htn.hddl_first import first_plan
from evolve.run.location import new_run_dir, prepare_folder, replace_file
from evolve.search.options import SearchOptions

OPERATORS = ("random", "llm")
"""``--operator``: how children are made."""


@click.command(name="run")
@click.argument("problem_file", type=click.Path(dir_okay=False))
@click.argument("hddl_problem", type=click.Path(dir_okay=False, exists=True), required=False)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Run folder (default: a new folder under runs/).")
@click.option("--fitness", "fitness_specs", multiple=True,
              help="Objective by name (see `evolve fitness list`) or package.module:function; "
                   "repeat, in priority order. "
                   f"Default: {', '.join(defaults.DEFAULT_OBJECTIVES)}.")
@click.option("--weights", default=None,
              help="Comma-separated weights, one per --fitness: rank by a weighted sum instead.")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, exists=True), default=None,
              help="Continue the run in this folder from its last checkpoint.")
@click.option("--operator", type=click.Choice(OPERATORS), default=defaults.OPERATOR, show_default=True,
              help="How children are made: random structural operators, or also an LLM proposing patches.")
@click.option("--htn-fallback", type=click.Choice(FALLBACKS), default=defaults.HTN_FALLBACK,
              show_default=True, help=FALLBACK_HELP)
@limit_options
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
    if resume_dir is not None and out_dir is not None and Path(out_dir) != Path(resume_dir):
        raise click.BadParameter("--out and --resume name different folders", param_hint="--out")
    # the lifted plan is searched on a resume too: the grounded search starts from it, and a
    # resumed run must end as the run never stopped would
    first = first_plan(problem_file, hddl_problem) if hddl_problem is not None else None
    folder = None
    if first is not None and resume_dir is None:
        folder = Path(out_dir) if out_dir is not None else new_run_dir(runs_root())
        prepare_folder(folder, resume=False, overwrite=force)
        replace_file(folder / "best.ipc", first.ipc)
    # the engine's modules load now, with the first plan on disk
    from evolve.cli.searching import search_command

    search_command(problem_file, hddl_problem, options, llm, out_dir=out_dir, fitness_specs=fitness_specs,
                   weights=weights, resume_dir=resume_dir, operator=operator, htn_fallback=htn_fallback,
                   max_depth=max_depth, max_nodes=max_nodes, input_items=input_items,
                   input_file=input_file, force=force, no_report=no_report, as_json=as_json,
                   steps=first.steps if first is not None else (), prepared=folder)


COMMANDS = (run,)
"""What the command line adds (see ``evolve.cli.main.SUBCOMMANDS``)."""
