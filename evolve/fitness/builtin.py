"""The built-in objectives. They use exactly the contract, and the discovery path, that plugins use.

The first four are the engine's default objectives. The rest are what people who
run agent plans ask for: what a run costs, how many LLM calls it makes, how many
writes it does without a human or automatic approval before them, and how many
dependencies hold work back without passing it anything.
"""

from __future__ import annotations

from evolve import defaults
from evolve.fitness.base import Context, fitness
from evolve.fitness.compiled import covered_count, makespan_value, measures_of
from evolve.model.coverage import contributing_tasks, data_sources
from evolve.model.plan import Plan, Task
from evolve.model.problem import Problem, Risk, Tool
from evolve.model.validate import approval_edges, approved_tasks, write_order_edges

# Each built-in reads the compiled figures when the context offers them (the engine's
# evaluation always does) and falls back on the plain-Python definition, which is what
# the figures must equal, otherwise.


@fitness(direction="min", low=0)
def validity(problem: Problem, plan: Plan, context: Context) -> float:
    """Number of validator errors (0 means the plan may run)."""
    fast = measures_of(context)
    return float(len(context.errors) if fast is None else fast.errors)


@fitness(direction="max", low=0, high=1)
def completeness(problem: Problem, plan: Plan, context: Context) -> float:
    """Fraction of success criteria produced by sound tasks."""
    if not problem.criteria:
        return 1.0
    return covered_count(problem, plan, context) / len(problem.criteria)


@fitness(direction="max", low=0, high=1)
def minimality(problem: Problem, plan: Plan, context: Context) -> float:
    """Fraction of tasks that serve some criterion (1 for the empty plan)."""
    if not plan.tasks:
        return 1.0
    fast = measures_of(context)
    serving = len(contributing_tasks(problem, plan)) if fast is None else fast.contributing
    return serving / len(plan.tasks)


@fitness(direction="min", low=0)
def makespan(problem: Problem, plan: Plan, context: Context) -> float:
    """Finish time of the last task in the simulated schedule."""
    return makespan_value(context)


@fitness(direction="min", low=0)
def cost(problem: Problem, plan: Plan, context: Context) -> float:
    """Total cost of the tools the plan runs (a task with a condition counts as if it runs)."""
    # A ``when`` task may be skipped at run time, but the plan commits to its
    # cost if it runs; counting it keeps the objective a bound, not a guess.
    fast = measures_of(context)
    if fast is not None and fast.cost is not None:
        return fast.cost
    return sum((tool.cost for tool in task_tools(problem, plan)), 0.0)


@fitness(direction="min", low=0)
def llm_calls(problem: Problem, plan: Plan, context: Context) -> float:
    """Number of LLM calls the plan makes (its tools' llm_calls, summed)."""
    fast = measures_of(context)
    if fast is not None:
        return float(fast.llm_calls)
    return float(sum(tool.llm_calls for tool in task_tools(problem, plan)))


@fitness(direction="min", low=0)
def task_count(problem: Problem, plan: Plan, context: Context) -> float:
    """Number of tasks in the plan: fewer steps to run, watch and get wrong."""
    return float(len(plan.tasks))


@fitness(direction="min", low=0)
def risk(problem: Problem, plan: Plan, context: Context) -> float:
    """Write tasks with no approval task upstream of them."""
    # Counted whatever the problem's policy says: with ``write_requires_approval``
    # the validator already rejects such plans, and without it this objective is
    # how a user can still prefer approved writes.
    approved = approved_tasks(problem, plan.by_id(), plan.dependency_map())
    return float(sum(
        1 for task in plan.tasks if tool_risk(problem, task) == "write" and task.id not in approved
    ))


@fitness(direction="min", low=0)
def redundant_deps(problem: Problem, plan: Plan, context: Context) -> float:
    """Dependencies that carry no data, no approval, no write order and no template constraint."""
    # Such an edge only forces a task to wait for work it does not use, which
    # lengthens the schedule for nothing.
    return float(len(redundant_edges(problem, plan)))


def redundant_edges(problem: Problem, plan: Plan) -> list[tuple[str, str]]:
    """The ``(task, dep)`` edges :func:`redundant_deps` counts: each one can go without making
    the plan invalid (a property test removes them one at a time and asks the validator).

    Edges to missing tasks and self-edges are the validator's business and are not counted.
    An edge that orders two writes of one object (rule ``write-order``), or that an approval
    reaches a write through (rule ``write-approval``), is used: it keeps the plan valid."""
    tasks = plan.by_id()
    approved = approved_tasks(problem, tasks, plan.dependency_map())
    required = template_edges(problem)
    repeated: list[tuple[str, str]] = []  # the same edge twice never carries anything new
    bare: list[tuple[str, str]] = []  # edges that carry no data, approval or template constraint
    for task in plan.tasks:
        reads = set(data_sources(task))
        seen: set[str] = set()
        for dep in task.deps:
            if dep == task.id or dep not in tasks:
                continue
            if dep in seen:
                repeated.append((task.id, dep))
                continue
            seen.add(dep)
            carries_approval = tool_risk(problem, task) == "write" and (
                tool_risk(problem, tasks[dep]) == "approval" or dep in approved
            )
            if dep not in reads and not carries_approval and (task.id, dep) not in required:
                bare.append((task.id, dep))
    used = write_order_edges(problem, plan, bare) | approval_edges(problem, plan, bare) if bare else set()
    return repeated + [edge for edge in bare if edge not in used]


def task_tools(problem: Problem, plan: Plan) -> list[Tool]:
    """The catalog entry of every task whose tool is known, in plan order."""
    return [problem.tools[t.tool] for t in plan.tasks if t.tool in problem.tools]


def tool_risk(problem: Problem, task: Task) -> Risk | None:
    tool = problem.tools.get(task.tool)
    return None if tool is None else tool.risk


def template_edges(problem: Problem) -> set[tuple[str, str]]:
    """``(task, dep)`` pairs a template requires to stay."""
    template = problem.template
    if not isinstance(template, Plan):
        return set()
    return {(t.id, d) for t in template.tasks for d in t.deps}


BUILTINS = (validity, completeness, minimality, makespan, cost, llm_calls, task_count, risk, redundant_deps)
DEFAULT_OBJECTIVES = defaults.DEFAULT_OBJECTIVES
