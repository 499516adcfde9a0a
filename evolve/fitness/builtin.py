"""The built-in objectives. They use exactly the contract, and the discovery path, that plugins use.

The first four are the engine's default objectives. The rest are what people who
run agent plans ask for: what a run costs, how many LLM calls it makes, how many
writes it does without a human or automatic approval before them, and how many
dependencies hold work back without passing it anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evolve.fitness.base import Context, fitness
from evolve.model.coverage import contributing_tasks, covered_criteria, data_sources
from evolve.model.graph import upstream
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem, Risk, Tool


@fitness(direction="min", low=0)
def validity(problem: Problem, plan: Plan, context: Context) -> float:
    """Number of validator errors (0 means the plan may run)."""
    return float(len(context.errors))


@fitness(direction="max", low=0, high=1)
def completeness(problem: Problem, plan: Plan, context: Context) -> float:
    """Fraction of success criteria produced by sound tasks."""
    if not problem.criteria:
        return 1.0
    return len(covered_criteria(problem, plan, context.errors)) / len(problem.criteria)


@fitness(direction="max", low=0, high=1)
def minimality(problem: Problem, plan: Plan, context: Context) -> float:
    """Fraction of tasks that serve some criterion (1 for the empty plan)."""
    if not plan.tasks:
        return 1.0
    return len(contributing_tasks(problem, plan)) / len(plan.tasks)


@fitness(direction="min", low=0)
def makespan(problem: Problem, plan: Plan, context: Context) -> float:
    """Finish time of the last task in the simulated schedule."""
    return context.schedule.makespan


@fitness(direction="min", low=0)
def cost(problem: Problem, plan: Plan, context: Context) -> float:
    """Total cost of the tools the plan runs (a task with a condition counts as if it runs)."""
    # A ``when`` task may be skipped at run time, but the plan commits to its
    # cost if it runs; counting it keeps the objective a bound, not a guess.
    return sum((tool.cost for tool in task_tools(problem, plan)), 0.0)


@fitness(direction="min", low=0)
def llm_calls(problem: Problem, plan: Plan, context: Context) -> float:
    """Number of LLM calls the plan makes (its tools' llm_calls, summed)."""
    return float(sum(tool.llm_calls for tool in task_tools(problem, plan)))


@fitness(direction="min", low=0)
def risk(problem: Problem, plan: Plan, context: Context) -> float:
    """Write tasks with no approval task upstream of them."""
    # Counted whatever the problem's policy says: with ``write_requires_approval``
    # the validator already rejects such plans, and without it this objective is
    # how a user can still prefer approved writes.
    tasks = plan.by_id()
    deps = dependency_map(plan)
    return float(sum(
        1 for task in plan.tasks
        if tool_risk(problem, task) == "write" and not approved(problem, tasks, deps, task.id)
    ))


@fitness(direction="min", low=0)
def redundant_deps(problem: Problem, plan: Plan, context: Context) -> float:
    """Dependencies that carry no data, no approval and no template constraint."""
    # Such an edge only forces a task to wait for work it does not use, which
    # lengthens the schedule for nothing. Edges to missing tasks and self-edges
    # are the validator's business and are not counted here.
    tasks = plan.by_id()
    deps = dependency_map(plan)
    required = template_edges(problem)
    count = 0
    for task in plan.tasks:
        reads = set(data_sources(task))
        seen: set[str] = set()
        for dep in task.deps:
            if dep == task.id or dep not in tasks:
                continue
            if dep in seen:
                count += 1  # the same edge twice never carries anything new
                continue
            seen.add(dep)
            carries_approval = tool_risk(problem, task) == "write" and (
                tool_risk(problem, tasks[dep]) == "approval" or approved(problem, tasks, deps, dep)
            )
            if dep not in reads and not carries_approval and (task.id, dep) not in required:
                count += 1
    return float(count)


def task_tools(problem: Problem, plan: Plan) -> list[Tool]:
    """The catalog entry of every task whose tool is known, in plan order."""
    return [problem.tools[t.tool] for t in plan.tasks if t.tool in problem.tools]


def tool_risk(problem: Problem, task: Task) -> Risk | None:
    tool = problem.tools.get(task.tool)
    return None if tool is None else tool.risk


def dependency_map(plan: Plan) -> dict[str, list[str]]:
    """``{task: [deps that exist]}``, the shape :mod:`evolve.model.graph` works on."""
    tasks = plan.by_id()
    return {tid: [d for d in t.deps if d in tasks and d != tid] for tid, t in tasks.items()}


def approved(problem: Problem, tasks: Mapping[str, Task], deps: Mapping[str, Sequence[str]],
             tid: str) -> bool:
    """Whether some approval task is upstream of ``tid`` (the same test as the validator's)."""
    return any(tool_risk(problem, tasks[up]) == "approval" for up in upstream(tid, deps))


def template_edges(problem: Problem) -> set[tuple[str, str]]:
    """``(task, dep)`` pairs a template requires to stay."""
    template = problem.template
    if not isinstance(template, Plan):
        return set()
    return {(t.id, d) for t in template.tasks for d in t.deps}


BUILTINS = (validity, completeness, minimality, makespan, cost, llm_calls, risk, redundant_deps)
DEFAULT_OBJECTIVES = ("validity", "completeness", "makespan", "minimality")
