"""``evolve bench psplib``: the PSPLIB benchmark from the command line.

A ``click`` group, so that the main CLI can mount it with
``cli.add_command(bench)`` and other benchmarks can join it later.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
from joblib import cpu_count

from evolve import defaults
from evolve.cli.common import FiniteFloatRange
from evolve.problems.rcpsp.bench import COUNT_RULE, STOP_RULE, format_grid, format_matrix, run_psplib_grid
from evolve.problems.rcpsp.instance import PSPLIB_SETS, psplib_dir
from evolve.run.evaluator import capped_jobs


class IntList(click.ParamType[tuple[int, ...]]):
    """Comma-separated integers (``1000,5000,50000``), each at least ``minimum``."""

    name = "list"

    def __init__(self, minimum: int) -> None:
        self.minimum = minimum

    def convert(
        self, value: object, param: click.Parameter | None, ctx: click.Context | None
    ) -> tuple[int, ...]:
        if isinstance(value, tuple):
            return value
        out: list[int] = []
        for part in str(value).split(","):
            part = part.strip().replace("_", "")
            try:
                k = int(part)
            except ValueError:
                self.fail(f"{part!r} is not an integer", param, ctx)
            if k < self.minimum:
                self.fail(f"{k} is below {self.minimum}", param, ctx)
            out.append(k)
        return tuple(out)


def _flat(groups: tuple[tuple[int, ...], ...]) -> list[int]:
    """Repeated options of comma lists as one list, in order, without repeats."""
    out: list[int] = []
    for group in groups:
        out.extend(k for k in group if k not in out)
    return out


@click.group(name="bench")
def bench() -> None:
    """Benchmarks against published results."""


@bench.command(name="psplib")
@click.option(
    "--set", "set_names", multiple=True,
    help=f"PSPLIB set(s), comma-separated or repeated: {', '.join(PSPLIB_SETS)} "
    f"(default {defaults.BENCH_SET}).",
)
@click.option(
    "--schedules", type=IntList(1), multiple=True,
    help="Schedule budget(s) per instance, comma-separated or repeated (1000,5000,50000); "
    f"every SGS decode and justification pass counts. Default {defaults.BENCH_SCHEDULES} "
    "unless --seconds is given.",
)
@click.option(
    "--seconds", type=FiniteFloatRange(min=0, min_open=True), default=None,
    help="Wall-time budget per instance instead of (or with) a schedule budget.",
)
@click.option(
    "--instances", type=click.IntRange(min=1), default=None,
    help="Run N instances evenly spread over each set (default: all).",
)
@click.option(
    "--every", type=click.IntRange(min=1), default=None,
    help="Run every K-th instance of each set, from the first (a fixed sample).",
)
@click.option(
    "--jobs", type=int, default=defaults.BENCH_JOBS, show_default=True,
    help="Parallel worker processes (joblib; -1 = all cores). Results do not depend on it.",
)
@click.option("--seed", type=click.IntRange(min=0), default=None, help=f"Run seed (default {defaults.SEED}).")
@click.option(
    "--seeds", type=IntList(0), multiple=True,
    help="Several run seeds (0,1,2): each figure is their mean, printed with its spread.",
)
@click.option(
    "--json", "json_path", type=click.Path(dir_okay=False, allow_dash=True, path_type=Path), default=None,
    help="Write the rows, the per-seed runs and every instance's result as JSON ('-': stdout, no table).",
)
def psplib_cmd(
    set_names: tuple[str, ...],
    schedules: tuple[tuple[int, ...], ...],
    seconds: float | None,
    instances: int | None,
    every: int | None,
    jobs: int,
    seed: int | None,
    seeds: tuple[tuple[int, ...], ...],
    json_path: Path | None,
) -> None:
    """Run the search on PSPLIB sets, budgets and seeds and print the literature's table.

    The figure is the average % over the optimum (j30) or over the critical-path
    bound (j60, j90, j120), the mean over the seeds. The search stops early only at a
    bound it computes itself; the best-known table is read only to score.
    """
    sets: list[str] = []
    for group in set_names or (defaults.BENCH_SET,):
        for name in group.split(","):
            name = name.strip()
            if name not in PSPLIB_SETS:
                raise click.UsageError(f"unknown set {name!r}; choose one of {', '.join(PSPLIB_SETS)}")
            if name not in sets:
                sets.append(name)
    if jobs == 0:
        raise click.UsageError("--jobs must not be 0")
    if json_path is not None and str(json_path) != "-" and not json_path.parent.is_dir():
        # checked before the runs, which may take hours, rather than when their results are due
        raise click.BadParameter(f"{json_path}: {json_path.parent} is not a folder", param_hint="--json")
    capped, cut = capped_jobs(jobs, cpu_count())
    if cut is not None:
        click.echo(f"warning: {cut}", err=True)
        jobs = capped or jobs
    if seed is not None and seeds:
        raise click.UsageError("give --seed or --seeds, not both")
    if instances is not None and every is not None:
        raise click.UsageError("give --instances or --every, not both")
    seed_list = _flat(seeds) if seeds else [defaults.SEED if seed is None else seed]
    budgets: list[int | None] = list(_flat(schedules))
    if not budgets:
        budgets = [None] if seconds is not None else [defaults.BENCH_SCHEDULES]
    base = psplib_dir()
    for name in sets:
        if not (base / name).is_dir():
            raise click.ClickException(f"PSPLIB data not found at {base / name}; set EVOLVE_PSPLIB_DIR")
    try:
        result = run_psplib_grid(sets, budgets=budgets, seeds=seed_list, seconds=seconds,
                                 instances=instances, every=every, jobs=jobs)
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    text = json.dumps(result.to_json(), indent=1)
    if json_path is not None and str(json_path) == "-":
        click.echo(text)
        return
    click.echo(f"PSPLIB {', '.join(sets)}; seeds {','.join(map(str, seed_list))}; "
               "default settings; "
               f"counted: {COUNT_RULE}; early stop only at {STOP_RULE}")
    click.echo(format_matrix(result.rows))
    click.echo()
    click.echo(format_grid(result.rows))
    click.echo(f"wall {result.wall_seconds:.1f} s, {len(result.records)} runs, {jobs} job(s)")
    if json_path is not None:
        try:
            json_path.write_text(text)
        except OSError as exc:  # removed or made read-only while the runs went on
            raise click.ClickException(f"{json_path}: cannot write ({exc.strerror or exc})") from None
        click.echo(f"wrote {json_path}")


COMMANDS = (bench,)
"""What the command line adds (see ``evolve.cli.main.SUBCOMMANDS``)."""
