"""HTN plans at run time: the world as the run left it, the goal judged there, and replanning
through the HTN planner from that world.

A plan made from an HTN domain is only a linearised decomposition; what makes its run a success
is that the goal holds in the world it leaves, and what a failure leaves is a world from which
the domain's own methods, tried in their order, say what to do next. So:

- :func:`ran_steps` are the done operator steps in an order their deps allow (every conflict
  between two steps is a dep, so every such order replays to the same state);
- :func:`goal_unmet` judges the goal there with :mod:`evolve.problems.htn.world`, a check that
  shares nothing with the planner; the executor counts the goal as met only when it is empty;
- :func:`htn_now` is the world at a replan, :func:`plan_htn` decomposes the goal from it with the
  operators that failed for good (and every method that uses one) removed from the domain, so a
  ladder falls to its next rung; the plan reads the done tasks that wrote what it reads and
  waits for every step already done.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from evolve.model.graph import topological_order
from evolve.model.plan import Plan, parse_ref
from evolve.model.problem import Problem
from evolve.model.status import TaskStatus
from evolve.problems.htn import Domain, HtnProblem, NoPlan, NoPlanError, Planner, to_plan
from evolve.problems.htn.domain import Unknown, Value, truth
from evolve.problems.htn.world import Done, goal_achieves, goal_verdict, replay_state


def domain_of(problem: Problem) -> Domain | None:
    return problem.domain if isinstance(problem, HtnProblem) else None


def planned(problem: HtnProblem) -> Plan:
    """The planner's plan for the domain as it stands (its methods in file order, the domain's
    own priority), every step ``on_failure: replan``: what ``evolve execute DOMAIN`` runs."""
    domain = problem.htn()
    outcome = Planner(domain).plan()
    if isinstance(outcome, NoPlan):
        raise NoPlanError(f"{domain.source}: htn: {outcome}")
    plan = to_plan(domain, outcome)
    return Plan(tasks=tuple(replace(t, on_failure="replan") if t.tool in domain.operators else t
                            for t in plan.tasks))


def state_facts(problem: Problem) -> dict[str, Any]:
    """The values of an HTN plan's initial facts: the domain's state (empty for other problems)."""
    domain = domain_of(problem)
    return {} if domain is None else {k: v for k, v in domain.state.items()}


def ran_steps(domain: Domain, plan: Plan, status: Mapping[str, str],
              outputs: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, Done]]:
    """``(task id, (operator, outputs))`` of every done task that runs an operator, deps first."""
    tasks = plan.by_id()
    return [(tid, (tasks[tid].tool, outputs.get(tid))) for tid in topological_order(plan.dependency_map())
            if status.get(tid) == TaskStatus.DONE and tasks[tid].tool in domain.operators]


def goal_unmet(problem: Problem, plan: Plan, status: Mapping[str, str],
               outputs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Why an HTN plan's goal does not hold in the world its done steps left (empty: it holds, or
    the problem is no HTN domain)."""
    domain = domain_of(problem)
    if domain is None:
        return []
    verdict = goal_verdict(domain, [done for _, done in ran_steps(domain, plan, status, outputs)])
    return [] if verdict.holds else [verdict.reason]


@dataclass(frozen=True)
class HtnNow:
    """The world at a replan: the state the done steps left, the done task that last wrote each
    key in it, the done tasks no other done task follows, and every task id of the live plan."""

    domain: Domain
    state: Mapping[str, Value]
    writers: Mapping[str, str]
    frontier: tuple[str, ...]
    taken: frozenset[str]


def htn_now(problem: Problem, plan: Plan, status: Mapping[str, str],
            outputs: Mapping[str, Mapping[str, Any]]) -> HtnNow | None:
    domain = domain_of(problem)
    if domain is None:
        return None
    steps = ran_steps(domain, plan, status, outputs)
    writers: dict[str, str] = {}
    for tid, (operator, _) in steps:
        effects = domain.operators[operator].effects
        for key in effects.unset:
            writers.pop(key, None)
        writers.update(dict.fromkeys(effects.set, tid))
    done = {tid for tid, _ in steps}
    deps = plan.dependency_map()
    followed = {d for tid in done for d in deps.get(tid, ())}
    return HtnNow(domain=domain, state=replay_state(domain, [d for _, d in steps]), writers=writers,
                  frontier=tuple(tid for tid, _ in steps if tid not in followed),
                  taken=frozenset(plan.by_id()))


