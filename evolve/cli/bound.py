"""The ``bound`` command: a proven lower bound on every plan's makespan, and a plan's gap to it.

The search says which plan it found; only a bound says how far any other plan could be below
it. The bound comes from :func:`evolve.model.bounds.lower_bound` (the problem alone, nothing
of the search); the plan's makespan from the validator and the reference scheduler, so the gap
printed is checked by code that did not build the plan.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import click

from evolve import defaults
from evolve.cli.common import EXIT_NO, FiniteFloatRange, friendly
from evolve.model.bounds import lower_bound
from evolve.model.errors import UsageError
from evolve.model.plan_file import load_plan
from evolve.model.validate import validate
from evolve.problems import is_fixed_structure, load_problem
from evolve.problems.htn import HtnProblem
from evolve.scheduling import schedule


def plan_path(given: str) -> Path:
    """A plan file, or a run folder's ``best.json``."""
    path = Path(given)
    if path.is_dir():
        path = path / "best.json"
        if not path.is_file():
            raise UsageError(f"{given}: a run folder without best.json")
    return path


@click.command(name="bound")
@click.argument("problem_file", type=click.Path(dir_okay=False))
@click.option("--plan", "plan_file", type=click.Path(), default=None,
              help="A plan (or a run folder: its best.json) to measure against the bound.")
@click.option("--mip-seconds", type=FiniteFloatRange(min=0), default=defaults.BOUND_MIP_SECONDS,
              show_default=True, help="Time for the least-work and whole energy MIPs (0: the LP only).")
@click.option("--path-seconds", type=FiniteFloatRange(min=0), default=defaults.BOUND_PATH_SECONDS,
              show_default=True, help="Time for the chosen-path MIP (0: skip it).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@friendly
def bound(problem_file: str, plan_file: str | None, mip_seconds: float, path_seconds: float,
          as_json: bool) -> None:
    """Prove a lower bound on the makespan of every valid complete plan of PROBLEM_FILE, each
    argument's value beside it; with --plan, the plan's makespan (validated and scheduled) and
    its gap to the bound. Exit 1 when the plan is not valid."""
    problem = load_problem(problem_file)
    if isinstance(problem, HtnProblem):
        raise UsageError(f"{problem_file}: an HTN domain; bounds are for catalog problems, whose plans "
                         "are any tasks that make the criteria (an HTN plan is what its methods allow)")
    if is_fixed_structure(problem) or not problem.criteria:
        raise UsageError(f"{problem_file}: no criteria to make, so nothing to bound (bounds are for "
                         "catalog problems; a fixed task graph has its own in evolve bench psplib)")
    lb = lower_bound(problem, mip_seconds=mip_seconds or None, path_seconds=path_seconds or None)
    out: dict[str, Any] = {"bound": lb.value, "source": lb.source, "parts": dict(lb.parts),
                           "seconds": round(lb.seconds, 3)}
    errors: list[str] = []
    if plan_file is not None:
        path = plan_path(plan_file)
        plan = load_plan(path)
        errors = [str(e) for e in validate(problem, plan)]
        out["plan"] = {"file": str(path), "valid": not errors, "errors": errors}
        if not errors:
            made = schedule(problem, plan).makespan
            gap = (made / lb.value - 1.0) * 100.0 if lb.value > 0 and math.isfinite(lb.value) else None
            out["plan"].update(makespan=made, gap_pct=gap)
    if as_json:
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(f"lower bound {lb.value:.2f} ({lb.source}), {lb.seconds:.1f} s")
        for name, value in lb.parts.items():
            click.echo(f"  {name:<28} {value:12.2f}")
        if "plan" in out:
            for error in errors:
                click.echo(f"{out['plan']['file']}: {error}", err=True)
            if errors:
                click.echo(f"{out['plan']['file']}: not valid ({len(errors)} errors), so not measured",
                           err=True)
            else:
                gap_pct = out["plan"]["gap_pct"]
                gap_text = "-" if gap_pct is None else f"{gap_pct:.2f} %"
                click.echo(f"plan {out['plan']['file']}: makespan {out['plan']['makespan']:g}, "
                           f"gap to the bound {gap_text}")
    if errors:
        sys.exit(EXIT_NO)


COMMANDS = (bound,)
"""Register with ``for command in COMMANDS: cli.add_command(command)``."""
