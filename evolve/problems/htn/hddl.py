"""Reading HDDL (the hierarchical track of the planning competitions) through unified-planning.

``pip install 'evolve[htn]'``. unified-planning parses the domain and problem
files; this module grounds them over the problem's objects (every parameter
over the objects of its type, so it suits small domains) into the document an
HTN domain file would hold, which the ordinary reader then checks. Supported:
typed parameters, conjunctions of (negated) predicates and parameter
equalities in preconditions, unconditional boolean effects, totally ordered
or unordered methods. Anything else (numeric fluents, conditional effects,
partial orders) is refused with an error naming the file.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from evolve.model.errors import InputError

ROOT_TASK = "__root__"


def read_hddl(domain_file: str | Path, problem_file: str | Path) -> dict[str, Any]:
    """The HTN domain document of an HDDL domain and problem (see the module docstring)."""
    try:
        from unified_planning.io import PDDLReader  # an optional extra: imported only when asked
    except ImportError:
        raise InputError(str(domain_file), "", "reading HDDL needs unified-planning: "
                                               "pip install 'evolve[htn]'") from None
    source = str(problem_file)
    try:
        problem = PDDLReader().parse_problem(str(domain_file), str(problem_file))
    except Exception as exc:  # the parser raises many kinds; all mean "not readable HDDL"
        raise InputError(source, "", f"not readable HDDL ({type(exc).__name__}: {exc})") from None
    return Grounder(problem, source).document()


class Grounder:
    def __init__(self, problem: Any, source: str) -> None:
        self.problem = problem
        self.source = source

    def fail(self, message: str) -> InputError:
        return InputError(self.source, "", message)

    def bindings(self, parameters: Any) -> list[dict[str, str]]:
        pools = [[o.name for o in self.problem.all_objects if o.type.is_compatible(p.type)]
                 for p in parameters]
        names = [p.name for p in parameters]
        return [dict(zip(names, combo)) for combo in itertools.product(*pools)]

    def term(self, node: Any, binding: dict[str, str]) -> str:
        if not hasattr(node, "is_parameter_exp"):  # a task's own parameter, not an expression
            return binding[node.name]
        if node.is_parameter_exp():
            return binding[node.parameter().name]
        if node.is_object_exp():
            return str(node.object().name)
        raise self.fail(f"unsupported argument {node}")

    def key(self, node: Any, binding: dict[str, str]) -> str:
        args = [self.term(a, binding) for a in node.args]
        name = node.fluent().name  # a fact name the plan's $task.fact references can spell
        return "_".join([str(name), *args])

    def condition(self, node: Any, binding: dict[str, str]) -> list[Any]:
        """A precondition as a list of predicate documents (all of them)."""
        if node.is_true():
            return []
        if node.is_false():
            return [{"not": []}]
        if node.is_and():
            return [c for arg in node.args for c in self.condition(arg, binding)]
        if node.is_not():
            inner = self.condition(node.arg(0), binding)
            return [{"not": inner[0] if len(inner) == 1 else inner}]
        if node.is_fluent_exp():
            return [{"has": self.key(node, binding)}]
        if node.is_equals():
            same = self.term(node.arg(0), binding) == self.term(node.arg(1), binding)
            return [] if same else [{"not": []}]
        raise self.fail(f"unsupported condition {node}")

    def task_name(self, task: Any, args: Any, binding: dict[str, str]) -> str:
        names = [self.term(a, binding) for a in args]
        return f"{task.name}({','.join(names)})" if names else str(task.name)

    def document(self) -> dict[str, Any]:
        problem = self.problem
        operators: dict[str, Any] = {}
        for action in problem.actions:
            for binding in self.bindings(action.parameters):
                sets: dict[str, bool] = {}
                unset: list[str] = []
                for effect in action.effects:
                    if effect.is_conditional() or not effect.value.is_bool_constant():
                        raise self.fail(f"action {action.name}: only unconditional true/false effects")
                    key = self.key(effect.fluent, binding)
                    if effect.value.bool_constant_value():
                        sets[key] = True
                    else:
                        unset.append(key)
                pre = [c for p in action.preconditions for c in self.condition(p, binding)]
                args = ",".join(binding[p.name] for p in action.parameters)
                operators[f"{action.name}({args})" if args else str(action.name)] = {
                    "pre": pre, "duration": 1,
                    "effects": {"set": sets, "unset": [k for k in unset if k not in sets]}}
        methods: dict[str, Any] = {}
        for method in problem.methods:
            ordered = method.total_order()
            unordered = ordered is None
            if unordered and method.constraints:
                raise self.fail(f"method {method.name}: partial orders are not supported")
            subtasks = [method.get_subtask(i) if isinstance(i, str) else i for i in ordered] \
                if ordered is not None else method.subtasks
            for binding in self.bindings(method.parameters):
                name = f"{method.name}({','.join(binding.values())})"
                achieved = method.achieved_task
                methods[name] = {
                    "task": self.task_name(achieved.task, achieved.parameters, binding),
                    "pre": [c for p in method.preconditions for c in self.condition(p, binding)],
                    "subtasks": [self.task_name(s.task, s.parameters, binding) for s in subtasks],
                    "unordered": unordered}
        network = problem.task_network
        top = network.total_order()
        if top is None and network.constraints:
            raise self.fail("the initial task network's partial order is not supported")
        methods[f"{ROOT_TASK}_m"] = {"task": ROOT_TASK, "unordered": top is None, "subtasks": [
            self.task_name(s.task, s.parameters, {}) for s in (
                [network.get_subtask(i) if isinstance(i, str) else i for i in top] if top is not None
                else network.subtasks)]}
        while True:  # a ground method naming a ground task nothing can do is never applicable
            known = set(operators) | {m["task"] for m in methods.values()}
            dead = [n for n, m in methods.items() if any(s not in known for s in m["subtasks"])]
            if not dead:
                break
            for name in dead:
                del methods[name]
        state = {self.key(f, {}): True for f, v in problem.initial_values.items()
                 if v.is_bool_constant() and v.bool_constant_value()}
        return {"name": str(problem.name), "htn": {"state": state, "goal": ROOT_TASK,
                                                  "operators": operators, "methods": methods}}
