"""Small graph algorithms over ``{node: [predecessors]}`` maps, shared by validator and scheduler.

They are also the plain-Python meaning (and the tests' oracle) of the compiled
kernels in :mod:`evolve.model.graph_kernels`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Collection, Hashable, Mapping, Sequence
from itertools import chain
from typing import TypeVar

N = TypeVar("N", bound=Hashable)


def successors(deps: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """Invert a predecessor map (edges to unknown nodes are ignored)."""
    succ: dict[str, list[str]] = {node: [] for node in deps}
    for node, preds in deps.items():
        for pred in preds:
            if pred in succ:
                succ[pred].append(node)
    return succ


def topological_order(deps: Mapping[str, Sequence[str]]) -> list[str]:
    """Kahn's order, stable in the map's order; nodes on or behind a cycle are left out."""
    indegree = {node: sum(1 for p in preds if p in deps) for node, preds in deps.items()}
    succ = successors(deps)
    ready = deque(node for node, d in indegree.items() if d == 0)
    order: list[str] = []
    while ready:
        node = ready.popleft()
        order.append(node)
        for nxt in succ[node]:
            indegree[nxt] -= 1
            if indegree[nxt] == 0:
                ready.append(nxt)
    return order


def find_cycle(deps: Mapping[str, Sequence[str]]) -> list[str]:
    """One cycle, as the list of its nodes in dependency order; empty when there is none."""
    state: dict[str, int] = {}
    for start in deps:
        if start in state:
            continue
        stack: list[tuple[str, int]] = [(start, 0)]
        path: list[str] = []
        while stack:
            node, i = stack.pop()
            if i == 0:
                state[node] = 1
                path.append(node)
            preds = [p for p in deps.get(node, ()) if p in deps]
            if i < len(preds):
                stack.append((node, i + 1))
                nxt = preds[i]
                if state.get(nxt) == 1:
                    cycle = path[path.index(nxt):]
                    return list(reversed(cycle))
                if nxt not in state:
                    stack.append((nxt, 0))
            else:
                state[node] = 2
                path.pop()
    return []


def upstream(node: str, deps: Mapping[str, Sequence[str]],
             known: Collection[str] = ()) -> set[str]:
    """Every node ``node`` depends on, directly or transitively (cycle-safe), leaving out
    ``known`` nodes and what is reached only through them: given a set closed under "depends
    on" (a union of earlier answers), the part of the answer not in it, without walking it."""
    seen: set[str] = set()
    todo = list(deps.get(node, ()))
    while todo:
        cur = todo.pop()
        if cur in seen or cur not in deps or cur in known:
            continue
        seen.add(cur)
        todo.extend(deps[cur])
    return seen


def levels(order: Sequence[str], deps: Mapping[str, Sequence[str]]) -> dict[str, int]:
    """Dependency level of each node in a topological ``order``: 0 for roots, 1 + max of preds."""
    level: dict[str, int] = {}
    for node in order:
        level[node] = 1 + max((level[p] for p in deps[node] if p in level), default=-1)
    return level


def longest_tails(order: Sequence[N], succ: Mapping[N, Sequence[N]], duration: Mapping[N, float],
                  from_zero: bool = False) -> dict[N, float]:
    """Longest path from each node's start to the end, its own duration included, over a
    topological ``order``: the "longest remaining path" of priority rules. The max over the
    successors is Python's ``max(tails, default=0.0)``, or ``max([0.0, *tails])`` when
    ``from_zero`` (see :func:`evolve.model.graph_kernels.longest_tails`)."""
    tail: dict[N, float] = {}
    for node in reversed(order):
        after = (tail[s] for s in succ[node])
        tail[node] = duration[node] + (max(chain((0.0,), after)) if from_zero
                                       else max(after, default=0.0))
    return tail
