"""Four of the five workflow patterns as functions: chaining, routing, voting, orchestrator-workers.

Each is a fixed plan (the steps are known in advance, which is what makes it a workflow and
not an agent) run through the durable executor; the model calls are its tools. The fifth,
evaluator-optimizer, loops, so it lives in :mod:`evolve.patterns.evaluator`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.execute.tools import Call, ToolFailure, ToolFn
from evolve.patterns.running import Completes, Model, PatternResult, as_model, check_names, run_pattern

Step = str | Callable[[str], str]
"""A chain step: a prompt template (``{input}`` is the previous output; without it the output is
appended) for the model, or a plain function of the text (a gate that raises to stop the chain)."""

HUMAN = "human.escalate"
"""The tool a person owns (``by: human``) that an unhandled route label goes to: they answer."""


def fill(template: str, text: str) -> str:
    return template.replace("{input}", text) if "{input}" in template else f"{template}\n\n{text}"


def prompt_chain(
    input_text: str, llm: Model | Completes, steps: Sequence[Step], *, out: str | Path | None = None
) -> PatternResult:
    """Output N is input N+1: one task per step, each reading the one before."""
    if not steps:
        raise ValueError("prompt_chain: give at least one step")
    model = as_model(llm)
    tools: dict[str, ToolFn] = {}
    catalog: dict[str, Any] = {}
    tasks = []
    for k, step in enumerate(steps, 1):
        before, after = f"text{k - 1}" if k > 1 else "input", f"text{k}"

        def run(inputs: Mapping[str, Any], call: Call, step: Step = step, before: str = before,
                after: str = after) -> dict[str, Any]:
            text = str(inputs.get(before) or "")
            return {after: step(text) if callable(step) else model(fill(step, text))}

        name = f"chain.step{k}"
        tools[name] = run
        catalog[name] = {"duration": 1, "inputs": [before], "outputs": [after],
                         "description": "a plain function" if callable(step) else "a model call"}
        ref = f"$step{k - 1}.{before}" if k > 1 else "$input"
        tasks.append({"id": f"step{k}", "tool": name, "deps": [f"step{k - 1}"] if k > 1 else [],
                      "inputs": {before: ref}})
    last = f"text{len(steps)}"
    problem = {"objective": "prompt chaining", "initial": ["input"], "criteria": [last], "tools": catalog}
    return run_pattern("prompt-chain", problem, tasks, tools, {"input": input_text}, out, answer=last)


def route(
    input_text: str,
    classifier: Callable[[str], Any],
    handlers: Mapping[str, Callable[[str], Any]],
    *,
    out: str | Path | None = None,
) -> PatternResult:
    """Classify, then dispatch to the handler of the label; an unknown label goes to
    ``handlers["default"]``, and without one to a task a person owns, "escalate to human" (``by:
    human``): the run waits (status ``waiting``, reason ``awaiting_human``) until a person gives
    the reply (``evolve answer OUT escalate --output '{"reply": ...}'``), and calling ``route``
    again with the same ``out`` then ends with that reply."""
    labels = [k for k in handlers if k != "default"]
    check_names("route: handler label", list(handlers))
    tools: dict[str, ToolFn] = {
        "route.classify": lambda inputs, call: {"label": str(classifier(str(inputs["input"]))).strip()}
    }
    catalog: dict[str, Any] = {
        "route.classify": {"duration": 1, "inputs": ["input"], "outputs": ["label"]},
    }
    tasks: list[dict[str, Any]] = [
        {"id": "classify", "tool": "route.classify", "inputs": {"input": "$input"}}
    ]

    def handle(fn: Callable[[str], Any]) -> ToolFn:
        return lambda inputs, call: {"reply": fn(str(inputs["input"]))}

    for label in labels:
        tools[f"route.{label}"] = handle(handlers[label])
        catalog[f"route.{label}"] = {"duration": 1, "inputs": ["input", "label"], "outputs": ["reply"]}
        tasks.append({"id": f"handle_{label}", "tool": f"route.{label}", "deps": ["classify"],
                      "inputs": {"input": "$input", "label": "$classify.label"},
                      "when": f"$classify.label == '{label}'"})
    unknown = "$classify.label not in [" + ", ".join(f"'{label}'" for label in labels) + "]"
    fallback: dict[str, Any] = {
        "deps": ["classify"], "inputs": {"input": "$input", "label": "$classify.label"}
    }
    if labels:
        fallback["when"] = unknown
    if "default" in handlers:
        tools["route.default"] = handle(handlers["default"])
        catalog["route.default"] = {"duration": 1, "inputs": ["input", "label"], "outputs": ["reply"]}
        tasks.append({"id": "handle_default", "tool": "route.default", **fallback})
    else:
        catalog[HUMAN] = {"duration": 1, "inputs": ["input", "label"], "outputs": ["reply"],
                          "by": "human", "description": "escalate to human"}  # no callable: a person
        tasks.append({"id": "escalate", "tool": HUMAN, **fallback})
    problem = {"objective": "routing", "initial": ["input"], "criteria": ["reply"], "tools": catalog}
    return run_pattern(
        "route", problem, tasks, tools, {"input": input_text}, out, answer="reply", human=HUMAN
    )


def majority(ballots: Sequence[str]) -> dict[str, Any]:
    """The most common answer (a tie goes to the one given first) and its count."""
    counts = Counter(ballots)
    top = max(counts.values())
    winner = next(b for b in ballots if counts[b] == top)
    return {"answer": winner, "votes": top, "of": len(ballots)}


def parallel_vote(
    prompt: str, llm: Model | Completes, n: int = defaults.PATTERN_VOTERS, *, out: str | Path | None = None
) -> PatternResult:
    """``n`` samples of the same prompt at once, then a majority vote of their answers."""
    if n < 1:
        raise ValueError(f"parallel_vote: n must be >= 1, got {n}")
    model = as_model(llm)
    keys = ["answer"] + [f"answer_{k}" for k in range(2, n + 1)]

    def sample(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        return {"answer": model(str(inputs["prompt"]))}

    def vote(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        return {"verdict": majority([str(inputs[k]).strip() for k in keys])}

    tools: dict[str, ToolFn] = {"vote.sample": sample, "vote.majority": vote}
    catalog = {
        "vote.sample": {"duration": 1, "inputs": ["prompt"], "outputs": ["answer"]},
        "vote.majority": {"duration": 1, "inputs": ["answer"], "outputs": ["verdict"]},
    }
    tasks: list[dict[str, Any]] = [
        {"id": f"sample{k}", "tool": "vote.sample", "inputs": {"prompt": "$prompt", "sample": k}}
        for k in range(1, n + 1)
    ]
    tasks.append({"id": "vote", "tool": "vote.majority", "deps": [f"sample{k}" for k in range(1, n + 1)],
                  "inputs": {key: f"$sample{k}.answer" for k, key in enumerate(keys, 1)}})
    problem = {"objective": "parallel vote", "initial": ["prompt"], "criteria": ["verdict"],
               "limits": {"max_parallel": n}, "tools": catalog}
    return run_pattern("parallel-vote", problem, tasks, tools, {"prompt": prompt}, out, answer="verdict")


Orchestrator = Callable[[str, list[str]], Sequence[str] | Mapping[str, str]]
"""``orchestrator(task, worker names)`` -> the workers to use (or worker -> its subtask)."""


def orchestrator_workers(
    task: str,
    workers: Mapping[str, Callable[[str], Any]],
    synth: Callable[[str, dict[str, Any]], Any],
    *,
    orchestrator: Orchestrator | None = None,
    out: str | Path | None = None,
) -> PatternResult:
    """The orchestrator picks the specialists (default: every worker, each given the task), the
    picked workers run at once, and ``synth(task, {worker: result})`` joins what they made."""
    names = list(workers)
    if not names:
        raise ValueError("orchestrator_workers: give at least one worker")
    check_names("orchestrator_workers: worker", names)

    def orchestrate(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        text = str(inputs["task"])
        picked = orchestrator(text, list(names)) if orchestrator is not None else names
        subtasks = dict(picked) if isinstance(picked, Mapping) else {name: text for name in picked}
        unknown = sorted(set(subtasks) - set(names))
        if unknown:
            raise ToolFailure(f"the orchestrator picked unknown workers: {', '.join(unknown)}")
        return {"subtasks": subtasks}

    def work(name: str) -> ToolFn:
        return lambda inputs, call: {f"result_{name}": workers[name](str(inputs["subtasks"][name]))}

    def join(inputs: Mapping[str, Any], call: Call) -> dict[str, Any]:
        results = {n: inputs[f"result_{n}"] for n in names if inputs.get(f"result_{n}") is not None}
        return {"report": synth(str(inputs["task"]), results)}

    tools: dict[str, ToolFn] = {"orchestrate": orchestrate, "synthesize": join}
    catalog: dict[str, Any] = {
        "orchestrate": {"duration": 1, "inputs": ["task"], "outputs": ["subtasks"]},
        "synthesize": {"duration": 1, "inputs": ["task", *(f"result_{n}" for n in names)],
                       "outputs": ["report"]},
    }
    tasks: list[dict[str, Any]] = [{"id": "orchestrate", "tool": "orchestrate", "inputs": {"task": "$task"}}]
    for name in names:
        tools[f"worker.{name}"] = work(name)
        catalog[f"worker.{name}"] = {"duration": 1, "inputs": ["subtasks"], "outputs": [f"result_{name}"]}
        tasks.append({"id": f"worker_{name}", "tool": f"worker.{name}", "deps": ["orchestrate"],
                      "inputs": {"subtasks": "$orchestrate.subtasks"},
                      "when": f"'{name}' in $orchestrate.subtasks"})
    tasks.append({"id": "synthesize", "tool": "synthesize", "deps": [f"worker_{n}" for n in names],
                  "inputs": {"task": "$task", **{f"result_{n}": f"$worker_{n}.result_{n}" for n in names}}})
    problem = {"objective": "orchestrator-workers", "initial": ["task"], "criteria": ["report"],
               "limits": {"max_parallel": len(names)}, "tools": catalog}
    return run_pattern("orchestrator-workers", problem, tasks, tools, {"task": task}, out, answer="report")
