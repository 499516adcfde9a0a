"""The grounder's relations: sets of argument tuples indexed for the join.

:class:`~evolve.problems.htn.hddl.Grounder` keeps the facts reached so far, and the task and
action instances made so far, each as a :class:`Relation` per predicate or task, and binds a
method's parameters by joining them (:meth:`~evolve.problems.htn.hddl.Grounder.bindings`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence


class Relation:
    """A set of argument tuples, indexed by (position, value) for the join."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, ...], None] = {}  # an ordered set: grounding is deterministic
        self.index: dict[tuple[int, str], list[tuple[str, ...]]] = {}

    def add(self, row: tuple[str, ...]) -> bool:
        if row in self.rows:
            return False
        self.rows[row] = None
        for i, value in enumerate(row):
            self.index.setdefault((i, value), []).append(row)
        return True

    def candidates(self, fixed: Sequence[tuple[int, str]]) -> Iterator[tuple[str, ...]]:
        if not fixed:
            yield from list(self.rows)
            return
        if len(fixed) == 1:  # the index is exact
            yield from list(self.index.get(fixed[0], ()))
            return
        lists = [self.index.get(key, []) for key in fixed]
        shortest = min(lists, key=len)
        for row in list(shortest):
            for i, v in fixed:
                if len(row) <= i or row[i] != v:
                    break
            else:
                yield row
