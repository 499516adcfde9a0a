"""Scheduling speed: the kernel-backed ``schedule`` against the plain-Python ``reference_schedule``.

Two chain-and-fan shapes, on synthetic tools with fractional durations, three
``max_parallel`` slots and a capacity-1 ``gpu`` (a third of the tasks use it),
so slots and the resource both bind:

* ``chain+fan``: a root, then a chain of half the tasks and a fan of the other
  half, all joined at the end. The chain goes first (longest remaining path),
  so every fan task starts its search at the root's finish and the plain
  profile scan walks the whole busy profile: the quadratic case.
* ``fan blocks``: blocks of a hub, a fan of 8 and a join, chained; each block
  is placed at the end of the profile, which even the reference does quickly.

Both schedulers run in this process on the same plans (numba's compilation is
done before timing, by ``warm_up``), their schedules are checked equal, and
the ratio is measured. Usage::

    python benchmarks/schedule_speed.py [--sizes 2000 20000] [--repeat 3] [--reference-max 20000]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from evolve.model.plan import Plan, Task
from evolve.model.problem import Limits, Problem, Tool
from evolve.scheduling import Schedule, reference_schedule, schedule
from evolve.scheduling.kernel import warm_up

FAN = 8
"""Tasks in each fan; a block is ``FAN + 2`` tasks."""



def chain_and_fan_problem() -> Problem:
    """Synthetic tools with fractional durations, three parallel slots and one capacity-1 GPU."""
    tools = {
        "hub": Tool("hub", 0.5),
        "gpu_step": Tool("gpu_step", 1.25, uses={"gpu": 1.0}),
        "cpu_step": Tool("cpu_step", 0.75),
        "long_step": Tool("long_step", 2.4),
        "join": Tool("join", 0.3),
    }
    return Problem(tools=tools, limits=Limits(max_parallel=3), resources={"gpu": 1.0},
                   name="chain-and-fan")


KINDS = ("gpu_step", "cpu_step", "long_step")


def chain_plus_fan_plan(tasks: int) -> Plan:
    """A root, a chain of half the tasks and a fan of the rest after it, and a join of both."""
    half = tasks // 2
    out = [Task("root", "hub")]
    previous = "root"
    for i in range(half - 1):
        out.append(Task(f"c{i}", KINDS[i % 3], deps=(previous,)))
        previous = f"c{i}"
    fan = [Task(f"f{i}", KINDS[(i + 1) % 3], deps=("root",)) for i in range(tasks - half - 1)]
    return Plan(tasks=(*out, *fan, Task("end", "join", deps=(previous, *(t.id for t in fan)))))


def fan_blocks_plan(tasks: int) -> Plan:
    """About ``tasks`` tasks in blocks of hub, fan and join, the blocks chained one after another."""
    kinds = KINDS
    out: list[Task] = []
    previous: tuple[str, ...] = ()
    for b in range(max(1, tasks // (FAN + 2))):
        hub = Task(f"h{b}", "hub", deps=previous)
        fan = [Task(f"f{b}_{i}", kinds[i % 3], deps=(hub.id,)) for i in range(FAN)]
        join = Task(f"j{b}", "join", deps=tuple(t.id for t in fan))
        out += [hub, *fan, join]
        previous = (join.id,)
    return Plan(tasks=tuple(out))


def best_time(fn: Callable[[], Schedule], repeat: int) -> tuple[float, Schedule]:
    """Best wall time of ``repeat`` calls (noise only ever adds time) and the last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        began = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - began)
    assert result is not None
    return best, result


SHAPES: dict[str, Callable[[int], Plan]] = {"chain+fan": chain_plus_fan_plan,
                                            "fan blocks": fan_blocks_plan}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[2_000, 20_000])
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of the kernel path")
    parser.add_argument("--reference-max", type=int, default=20_000,
                        help="largest plan the reference schedules (chain+fan 20,000: ~90 s)")
    args = parser.parse_args()

    warm_up()
    problem = chain_and_fan_problem()
    schedule(problem, fan_blocks_plan(20))  # the Python side's first-call costs, too
    for shape, build in SHAPES.items():
        for size in args.sizes:
            plan = build(size)
            kernel_s, fast = best_time(lambda: schedule(problem, plan), args.repeat)  # noqa: B023
            line = (f"{shape:<10} {len(plan.tasks):>7,} tasks  makespan {fast.makespan:9.2f}  "
                    f"schedule {kernel_s:7.3f} s")
            if size <= args.reference_max:
                ref_s, slow = best_time(lambda: reference_schedule(problem, plan), 1)  # noqa: B023
                assert slow == fast, "the kernel and the reference disagree"
                line += f"  reference_schedule {ref_s:7.2f} s  ratio {ref_s / kernel_s:6.1f}x  identical"
            else:
                line += "  reference_schedule skipped (--reference-max)"
            if size >= 20_000:
                line += f"  under 1 s: {'yes' if kernel_s < 1.0 else 'NO'}"
            print(line, flush=True)


if __name__ == "__main__":
    main()
