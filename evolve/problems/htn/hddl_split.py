"""Splitting a method's local parameters off into a task of their own, before grounding.

A method parameter that only a run of consecutive subtasks names (no other subtask, nor the
method's task) is a choice that matters to that run alone; ground as the method's, it multiplies
the method's instances by its objects, once for every other such parameter of every other run
(Woodworking's ``method16``: twelve parameters, the product of three subtasks' choices;
Childsnack's ``m0_serve``: the bread and the filling of one sandwich times every tray; the
initial task network of Woodworking: three free parameters per part, the product over all
parts). Lifted planners bind such a parameter when the run is reached; a grounder can do the
same by giving the run a task of its own: ``M~partI`` (I: the run's first subtask) over the
run's other parameters, with one method that binds the local ones and holds the precondition's
conjuncts about them. The instances then add up instead of multiplying.

A conjunct that names a local parameter moves with it; that is only sound where it is tested in
the same state: when the run starts the method (a total order), or when the conjunct reads only
static predicates (those no action changes). A parameter that a conjunct ties to parameters
outside the run, or whose conjunct cannot move, stays the method's. The static conjuncts about
the run's other parameters are copied into its method too, so that its instances are joined as
narrowly as the method's were.

The split is invisible in plans: :func:`evolve.problems.htn.hddl_plans.ipc_plan` puts a run's
decomposition back into its method, so the competition's verifiers see the domain's own
methods; and the planner counts a split task as no level of nesting (``max_depth``).
"""

from __future__ import annotations

from dataclasses import replace

from evolve.problems.htn.hddl_syntax import Call, HddlDomain, HddlProblem, MethodDef, Sexp, Typed, conjuncts

PART = "~part"
"""Marks a task (and its method) made by the split: ``method~partI`` is the method's subtask I."""


def is_part(task_name: str) -> bool:
    """Whether a (ground or lifted) task name is one the split made."""
    return PART in task_name


def variables(node: Sexp) -> set[str]:
    """Every ``?name`` in a formula, bound by a quantifier or not (the split needs only an upper
    bound: a quantified name that shadows a parameter keeps the parameter in place)."""
    if isinstance(node, str):
        return {node} if node.startswith("?") else set()
    return {v for item in node for v in variables(item)}


def predicates(node: Sexp) -> set[str]:
    """The predicates a formula reads (heads that are not connectives or quantifiers)."""
    if isinstance(node, str) or node == ():
        return set()
    head = node[0]
    if head in ("and", "or", "not", "imply"):
        return {p for item in node[1:] for p in predicates(item)}
    if head in ("forall", "exists") and len(node) == 3:
        return predicates(node[2])
    return set() if head == "=" else {str(head)}


def changed(domain: HddlDomain) -> set[str]:
    """The predicates some action's effect names (the others are static)."""
    out: set[str] = set()

    def walk(node: Sexp) -> None:
        if isinstance(node, str) or node == ():
            return
        head = node[0]
        if head in ("and", "not"):
            for item in node[1:]:
                walk(item)
        elif head in ("forall", "when") and len(node) == 3:
            walk(node[2])
        elif isinstance(head, str):
            out.add(head)

    for action in domain.actions.values():
        walk(action.effect)
    return out


def vs_static(node: Sexp, dynamic: set[str]) -> bool:
    """Whether a conjunct reads only static predicates (true or false in every state)."""
    return not predicates(node) & dynamic


def call_vars(call: Call) -> list[str]:
    return list(dict.fromkeys(a for a in call.args if a.startswith("?")))