def without(domain: Domain, excluded: set[str]) -> tuple[Domain, list[str]]:
    """``domain`` without the ``excluded`` operators and the methods that use one (named)."""
    gone = [m.name for m in domain.methods if any(s in excluded for s in m.subtasks)]
    return replace(domain, operators={n: op for n, op in domain.operators.items() if n not in excluded},
                   methods=tuple(m for m in domain.methods if m.name not in gone)), gone


@dataclass(frozen=True)
class HtnPlan:
    """A plan from the world as it is (in the live plan's terms), or why there is none."""

    plan: Plan | None
    note: str


def plan_htn(now: HtnNow, excluded: set[str], folder: Path) -> HtnPlan:
    """Decompose the goal from ``now.state`` without ``excluded``; the evidence (the world, what
    was removed, the steps or why there are none) is written to ``folder/htn.json``."""
    domain, gone = without(now.domain, excluded)
    state = {k: str(v) if isinstance(v, Unknown) else v for k, v in now.state.items()}
    evidence: dict[str, Any] = {"state": state,
                                "excluded_operators": sorted(excluded & set(now.domain.operators)),
                                "excluded_methods": gone}
    outcome = Planner(domain).plan(state=now.state)
    if isinstance(outcome, NoPlan):
        result = HtnPlan(None, f"the HTN planner found no plan from the world as it is: {outcome}")
    else:
        evidence["steps"] = [s.operator for s in outcome.steps]
        steps_run: list[Done] = [(op, None) for op in evidence["steps"]]
        verdict = goal_verdict(domain, steps_run, now.state)
        achieves = goal_achieves(domain)
        # a goal over a $result value is unknown until the steps run: refused only when false
        refused = not verdict.holds and (
            achieves is None or truth(achieves, replay_state(domain, steps_run, now.state)) is False)
        if refused:
            result = HtnPlan(None, f"the HTN plan from the world as it is fails its goal: {verdict.reason}")
        else:
            steps = " -> ".join(evidence["steps"]) or "no step"
            removed = f" without {', '.join(gone)}" if gone else ""
            result = HtnPlan(in_live_terms(to_plan(domain, outcome), now),
                             f"HTN plan from the world as it is{removed}: {steps}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "htn.json").write_text(json.dumps({**evidence, "note": result.note}, indent=2) + "\n")
    return result


def in_live_terms(plan: Plan, now: HtnNow) -> Plan:
    """Ids apart from the live plan's; a read of a key a done task wrote reads that task; a task
    with no dep waits for every done step (so every order of the deps replays the run as it was);
    every step is ``on_failure: replan``: when it fails for good, the domain's next way is tried,
    until the goal holds or no way is left (``no_plan``)."""
    prefix = "h"
    while any(tid.startswith(prefix) for tid in now.taken):
        prefix += "h"
    ids = {t.id: f"{prefix}{i + 1}" for i, t in enumerate(plan.tasks)}
    tasks = []
    for task in plan.tasks:
        inputs: dict[str, Any] = {}
        deps = [ids[d] for d in task.deps]
        for key, value in task.inputs.items():
            ref = parse_ref(value)
            if ref is not None and ref.task is None and ref.fact in now.writers:
                inputs[key] = f"${now.writers[ref.fact]}.{ref.fact}"
                deps.append(now.writers[ref.fact])
            elif ref is not None and ref.task is not None:
                inputs[key] = f"${ids[ref.task]}.{ref.fact}"
            else:
                inputs[key] = value
        if not task.deps:
            deps.extend(now.frontier)
        policy = "replan" if task.tool in now.domain.operators else task.on_failure
        tasks.append(replace(task, id=ids[task.id], deps=tuple(dict.fromkeys(deps)), inputs=inputs,
                             on_failure=policy))
    return Plan(tasks=tuple(tasks))
