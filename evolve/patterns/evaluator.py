"""Evaluator-optimizer: propose, evaluate, revise with the feedback, until PASS or ``max_iter``.

A plan is a graph, not a loop, so the loop is the agent's: the first plan is one round
(propose, evaluate, accept), and ``accept`` *assumes* the verdict is PASS. A FAIL makes the
assumption false, the executor replans, and the round planner adds the next round, which reads
the draft and feedback before it. Each round is one revision of the run (journaled, in the
report), and ``max_replans = max_iter - 1`` bounds the loop. Every round has its own facts
(``draft_k``, ``verdict_k``, ``feedback_k``) and its own accept tool, because the executor never
uses a tool whose premise failed again in the same run.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from evolve import defaults
from evolve.agent.planner import History
from evolve.execute.tools import Call, ToolFn
from evolve.patterns.running import PatternResult, run_pattern

Proposer = Callable[[str, "str | None", "str | None"], Any]
"""``proposer(task, previous draft or None, feedback or None)`` -> a draft."""
DraftEvaluator = Callable[[str, Any], Any]
"""``evaluator(task, draft)`` -> ``"PASS"`` / ``"FAIL: why"``, ``(verdict, feedback)`` or
``{"verdict": ..., "feedback": ...}``."""


def read_verdict(answer: Any) -> tuple[str, str | None]:
    """An evaluator's answer as ``(PASS | FAIL, feedback)``: PASS only when its first word is PASS and
    no word is FAIL."""
    if isinstance(answer, Mapping):
        verdict, feedback = answer.get("verdict"), answer.get("feedback")
    elif isinstance(answer, tuple) and len(answer) == 2:
        verdict, feedback = answer
    else:
        verdict = feedback = str(answer)
    words = re.findall(r"[A-Z]+", str(verdict).upper())
    passed = bool(words) and words[0] == "PASS" and "FAIL" not in words  # not "PASSABLE", "PASS/FAIL: FAIL"
    return ("PASS" if passed else "FAIL"), (None if feedback is None else str(feedback))


def round_tasks(k: int) -> list[dict[str, Any]]:
    """Round ``k``'s three steps, reading round ``k - 1``'s draft and feedback."""
    inputs: dict[str, Any] = {"task": "$task"}
    deps: list[str] = []
    if k > 1:
        inputs.update({f"draft_{k - 1}": f"$propose_{k - 1}.draft_{k - 1}",
                       f"feedback_{k - 1}": f"$evaluate_{k - 1}.feedback_{k - 1}"})
        deps = [f"propose_{k - 1}", f"evaluate_{k - 1}"]
    return [
        {"id": f"propose_{k}", "tool": f"eo.propose.{k}", "deps": deps, "inputs": inputs},
        {"id": f"evaluate_{k}", "tool": f"eo.evaluate.{k}", "deps": [f"propose_{k}"],
         "inputs": {"task": "$task", f"draft_{k}": f"$propose_{k}.draft_{k}"}},
        {"id": f"accept_{k}", "tool": f"eo.accept.{k}", "deps": [f"propose_{k}", f"evaluate_{k}"],
         "inputs": {f"draft_{k}": f"$propose_{k}.draft_{k}", f"verdict_{k}": f"$evaluate_{k}.verdict_{k}"},
         "assumes": [f"$evaluate_{k}.verdict_{k} == 'PASS'"]},
    ]


def evaluator_optimizer(
    task: str,
    proposer: Proposer,
    evaluator: DraftEvaluator,
    max_iter: int = defaults.PATTERN_MAX_ITER,
    *,
    out: str | Path | None = None,
) -> PatternResult:
    """Rounds of propose and evaluate until the evaluator says PASS, at most ``max_iter``.

    ``value``: ``{"draft", "passed", "rounds"}``: the passing draft, or the last one when no round
    passed (the run then ends with reason ``replan_budget``: ``max_iter`` rounds spent)."""
    if max_iter < 1:
        raise ValueError(f"evaluator_optimizer: max_iter must be >= 1, got {max_iter}")
    tools: dict[str, ToolFn] = {}
    catalog: dict[str, Any] = {}
    for k in range(1, max_iter + 1):

        def propose(inputs: Mapping[str, Any], call: Call, k: int = k) -> dict[str, Any]:
            previous = inputs.get(f"draft_{k - 1}")
            feedback = inputs.get(f"feedback_{k - 1}")
            return {f"draft_{k}": proposer(str(inputs["task"]), previous, feedback)}

        def evaluate(inputs: Mapping[str, Any], call: Call, k: int = k) -> dict[str, Any]:
            verdict, feedback = read_verdict(evaluator(str(inputs["task"]), inputs[f"draft_{k}"]))
            return {f"verdict_{k}": verdict, f"feedback_{k}": feedback}

        def accept(inputs: Mapping[str, Any], call: Call, k: int = k) -> dict[str, Any]:
            return {"final": {"draft": inputs[f"draft_{k}"], "passed": True, "rounds": k}}

        tools.update({f"eo.propose.{k}": propose, f"eo.evaluate.{k}": evaluate, f"eo.accept.{k}": accept})
        before = [f"draft_{k - 1}", f"feedback_{k - 1}"] if k > 1 else []
        catalog[f"eo.propose.{k}"] = {"duration": 1, "inputs": ["task", *before], "outputs": [f"draft_{k}"]}
        catalog[f"eo.evaluate.{k}"] = {"duration": 1, "inputs": ["task", f"draft_{k}"],
                                       "outputs": [f"verdict_{k}", f"feedback_{k}"]}
        catalog[f"eo.accept.{k}"] = {"duration": 1, "inputs": [f"draft_{k}", f"verdict_{k}"],
                                     "outputs": ["final"]}

    def next_round(goal: str, history: History, last_error: dict[str, Any] | None) -> list[dict[str, Any]]:
        done = sum(1 for step in history if step["id"].startswith("evaluate_"))
        return round_tasks(done + 1) if done < max_iter else []

    problem = {"objective": "evaluator-optimizer", "initial": ["task"], "criteria": ["final"],
               "tools": catalog}
    result = run_pattern(
        "evaluator-optimizer", problem, round_tasks(1), tools, {"task": task}, out, answer="final",
        planner=next_round, max_replans=max_iter - 1, max_steps=4 * max_iter,
    )
    if result.value is not None:
        return result
    drafts = [(int(sid.rsplit("_", 1)[1]), outs) for sid, outs in result.run.outputs.items()
              if sid.startswith("propose_")]
    if not drafts:
        return result
    rounds, last = max(drafts, key=lambda item: item[0])
    value = {"draft": last[f"draft_{rounds}"], "passed": False, "rounds": rounds}
    message = f"no PASS in {rounds} round(s) of {max_iter}; {result.message}"
    return PatternResult(result.pattern, value, result.status, result.reason, message, result.run)
