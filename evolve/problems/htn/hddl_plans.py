"""A grounded HDDL problem's plans in the competition's terms: the IPC plan format its
verifiers read, and the action graph :func:`evolve.problems.htn.hddl_verify.check_graph` checks.

Kept apart from the grounder (:mod:`evolve.problems.htn.hddl`): these read what it made, to
hand a plan to a checker that shares nothing with the planner.
"""

from __future__ import annotations

from collections.abc import Sequence

from evolve.model.plan import Plan
from evolve.problems.htn.decomposition import Decomposition
from evolve.problems.htn.domain import Domain
from evolve.problems.htn.hddl import GOAL_OPERATOR, ROOT_TASK, VARIANT, split_name
from evolve.problems.htn.hddl_split import is_part
from evolve.problems.htn.planner import Guide
from evolve.problems.htn.problem import GOAL_TASK


def ipc_plan(domain: Domain, decomposition: Decomposition) -> str:
    """The decomposition in the competition's plan format (what its verifiers read): the
    actions in order, ``root`` and the initial network's tasks, then each decomposition as
    ``id task args -> method subtask-ids``. The goal step and the tasks that pick a
    conditional action's variant are the grounder's, not the domain's: they are left out, and
    so are the tasks :mod:`~evolve.problems.htn.hddl_split` made (a split subtask's own
    decomposition is its method's child)."""
    ids: dict[str, int] = {}
    actions: list[str] = []
    for step in decomposition.steps:
        if step.operator == GOAL_OPERATOR:
            continue
        name = step.operator.split(VARIANT)[0]
        path = step.path.rsplit("/", 1)[0] if VARIANT in step.operator else step.path
        ids[path] = len(ids)
        head, args = split_name(name)
        actions.append(" ".join((str(ids[path]), head, *args)))
    by_name = {m.name: m for m in domain.methods}
    parts = {path: method_name for path, task, method_name in decomposition.methods
             if is_part(split_name(task)[0])}

    def ident(path: str) -> int:
        return ids.setdefault(path, len(ids))

    def children(path: str, method_name: str) -> list[int]:
        """The ids of a method's subtasks, a split window's (see hddl_split) in its place."""
        out: list[int] = []
        for i, sub in enumerate(by_name[method_name].subtasks):
            child = f"{path}/{method_name}#{i}"
            if child in parts:
                out.extend(children(child, parts[child]))
            elif sub != GOAL_OPERATOR:
                out.append(ident(child))
        return out

    lines: list[str] = []
    roots: list[int] = []
    for path, task, method_name in decomposition.methods:
        if VARIANT in method_name or path in parts:
            continue
        subtasks = children(path, method_name)
        if task == ROOT_TASK:
            roots = subtasks
            continue
        head, args = split_name(task)
        lines.append(" ".join((str(ident(path)), head, *args, "->", split_name(method_name)[0],
                               *map(str, subtasks))))
    return "\n".join(["==>", *actions, "root " + " ".join(map(str, roots)), *lines, "<=="]) + "\n"


def lifted_guide(actions: Sequence[str]) -> Guide:
    """The planner's guide (:meth:`~evolve.problems.htn.planner.Planner.follow`) to a plan given
    as ground action names (``name(a,b)``, the grounder's): the step at each position is that
    action (any of its conditional variants), and the goal step comes after the last."""
    wanted = tuple(actions)

    def allows(position: int, operator: str) -> bool:
        if operator == GOAL_OPERATOR:
            return position == len(wanted)
        return position < len(wanted) and operator.split(VARIANT)[0] == wanted[position]
    return allows


def action_graph(plan: Plan) -> tuple[list[str], dict[int, list[int]]]:
    """A task graph made from a grounded plan as :func:`hddl_verify.check_graph` takes it: each
    action task's ground action (a variant named as its action) and the action tasks it waits
    for (the goal step and the final goal task are the grounder's and left out)."""
    tasks = [t for t in plan.tasks if t.tool != GOAL_OPERATOR and t.id != GOAL_TASK]
    index = {t.id: k for k, t in enumerate(tasks)}
    deps = {k: [index[d] for d in t.deps if d in index] for k, t in enumerate(tasks)}
    return [t.tool.split(VARIANT)[0] for t in tasks], deps
