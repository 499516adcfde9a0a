"""Throughput of the default objectives on one core, and how it scales with the plan's size.

For generated problems of about 100, 300, 1000 and 3000 facts, a set of distinct
complete plans (backward chaining from different random streams) is scored with
:func:`evolve.fitness.evaluation.evaluate_plan` exactly as the engine scores a
candidate, one plan after the other in this process. Printed: plans/s, the mean
tasks per plan and plans/s x tasks (flat across sizes when the cost per plan is
linear in the plan), for two cases:

* ``cold``: every task object is new (each pass scores fresh deep copies), so
  nothing of an earlier evaluation is reused: the worst case;
* ``warm``: the same plan objects again, as a search sees them: a child shares
  all but the few task objects an operator replaced with its parent, and the
  compiled path keeps what it derived from each task object.

Then the time of each stage on its own: the plain-Python validator, coverage
(sound tasks and covered criteria, validation included), minimality
(contributing tasks), the compiled figures (all of those in one kernel, cold
and warm) and the schedule. Usage::

    python benchmarks/eval_throughput.py [--facts 100 300 1000 3000] [--plans 100] [--seconds 2]
    python benchmarks/eval_throughput.py --facts 300 --profile    # cProfile of the 300-fact case
    python benchmarks/eval_throughput.py --objectives validity completeness minimality
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import pstats
import time
from collections.abc import Callable, Sequence

import numpy as np

from evolve.fitness.base import Fitness
from evolve.fitness.builtin import DEFAULT_OBJECTIVES
from evolve.fitness.compiled import CompiledContext
from evolve.fitness.evaluation import evaluate_plan
from evolve.fitness.registry import resolve_all
from evolve.model.coverage import contributing_tasks, covered_criteria
from evolve.model.plan import Plan, plan_hash
from evolve.model.problem import Problem
from evolve.model.validate import validate
from evolve.problems.synthetic import generate_problem
from evolve.scheduling import schedule
from evolve.search.chaining import construct

FACTS_PER_TOOL = 0.51
"""About how many facts :func:`generate_problem` makes per tool (measured; the count printed is exact)."""


def fact_count(problem: Problem) -> int:
    facts = set(problem.initial) | set(problem.criteria)
    for tool in problem.tools.values():
        facts.update(tool.inputs)
        facts.update(tool.outputs)
    return len(facts)


def distinct_plans(problem: Problem, count: int, seed: int) -> list[Plan]:
    """Up to ``count`` distinct complete plans, one random stream each."""
    seen: dict[str, Plan] = {}
    for k in range(count * 3):
        plan = construct(problem, np.random.default_rng(seed + k))
        seen.setdefault(plan_hash(plan), plan)
        if len(seen) == count:
            break
    return list(seen.values())


def timed(fn: Callable[[Plan], object], plans: Sequence[Plan], seconds: float, cold: bool) -> float:
    """Seconds per plan, best pass of those that fit in ``seconds`` (at least two). ``cold``
    scores fresh deep copies on each pass (made outside the timing)."""
    best = float("inf")
    began = time.perf_counter()
    passes = 0
    while passes < 2 or time.perf_counter() - began < seconds:
        batch = copy.deepcopy(list(plans)) if cold else plans
        t = time.perf_counter()
        for plan in batch:
            fn(plan)
        best = min(best, (time.perf_counter() - t) / len(batch))
        passes += 1
    return best


def stages(problem: Problem) -> dict[str, tuple[Callable[[Plan], object], bool]]:
    """Each stage of an evaluation on its own, on a fresh context, and whether to time it cold."""
    def coverage(plan: Plan) -> object:
        return covered_criteria(problem, plan, validate(problem, plan))

    def compiled(plan: Plan) -> object:
        return CompiledContext(problem, plan).measures

    return {
        "py-validate": (lambda plan: validate(problem, plan), False),
        "py-coverage": (coverage, False),
        "py-minimality": (lambda plan: contributing_tasks(problem, plan), False),
        "compiled-cold": (compiled, True),
        "compiled-warm": (compiled, False),
        "schedule": (lambda plan: schedule(problem, plan), False),
    }


def run_size(facts: int, plans_wanted: int, seconds: float, seed: int,
             fitnesses: Sequence[Fitness], breakdown: bool) -> None:
    problem = generate_problem(max(4, round(facts / FACTS_PER_TOOL)), seed)
    plans = distinct_plans(problem, plans_wanted, seed)
    tasks = float(np.mean([len(p) for p in plans]))
    for plan in plans[:3]:  # warm-up: kernels loaded, per-problem tables built
        evaluate_plan(problem, plan, fitnesses)
    line = f"facts {fact_count(problem):5d}  tools {len(problem.tools):5d}  plans {len(plans):4d}  " \
           f"tasks/plan {tasks:6.1f}"
    for label, cold in (("cold", True), ("warm", False)):
        per_plan = timed(lambda plan: evaluate_plan(problem, plan, fitnesses), plans, seconds, cold)
        line += f"  | {label}: plans/s {1 / per_plan:8.1f}  x tasks {tasks / per_plan:9.0f}"
    print(line)
    if breakdown:
        parts = "  ".join(f"{name} {timed(fn, plans, seconds / 4, cold) * 1e6:7.1f}"
                          for name, (fn, cold) in stages(problem).items())
        print(f"    us/plan: {parts}")


def profile(facts: int, plans_wanted: int, seed: int, fitnesses: Sequence[Fitness]) -> None:
    problem = generate_problem(max(4, round(facts / FACTS_PER_TOOL)), seed)
    plans = distinct_plans(problem, plans_wanted, seed)
    for plan in plans:
        evaluate_plan(problem, plan, fitnesses)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(3):
        for plan in plans:
            evaluate_plan(problem, plan, fitnesses)
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--facts", type=int, nargs="*", default=[100, 300, 1000, 3000])
    ap.add_argument("--plans", type=int, default=100, help="distinct plans per size")
    ap.add_argument("--seconds", type=float, default=2.0, help="measuring time per size and case")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-breakdown", action="store_true", help="skip the per-stage timings")
    ap.add_argument("--profile", action="store_true", help="cProfile the first size (warm) instead")
    ap.add_argument("--objectives", nargs="*", default=list(DEFAULT_OBJECTIVES),
                    help="objectives to score (default: the engine's defaults)")
    args = ap.parse_args()
    fitnesses = resolve_all(args.objectives)
    if args.profile:
        profile(args.facts[0], args.plans, args.seed, fitnesses)
        return
    print(f"objectives: {', '.join(args.objectives)}; one core, in process")
    for facts in args.facts:
        run_size(facts, args.plans, args.seconds, args.seed, fitnesses, not args.no_breakdown)


if __name__ == "__main__":
    main()
