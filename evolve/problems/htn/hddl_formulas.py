"""Ground formulas of the HDDL grounder (:mod:`evolve.problems.htn.hddl`) and their HTN form.

What grounding makes of a precondition, goal or effect once its variables are bound: a
:data:`Ground` formula (what grounding can decide is decided, so most of a static domain's
tests are already ``True`` or ``False``) and the :class:`Effect` of an action, then written as
the predicates and operators of an HTN domain document (:func:`to_doc`, :func:`operator_doc`).
Apart from the grounder, which decides *which* instances exist, because these are plain values
with no state of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

Ground = bool | tuple[Any, ...]
"""A ground formula: True/False, ("atom", key), ("not", f), ("and", fs...), ("or", fs...)."""


def atom_key(name: str, args: Sequence[str]) -> str:
    """The state key of a ground atom (see :mod:`evolve.problems.htn.hddl`): unambiguous, and
    a word the plan's ``$task.fact`` references can spell."""
    return "_".join(part.replace("_", "__") for part in (name, *args))


def conj(items: list[Ground]) -> Ground:
    kept = [i for i in items if i is not True]
    if any(i is False for i in kept):
        return False
    return True if not kept else kept[0] if len(kept) == 1 else ("and", *kept)


def disj(items: list[Ground]) -> Ground:
    kept = [i for i in items if i is not False]
    if any(i is True for i in kept):
        return True
    return False if not kept else kept[0] if len(kept) == 1 else ("or", *kept)


def negate(item: Ground) -> Ground:
    if isinstance(item, bool):
        return not item
    return item[1] if item[0] == "not" else ("not", item)


def to_doc(item: Ground) -> list[Any]:
    """A ground formula as the predicates of an HTN domain file (a list: all of them)."""
    if item is True:
        return []
    if item is False:
        return [{"not": []}]
    assert isinstance(item, tuple)
    if item[0] == "atom":
        return [{"has": item[1]}]
    if item[0] == "and":
        return [d for sub in item[1:] for d in to_doc(sub)]
    if item[0] == "not":
        inner = to_doc(item[1])
        return [{"not": inner[0] if len(inner) == 1 else inner}]
    alternatives = [to_doc(sub) for sub in item[1:]]  # a or b = not (not a and not b)
    return [{"not": [{"not": d[0] if len(d) == 1 else d} for d in alternatives]}]


@dataclass(frozen=True)
class Effect:
    positive: bool
    atom: tuple[str, tuple[str, ...]]
    when: Ground = True

    @property
    def key(self) -> str:
        return atom_key(*self.atom)


def operator_doc(pre: Ground, effects: list[Effect]) -> dict[str, Any]:
    """An operator: PDDL semantics (deletes first, then adds: an atom both added and deleted
    stays), every delete once."""
    sets = {e.key: True for e in effects if e.positive}
    unset = list(dict.fromkeys(e.key for e in effects if not e.positive and e.key not in sets))
    return {"pre": to_doc(pre), "duration": 1, "effects": {"set": sets, "unset": unset}}
