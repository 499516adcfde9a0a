"""Grounding by relevance: which compound task instances the initial task network can reach,
top-down, so that the grounder's bottom-up join makes only their method instances."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evolve.problems.htn.hddl_objects import Objects
from evolve.problems.htn.hddl_relation import Relation
from evolve.problems.htn.hddl_syntax import HddlDomain, MethodDef

Patterns = dict[str, dict[tuple[int, ...], set[tuple[str, ...]]]]
"""Per task, per set of known argument positions, the values those positions take."""

MAX_PATTERNS = 20_000
"""The most patterns :func:`relevant` keeps for one task before it keeps one that
matches every instance (the top-down pass stays small whatever the domain)."""


def relevant(domain: HddlDomain, objects: Objects, network: MethodDef) -> Patterns:
    """The compound task instances reachable top-down from the initial task network, as
    patterns: a task's arguments with None where the method that calls it leaves a
    parameter to be bound below (preconditions ignored, so a superset). The bottom-up
    join then makes only the method instances of a reachable task (:meth:`Grounder.instantiate`),
    which :meth:`Grounder.reachable` would otherwise drop after they were made (Depots p22: 110,080
    instances of ``m3_do_put_on`` for every crate and surface, where the network asks for
    18 pairs). A task with more than :data:`MAX_PATTERNS` patterns keeps one that matches
    every instance."""
    patterns: dict[str, dict[tuple[str | None, ...], None]] = {}
    by_task: dict[str, list[MethodDef]] = {}
    for definition in domain.methods:
        by_task.setdefault(definition.task.name, []).append(definition)
    todo: list[tuple[str, tuple[str | None, ...]]] = []

    def reach(definition: MethodDef, binding: Mapping[str, str]) -> None:
        for call in definition.subtasks:
            if call.name in domain.actions:
                continue
            pattern = tuple(binding.get(a) if a.startswith("?") else a for a in call.args)
            known = patterns.setdefault(call.name, {})
            anything = (None,) * len(pattern)
            if pattern in known or anything in known:
                continue
            if len(known) >= MAX_PATTERNS:
                known.clear()
                pattern = anything
            known[pattern] = None
            todo.append((call.name, pattern))

    reach(network, {})
    while todo:
        task, pattern = todo.pop()
        if pattern not in patterns[task]:
            continue  # replaced by the pattern that matches everything
        for definition in by_task.get(task, ()):
            if len(definition.task.args) != len(pattern):
                continue
            types = dict(definition.params)
            binding: dict[str, str] = {}
            for term, value in zip(definition.task.args, pattern):
                if value is None:
                    continue
                if not term.startswith("?"):
                    if term != value:
                        break
                elif binding.setdefault(term, value) != value or \
                        (term in types and not objects.is_a(value, types[term])):
                    break
            else:
                reach(definition, binding)
    out: dict[str, dict[tuple[int, ...], set[tuple[str, ...]]]] = {}
    for task, known in patterns.items():
        by_mask = out.setdefault(task, {})
        for pattern in known:
            mask = tuple(i for i, v in enumerate(pattern) if v is not None)
            by_mask.setdefault(mask, set()).add(tuple(str(pattern[i]) for i in mask))
    return out


def wanted(patterns: Patterns | None, task: str, args: tuple[str, ...]) -> bool:
    """Whether the initial task network can reach the task instance (see :func:`relevant`)."""
    if patterns is None:
        return True
    return any(tuple(args[i] for i in mask) in rows for mask, rows in patterns.get(task, {}).items())


def pattern_relations(patterns: Patterns | None,
                      definition: MethodDef) -> list[tuple[Sequence[str], Relation]]:
    """Relations over the method's task terms that every reachable instance of its task
    meets, for the join: the known values, when all the task's patterns know the same
    positions, else the values each position always known may take."""
    if patterns is None:
        return []
    by_mask = patterns.get(definition.task.name, {})
    terms = definition.task.args
    if len(by_mask) == 1:
        [(mask, rows)] = by_mask.items()
        if not mask:
            return []
        relation = Relation()
        for row in sorted(rows):
            relation.add(row)
        return [(tuple(terms[i] for i in mask), relation)]
    always = set(range(len(terms))).intersection(*map(set, by_mask))
    out: list[tuple[Sequence[str], Relation]] = []
    for i in sorted(always):
        relation = Relation()
        for value in sorted({row[mask.index(i)] for mask, rows in by_mask.items() for row in rows}):
            relation.add((value,))
        out.append(((terms[i],), relation))
    return out
