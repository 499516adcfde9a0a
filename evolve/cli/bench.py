"""``evolve bench psplib``: the PSPLIB benchmark from the command line.

A ``click`` group, so that the main CLI can mount it with
``cli.add_command(bench)`` and other benchmarks can join it later.
"""

from __future__ import annotations

from pathlib import Path

import click

from evolve.problems.rcpsp.bench import format_table, run_psplib_benchmark
from evolve.problems.rcpsp.instance import PSPLIB_SETS, psplib_dir


@click.group(name="bench")
def bench() -> None:
    """Benchmarks against published results."""


@bench.command(name="psplib")
@click.option(
    "--set", "set_name", default="j30", show_default=True, help=f"PSPLIB set: {', '.join(PSPLIB_SETS)}."
)
@click.option(
    "--schedules",
    type=click.IntRange(min=1),
    default=None,
    help="Schedules per instance (SGS runs and justification passes). "
    "Default 1000 unless --seconds is given.",
)
@click.option(
    "--seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Wall-time budget per instance instead of (or with) a schedule budget.",
)
@click.option(
    "--instances",
    type=click.IntRange(min=1),
    default=None,
    help="Run N instances evenly spread over the set (default: all).",
)
@click.option(
    "--jobs",
    type=int,
    default=1,
    show_default=True,
    help="Parallel worker processes (joblib; -1 = all cores).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Run seed.")
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write per-instance results (JSON list of records).",
)
def psplib_cmd(
    set_name: str,
    schedules: int | None,
    seconds: float | None,
    instances: int | None,
    jobs: int,
    seed: int,
    json_path: Path | None,
) -> None:
    """Run the search on a PSPLIB set and print the literature's table."""
    if set_name not in PSPLIB_SETS:
        raise click.UsageError(f"unknown set {set_name!r}; choose one of {', '.join(PSPLIB_SETS)}")
    if jobs == 0:
        raise click.UsageError("--jobs must not be 0")
    if schedules is None and seconds is None:
        schedules = 1000
    base = psplib_dir()
    if not (base / set_name).is_dir():
        raise click.ClickException(f"PSPLIB data not found at {base / set_name}; set EVOLVE_PSPLIB_DIR")
    try:
        _, summary = run_psplib_benchmark(
            set_name,
            schedules=schedules,
            seconds=seconds,
            instances=instances,
            jobs=jobs,
            seed=seed,
            json_path=json_path,
        )
    except (FileNotFoundError, ValueError, OSError) as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(format_table([summary]))
    if json_path is not None:
        click.echo(f"wrote {json_path}")
