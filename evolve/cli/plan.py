"""``evolve plan``: a first plan from a goal; the model drafts it, the search may only improve it.

With ``--llm-base-url`` and ``--llm-model`` the model is asked for a whole plan in the typed
schema. Its plan is checked (the validator, and some sound task for every criterion), and a
rejected plan goes back to it with the errors, up to ``--attempts`` answers. The plan that
passes joins the search's first population as a seed, so the best plan the search returns is
never worse than the model's. Without a model, or when no answer passed, the search runs alone.
Exit status 0 when the best plan is feasible, 1 when not, 2 for bad input.
"""

from __future__ import annotations

import json
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import click

from evolve import defaults
from evolve.agent.planner import draft, plan_errors
from evolve.cli.common import EXIT_NO, EXIT_OK, FiniteFloatRange, friendly, runs_root
from evolve.llm.client import ChatClient
from evolve.llm.draft import LLMPlanner
from evolve.llm.factory import api_key_from_env
from evolve.model.collector import settle_for_one_search
from evolve.model.plan import Plan
from evolve.model.problem import Problem
from evolve.problems import load_problem
from evolve.run.folder import dump_json, run_search
from evolve.run.location import new_run_dir
from evolve.scheduling import schedule
from evolve.search.options import SearchOptions


def describe(problem: Problem, plan: Plan) -> dict[str, Any]:
    return {"tasks": len(plan.tasks), "makespan": schedule(problem, plan).makespan}


@click.command(name="plan")
@click.option("--problem", "problem_file", required=True, type=click.Path(dir_okay=False),
              help="The problem to plan for.")
@click.option("--goal", default=None, help="The goal in words, for the model (default: make the criteria).")
@click.option("--llm-base-url", default=None,
              help="An OpenAI-compatible endpoint that drafts the first plan.")
@click.option("--llm-model", default=None, help="The model name at --llm-base-url.")
@click.option("--attempts", type=click.IntRange(min=1), default=defaults.AGENT_PLAN_ATTEMPTS,
              show_default=True, help="Answers the model may give before the search goes on alone.")
@click.option("--generations", type=click.IntRange(min=0), default=defaults.GENERATIONS, show_default=True)
@click.option("--seed", type=click.IntRange(min=0), default=defaults.SEED, show_default=True)
@click.option("--timeout", type=FiniteFloatRange(min=0, min_open=True), default=defaults.LLM_TIMEOUT,
              show_default=True, help="Seconds one model call may take.")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default=None,
              help="Run folder (default: a new folder under runs/).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@friendly
def plan(problem_file: str, goal: str | None, llm_base_url: str | None, llm_model: str | None,
         attempts: int, generations: int, seed: int, timeout: float, out_dir: str | None,
         as_json: bool) -> None:
    """Search PROBLEM for the best plan, starting from a plan the model drafts for the goal."""
    if (llm_base_url is None) != (llm_model is None):
        raise click.UsageError("give both --llm-base-url and --llm-model (or neither: the search alone)")
    problem = load_problem(problem_file)
    settle_for_one_search()
    text = goal if goal is not None else "make " + ", ".join(problem.criteria)
    folder = Path(out_dir) if out_dir is not None else new_run_dir(runs_root())
    drafted: dict[str, Any] = {"asked": 0, "plan": None, "errors": []}
    seeds: tuple[Plan, ...] = ()
    with ExitStack() as stack:
        if llm_base_url is not None and llm_model is not None:
            client = stack.enter_context(ChatClient(llm_base_url, llm_model, api_key=api_key_from_env(),
                                                    timeout=timeout))
            answer = draft(LLMPlanner(client, problem, seed=seed), text, [], None,
                           lambda p: plan_errors(problem, p, problem.tools), attempts, "the model")
            drafted = {"asked": answer.asked, "plan": None, "errors": list(answer.errors)}
            if answer.plan is not None:
                seeds = (answer.plan,)
                drafted["plan"] = describe(problem, answer.plan)
    outcome = run_search(problem, options=SearchOptions(generations=generations, seed=seed),
                         out_dir=folder, overwrite=out_dir is not None, seeds=seeds)
    if seeds:
        (folder / "seed.json").write_text(dump_json(seeds[0].to_dict()))
    best = outcome.result.best
    result: dict[str, Any] = {
        "draft": drafted,
        "best": {**describe(problem, best.plan), "feasible": best.evaluation.feasible,
                 "operator": best.operator, "generation": best.generation},
        "out": str(folder),
    }
    if as_json:
        click.echo(json.dumps(result, indent=2, default=str))
    else:
        if llm_base_url is not None:
            if seeds:
                click.echo(f"the model's plan (after {drafted['asked']} answer(s)): "
                           f"{drafted['plan']['tasks']} tasks, makespan {drafted['plan']['makespan']:g}")
            else:
                click.echo(f"the model gave no valid plan in {drafted['asked']} answer(s) "
                           f"({drafted['errors'][0] if drafted['errors'] else 'none'}); the search alone")
        b = result["best"]
        click.echo(f"best plan: {b['tasks']} tasks, makespan {b['makespan']:g}, "
                   f"{'feasible' if b['feasible'] else 'NOT feasible'} "
                   f"(generation {b['generation']}, {b['operator']})")
        click.echo(f"written to {folder}/ (best.json{', seed.json' if seeds else ''}, summary.json)")
    sys.exit(EXIT_OK if best.evaluation.feasible else EXIT_NO)


COMMANDS = (plan,)
