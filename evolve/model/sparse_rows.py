"""Linear rows gathered as sparse coordinates: what the bound models hand scipy's solvers.

The energy model (:mod:`evolve.model.energy_bound`) and the path model
(:mod:`evolve.model.path_bound`, which stacks its rows under the energy model's) build
thousands of short rows over thousands of columns; gathered as coordinates they become one
sparse matrix, never a dense one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from scipy.sparse import coo_matrix, csr_matrix


@dataclass
class SparseRows:
    """Rows ``lower <= A x <= upper``: ``r``, ``c``, ``v`` are the coordinates and values of
    ``A``'s entries, row by row."""

    r: list[int] = field(default_factory=list)
    c: list[int] = field(default_factory=list)
    v: list[float] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)

    def add(self, entries: Iterable[tuple[int, float]], lower: float = -math.inf,
            upper: float = math.inf) -> None:
        """One row: ``lower <= sum(value * x[col] for col, value in entries) <= upper``."""
        row = len(self.upper)
        for col, value in entries:
            self.r.append(row)
            self.c.append(col)
            self.v.append(value)
        self.lower.append(lower)
        self.upper.append(upper)

    def __len__(self) -> int:
        return len(self.upper)

    def matrix(self, width: int) -> csr_matrix:
        """``A`` over ``width`` columns."""
        return coo_matrix((self.v, (self.r, self.c)), shape=(len(self), width)).tocsr()

    def then(self, below: SparseRows) -> SparseRows:
        """These rows with ``below``'s under them (a new object; neither is changed)."""
        offset = len(self)
        return SparseRows(self.r + [row + offset for row in below.r], self.c + below.c,
                          self.v + below.v, self.lower + below.lower, self.upper + below.upper)