def split_method(method: MethodDef, dynamic: set[str]) -> list[MethodDef]:
    """The method with its local parameters split off (first), and the methods of the windows
    made (themselves split); the method alone when it has none.

    A window is a run of consecutive subtasks (in their total order; one subtask when the
    method is unordered); its local parameters are those no subtask outside it names, nor the
    method's task. The candidates are the spans of the parameters (first to last subtask that
    names one), widest first, each taken when it overlaps none taken before and keeps a local
    parameter."""
    size = len(method.subtasks)
    if size < 2:
        return [method]
    types = dict(method.params)
    if any(v not in types for c in method.subtasks for v in call_vars(c)) or \
            any(v not in types for v in call_vars(method.task)):
        return [method]  # an undeclared variable: the grounder reports it
    parts = conjuncts(method.pre)
    part_vars = [variables(c) for c in parts]
    head = set(call_vars(method.task))
    named_by = [set(call_vars(c)) for c in method.subtasks]
    spans: dict[str, tuple[int, int]] = {}
    for i, names in enumerate(named_by):
        for v in names - head:
            first, _ = spans.get(v, (i, i))
            spans[v] = (first, i)
    candidates = sorted({(a, b) for a, b in spans.values()
                         if (a, b) != (0, size - 1) and (a == b or not method.unordered)},
                        key=lambda w: (w[0] - w[1], w[0]))
    windows: list[tuple[int, int, set[str], list[int]]] = []
    moved: set[int] = set()
    for a, b in candidates:
        if any(a <= y and x <= b for x, y, _, _ in windows):
            continue
        inside = set().union(*named_by[a:b + 1])
        local = {v for v, (x, y) in spans.items() if a <= x and y <= b}
        movable = {k for k, vs in enumerate(part_vars) if k not in moved and vs <= inside
                   and ((a == 0 and not method.unordered) or vs_static(parts[k], dynamic))}
        while True:  # a conjunct that names a local parameter and cannot move keeps it here
            stuck = {v for k, vs in enumerate(part_vars) if k not in movable for v in vs & local}
            if not stuck:
                break
            local -= stuck
        if local:  # the conjuncts about its locals move; the static ones about the rest are copied
            taking = sorted(k for k in movable if part_vars[k] & local or
                            (vs_static(parts[k], dynamic) and part_vars[k] <= inside))
            moved.update(k for k in taking if part_vars[k] & local)
            windows.append((a, b, local, taking))
    if not windows:
        return [method]
    windows.sort()
    made: list[MethodDef] = []
    subtasks: list[Call] = []
    gone: set[str] = set()
    at = 0
    for a, b, local, taking in windows:
        subtasks.extend(method.subtasks[at:a])
        used = list(dict.fromkeys(v for c in method.subtasks[a:b + 1] for v in call_vars(c)))
        name = f"{method.name}{PART}{a}"
        task = Call(name, tuple(v for v in used if v not in local))
        pre: Sexp = ("and", *(parts[k] for k in taking)) if taking else ()
        params: Typed = tuple((v, types[v]) for v in used)
        made.extend(split_method(MethodDef(f"{name}_m", params, task, pre, method.subtasks[a:b + 1]),
                                 dynamic))  # unordered: one subtask
        subtasks.append(task)
        gone |= local
        at = b + 1
    subtasks.extend(method.subtasks[at:])
    rest = [parts[k] for k in range(len(parts)) if k not in moved]
    top = replace(method, params=tuple(p for p in method.params if p[0] not in gone),
                  pre=("and", *rest) if rest else (), subtasks=tuple(subtasks))
    return [top, *made]


def split(domain: HddlDomain, problem: HddlProblem) -> tuple[HddlDomain, HddlProblem]:
    """The domain and problem with every method's (and the initial task network's) local
    parameters split off (see the module docstring): the same plans, fewer ground methods."""
    dynamic = changed(domain)
    methods: list[MethodDef] = []
    tasks = dict(domain.tasks)
    for method in domain.methods:
        made = split_method(method, dynamic)
        methods.append(made[0])
        for part in made[1:]:
            methods.append(part)
            tasks[part.task.name] = tuple(p for p in part.params if p[0] in part.task.args)
    network = problem.network
    if network is not None:
        made = split_method(network, dynamic)
        network = made[0]
        for part in made[1:]:
            methods.append(part)
            tasks[part.task.name] = tuple(p for p in part.params if p[0] in part.task.args)
    return replace(domain, tasks=tasks, methods=tuple(methods)), replace(problem, network=network)
