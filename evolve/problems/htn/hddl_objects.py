"""The objects of an HDDL domain and problem, by type: what the grounder's parameters range over.

A parameter of type ``t`` runs over the objects of ``t`` and of every type below it, so the
type hierarchy is closed once (:func:`subtypes`) and each type list's objects are listed, and
kept as a set for membership tests, the first time a parameter asks for them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evolve.model.errors import InputError
from evolve.problems.htn.hddl_syntax import OBJECT, HddlDomain, HddlProblem


def subtypes(parents: Mapping[str, Sequence[str]]) -> dict[str, set[str]]:
    """Each type -> itself and every type below it (the objects of those are its objects)."""
    below: dict[str, set[str]] = {t: {t} for t in parents}
    for kind in parents:
        todo, seen = [kind], {kind}
        while todo:
            for parent in parents.get(todo.pop(), ()):
                below.setdefault(parent, {parent}).add(kind)
                if parent not in seen:
                    seen.add(parent)
                    todo.append(parent)
    return below


class Objects:
    """The domain's constants and the problem's objects with their types (``source`` names the
    problem file in errors)."""

    def __init__(self, domain: HddlDomain, problem: HddlProblem, source: str) -> None:
        self.types = {**domain.constants, **problem.objects}
        for name in self.types:
            if name.startswith("_"):
                raise InputError(source, "", f"object {name}: names start with a letter")
        self.below = subtypes(domain.parents)
        self.by_type: dict[str, list[str]] = {}
        self.members: dict[str, set[str]] = {}

    def of(self, types: Sequence[str]) -> list[str]:
        """The objects of any of ``types`` (an ``either`` list) or of a type below one."""
        key = ",".join(types)
        if key not in self.by_type:
            if OBJECT in types:
                self.by_type[key] = list(self.types)
            else:
                kinds = set().union(*(self.below.get(t, {t}) for t in types))
                self.by_type[key] = [o for o, ts in self.types.items() if any(t in kinds for t in ts)]
        return self.by_type[key]

    def member_set(self, types: Sequence[str]) -> set[str]:
        """:meth:`of` as a set (made once per type list), for membership tests."""
        key = ",".join(types)
        if key not in self.members:
            self.members[key] = set(self.of(types))
        return self.members[key]

    def is_a(self, name: str, types: Sequence[str]) -> bool:
        return name in self.member_set(types)
