"""Whether any plan can meet a problem's criteria, and if not, why: checked when loading.

A search over a problem no plan can solve would run to its budget and end
with "NOT feasible" and no reason. This fixed point over the catalog (which
facts can ever be known, from the initial facts, through the tools a plan may
use) finds that at once and names, for each unreachable criterion, what stops
it: no producer at all, a scope not granted, a write with no approval tool
that can run, or an input that itself cannot be reached.
"""

from __future__ import annotations

from evolve.model.problem import Problem, Tool
from evolve.model.validate import approval_rule


def reachable_facts(problem: Problem) -> tuple[set[str], bool]:
    """Every fact some plan can know, and whether an approval task can run at all."""
    known = set(problem.initial)
    approval = False
    tools = [t for t in problem.tools.values() if problem.scope_granted(t.scope)]
    changed = True
    while changed:
        changed = False
        for tool in tools:
            if not all(fact in known for fact in tool.inputs):
                continue
            if tool.risk == "approval" and not approval:
                approval, changed = True, True
            if needs_approval(problem, tool) and not approval:
                continue
            new = [fact for fact in tool.outputs if fact not in known]
            if new:
                known.update(new)
                changed = True
    return known, approval


def needs_approval(problem: Problem, tool: Tool) -> bool:
    """Whether every task of ``tool`` a plan can make needs an approval upstream (the
    validator's own gate: ``write_requires_approval``, or a threshold that can hold)."""
    return approval_rule(problem.policy, tool) is not None


def unreachable_criteria(problem: Problem) -> list[str]:
    """One line per criterion no plan can produce, saying why; empty when all can be met."""
    known, approval = reachable_facts(problem)
    lines = []
    for criterion in problem.criteria:
        if criterion not in known:
            lines.append(f"criterion {criterion!r} cannot be reached: "
                         f"{why_not(problem, criterion, known, approval)}")
    return lines


def why_not(problem: Problem, fact: str, known: set[str], approval: bool,
            depth: int = 0, seen: frozenset[str] = frozenset()) -> str:
    """Why no plan can know ``fact``, following an unreachable input down to what blocks it
    (a few levels, the first producers at each)."""
    producers = [t for t in problem.tools.values() if fact in t.outputs]
    if not producers:
        return "no tool in the catalog produces it"
    shown = 3 if depth == 0 else 2
    reasons = []
    for tool in producers[:shown]:
        if not problem.scope_granted(tool.scope):
            reasons.append(f"{tool.name} needs scope {tool.scope!r}, which is not granted")
            continue
        missing = [i for i in tool.inputs if i not in known]
        if missing:
            need = missing[0]
            if not any(need in t.outputs for t in problem.tools.values()):
                reasons.append(f"{tool.name} needs {need!r}, which no tool produces")
            elif depth < 2 and need not in seen:
                deeper = why_not(problem, need, known, approval, depth + 1, seen | {fact})
                reasons.append(f"{tool.name} needs {need!r}, which cannot be reached ({deeper})")
            else:
                reasons.append(f"{tool.name} needs {need!r}, which cannot be reached")
        elif needs_approval(problem, tool) and not approval:
            has_tool = any(t.risk == "approval" for t in problem.tools.values())
            lack = "no approval tool can run" if has_tool else "the catalog has no approval tool"
            rule = approval_rule(problem.policy, tool)
            reasons.append(f"{tool.name} is a write, which needs an approval (rule {rule}), and {lack}")
    if len(producers) > shown:
        reasons.append(f"and {len(producers) - shown} more producers")
    return "; ".join(reasons)
