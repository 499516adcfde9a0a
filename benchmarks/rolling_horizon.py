"""A rolling horizon against the fixed plan, on a world whose outputs are known only at run time.

Two reports to write, ``report_a`` and ``report_b``. For each, a lookup in a cache (1 unit) and
a render from the cached data (2 units) is cheaper than computing the data afresh (8 units) and
rendering that (1 unit), so the search's plan looks both up. At run time the cache holds ``a``
but not ``b``: ``lookup_b`` returns ``cached_b: null``, and ``render_cached_b`` fails on it
("nothing cached", not retryable). Nobody could tell before the run.

Four runs of the same first plan (the search's, as ``evolve run`` makes it) on the same
scripted tools, on the virtual clock (each call takes its catalog duration; the search's own
time is not counted):

* ``fixed``: the plan as the search made it (``on_failure`` not set: a failure ends the run);
* ``fixed+replan``: every task ``on_failure: replan`` (the executor's reactive replanning: the
  cache miss surfaces when ``render_cached_b`` fails, after its 2 units);
* ``horizon K``: ``ExecuteOptions(horizon=K)``: after each K committed tasks the rest is planned
  again from what they made (the miss is seen as soon as ``lookup_b`` returns).

The goal is judged by the executor's verdict in every run (every criterion made by a done
task). Makespans are printed with their ratio to the ``fixed+replan`` run of the same
invocation (the fixed plan without replanning misses the goal, so it has no makespan to compare).

Usage::

    nice -n 10 python benchmarks/rolling_horizon.py [--horizons 1 2 3] [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from evolve.execute import ExecuteOptions, start_run
from evolve.execute.dispatch import Clock, Dispatcher, SimulatedDispatcher, VirtualClock, WallClock
from evolve.execute.replan import SearchReplanner
from evolve.execute.tools import Call, ToolFailure, ToolFn
from evolve.model.plan import Plan
from evolve.model.problem import Problem, Tool
from evolve.run.folder import run_search
from evolve.search.options import SearchOptions

HIT = {"a": "cached figures for a"}
"""What the cache holds at run time (``b`` is a miss)."""


def problem() -> Problem:
    tools: dict[str, Tool] = {}
    for item in ("a", "b"):
        tools[f"lookup_{item}"] = Tool(f"lookup_{item}", 1.0, ("query",), (f"cached_{item}",))
        tools[f"compute_{item}"] = Tool(f"compute_{item}", 8.0, ("query",), (f"fresh_{item}",))
        tools[f"render_cached_{item}"] = Tool(
            f"render_cached_{item}", 2.0, (f"cached_{item}",), (f"report_{item}",)
        )
        tools[f"render_fresh_{item}"] = Tool(
            f"render_fresh_{item}", 1.0, (f"fresh_{item}",), (f"report_{item}",)
        )
    return Problem(tools=tools, initial=("query",), criteria=("report_a", "report_b"), name="cache_miss")


def scripted_tools() -> dict[str, ToolFn]:
    """The world: the cache holds :data:`HIT`; a render from a missing entry fails for good."""
    table: dict[str, ToolFn] = {}
    for item in ("a", "b"):
        table[f"lookup_{item}"] = lookup(item)
        table[f"compute_{item}"] = output(f"fresh_{item}", f"computed {item}")
        table[f"render_cached_{item}"] = render(f"cached_{item}", f"report_{item}")
        table[f"render_fresh_{item}"] = render(f"fresh_{item}", f"report_{item}")
    return table


def lookup(item: str) -> ToolFn:
    def fn(inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        return {f"cached_{item}": HIT.get(item)}

    return fn


def output(fact: str, value: str) -> ToolFn:
    def fn(inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        return {fact: value}

    return fn


def render(source: str, fact: str) -> ToolFn:
    def fn(inputs: Mapping[str, Any], call: Call) -> Mapping[str, Any]:
        if inputs.get(source) is None:
            raise ToolFailure(f"nothing in {source}")
        return {fact: f"report from {inputs[source]}"}

    return fn


def virtual(clock: Clock) -> Dispatcher:
    """Real (scripted) tools on the virtual clock: each call takes its catalog duration."""
    return SimulatedDispatcher(VirtualClock(clock.offset if isinstance(clock, WallClock) else clock.now()))


def first_plan(prob: Problem, folder: Path, seed: int) -> Plan:
    """The search's plan for the problem, as ``evolve run`` makes it."""
    outcome = run_search(prob, options=SearchOptions(seed=seed, jobs=1), out_dir=folder)
    return outcome.result.best.plan


def run(prob: Problem, plan: Plan, out: Path, horizon: int | None, seed: int) -> dict[str, Any]:
    executor = start_run(
        prob,
        plan,
        out,
        plan_source="the search",
        tools_spec=None,
        tools=scripted_tools(),
        options=ExecuteOptions(horizon=horizon, seed=seed, max_replans=8, max_steps=20),
        replanner=SearchReplanner(),
        dispatcher=virtual,
    )
    return executor.run()


def scenario(root: Path, horizons: tuple[int, ...], seed: int) -> list[dict[str, Any]]:
    """Every run of the scenario: its name, verdict, makespan (virtual units), calls, replans."""
    prob = problem()
    plan = first_plan(prob, root / "plan", seed)
    replanning = Plan(tasks=tuple(replace(t, on_failure="replan") for t in plan.tasks))
    runs: list[tuple[str, Plan, int | None]] = [("fixed", plan, None), ("fixed+replan", replanning, None)]
    runs += [(f"horizon {k}", plan, k) for k in horizons]
    rows = []
    for name, given, k in runs:
        outcome = run(prob, given, root / name.replace(" ", "_").replace("+", "_"), k, seed)
        rows.append(
            {
                "run": name,
                "reason": outcome["reason"],
                "goal_met": outcome["reason"] == "goal_met",
                "makespan": outcome["elapsed"],
                "calls": outcome["calls"],
                "replans": outcome["replans"],
                "first_plan": sorted(t.tool for t in plan.tasks),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--horizons", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = scenario(Path(tmp), tuple(args.horizons), args.seed)
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(f"first plan (the search's): {', '.join(rows[0]['first_plan'])}")
    base = next(r for r in rows if r["run"] == "fixed+replan")
    print(
        f"{'run':<14} {'reason':<12} {'goal':<5} {'makespan':>8} {'vs fixed+replan':>16} "
        f"{'calls':>6} {'replans':>8}"
    )
    for row in rows:
        ratio = f"{row['makespan'] / base['makespan']:.2f}x" if row["goal_met"] and base["goal_met"] else "-"
        makespan = f"{row['makespan']:g}" if row["goal_met"] else "-"
        print(
            f"{row['run']:<14} {row['reason']:<12} {'met' if row['goal_met'] else 'no':<5} {makespan:>8} "
            f"{ratio:>16} {row['calls']:>6} {row['replans']:>8}"
        )


if __name__ == "__main__":
    main()
