"""Plans that get shorter: a large-neighbourhood step over an HTN plan's decomposition tree.

The search over method choices changes one choice at a time, and a random change of a grounded
domain's choice mostly leads the planner into a dead end or back to the same plan; the first
plan's depth-first search, meanwhile, takes the first method that works at every occurrence
(Rover: a rover reaches a waypoint by the first neighbour it may visit, so its path wanders,
and the plan is twice the best known). This step keeps the rest of a plan and re-plans *parts*
of it: an occurrence of a compound task (a subtree of the decomposition), from the state its
first action started in, by a branch and bound on the number of actions (best first on actions
taken plus the primitive tasks still pending, a bound that never overestimates, so the first
finished node is a shortest sub-plan; a node that cannot beat the occurrence's own length is
pruned; at most :data:`~evolve.defaults.HTN_LNS_SUBTREE_NODES` nodes). The relaxed
composition's estimate would guide it better but costs a pass over the ground model per state:
on Rover p21 a step took 388 s with it and 2 s without. The shorter sub-plans' choices replace
the occurrence's in the genome (its keys are the occurrence's paths), and the genome is decoded
as any other: the planner checks every precondition of the whole plan, and the search keeps the
child only if the run's objectives rank it better. Nothing here knows a domain: it reads the
decomposition the planner made.

The step is a function of the parent's decomposition and the child's random stream only (which
occurrences, in which order), so a run is the same for any number of workers. What was found
for an occurrence (its task, its path, its start state) is remembered in a memo that only saves
time: a remembered answer is charged the nodes it cost, so a run's course never depends on it.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from evolve import defaults
from evolve.problems.htn.decomposition import Decomposition, Genome
from evolve.problems.htn.domain import Value
from evolve.problems.htn.hddl_split import is_part
from evolve.problems.htn.nodes import Node, Pending, finished
from evolve.problems.htn.planner import CLOCK_EVERY, Planner

Facts = frozenset[tuple[str, Value]]


@dataclass(frozen=True)
class Occurrence:
    """A compound task's occurrence in a plan's decomposition: its path (the key of its method
    choice), its task, its first action's index and how many actions it has, and the depth and
    trail the planner gave it."""

    path: str
    task: str
    start: int
    size: int
    depth: int
    trail: tuple[tuple[str, bool, int], ...]


@dataclass
class Memo:
    """Sub-plans found, by (path, task, start state): their choices (None: none shorter than the
    bound), their length, and the nodes the search cost (charged again when reused)."""

    found: dict[tuple[str, str, Facts, int, int], tuple[Genome | None, int, int]] = field(
        default_factory=dict)


def occurrences(tree: Decomposition) -> list[Occurrence]:
    """Every compound-task occurrence of ``tree`` that has at least one action, in plan order."""
    where: dict[str, str] = {}
    task_of: dict[str, str] = {}
    depth: dict[str, int] = {}
    for path, task, method in tree.methods:
        where[f"{path}/{method}"] = path
        task_of[path] = task
        if path not in depth:
            cut = path.rfind("#")
            parent = where.get(path[:cut]) if cut >= 0 else None
            depth[path] = 0 if parent is None else depth[parent] + (0 if is_part(task_of[parent]) else 1)
    first: dict[str, int] = {}
    size: dict[str, int] = {}
    trail: dict[str, tuple[tuple[str, bool, int], ...]] = {}
    for index, step in enumerate(tree.steps):
        for level, (here, _, _) in enumerate(step.trail):
            above = where.get(here)
            if above is None:
                continue
            if above not in first:
                first[above] = index
                trail[above] = step.trail[:level]
            size[above] = size.get(above, 0) + 1
    return [Occurrence(p, task_of[p], first[p], size[p], depth.get(p, 0), trail[p])
            for p in sorted(first, key=lambda p: (first[p], -size[p]))]


def under(key: str, path: str) -> bool:
    """Whether a choice's key belongs to the occurrence at ``path`` or below it."""
    return key == path or key.startswith(path + "/") or key.startswith(path + ">")


def splice(genome: Genome, path: str, choices: Genome) -> Genome:
    """``genome`` with the choices at and below ``path`` replaced by ``choices``."""
    kept = [c for c in genome if not under(c.key, path)]
    return tuple(sorted([*kept, *choices], key=lambda c: c.key))


def shortest(planner: Planner, occurrence: Occurrence, state: Mapping[str, Value], bound: int,
             budget: int) -> tuple[Genome | None, int, int]:
    """The fewest actions the occurrence's task can take from ``state``, if fewer than ``bound``:
    ``(choices, length, nodes)``, choices None when no shorter sub-plan was found in ``budget``
    nodes (or before the planner's deadline)."""
    domain = planner.domain
    planner.reset(domain.max_depth)
    operators = domain.operators

    def least(node: Node) -> int:
        """Actions the node has taken and its pending primitive tasks will take (its compound
        ones may take none): a bound that never overestimates."""
        names = node.pending.network[0] if node.pending is not None else ()
        return node.length + sum(1 for n in names if n in operators)

    root = Pending(occurrence.task, occurrence.path, occurrence.depth, occurrence.trail, None)
    start = Node(root, state)
    tie = 0
    queue: list[tuple[int, int, Node, Facts | None]] = [(least(start), tie, start, None)]
    best: Genome | None = None
    seen: dict[tuple[Facts, tuple[str, ...]], int] = {}
    nodes = 0
    while queue and nodes < budget:
        lower, _, node, facts = heapq.heappop(queue)
        if lower >= bound:
            break  # best first on a bound that never overestimates: nothing left can beat it
        nodes += 1
        if nodes % CLOCK_EVERY == 0 and planner.past_deadline():
            break
        if node.pending is None:
            best, bound = finished(node, nodes).genome, node.length
            break  # the first finished node popped is a shortest one
        if facts is None:
            facts = frozenset(node.state.items())
        key = (facts, node.pending.network[0])
        if seen.get(key, bound) <= node.length:
            continue
        seen[key] = node.length
        for child in planner.expand(node, {}, None, False):
            value = least(child)
            if value >= bound:
                continue
            tie -= 1  # ties to the newest: equal bounds are followed down at once
            heapq.heappush(queue, (value, tie, child, facts if child.state is node.state else None))
    return best, bound, nodes


def neighbour(planner: Planner, tree: Decomposition, rng: np.random.Generator,
              memo: Memo) -> tuple[Genome | None, int]:
    """A large-neighbourhood step on ``tree`` (see the module docstring): occurrences in a random
    order, each not inside one already re-planned searched for a shorter sub-plan, until
    :data:`~evolve.defaults.HTN_LNS_NODES` are spent; every shorter one spliced into the genome.
    Returns the new genome (None: nothing shorter was found) and the nodes spent."""
    found = occurrences(tree)
    if not found:
        return None, 0
    genome = tree.genome
    order = [found[int(i)] for i in rng.permutation(len(found))]
    states = states_before(planner, tree, {o.start for o in found})
    replaced: list[str] = []
    spent = 0
    for occurrence in order:
        if spent >= defaults.HTN_LNS_NODES or planner.past_deadline():
            break
        if any(under(occurrence.path, p) or under(p, occurrence.path) for p in replaced):
            continue
        state = states[occurrence.start]
        budget = min(defaults.HTN_LNS_SUBTREE_NODES, defaults.HTN_LNS_NODES - spent)
        key = (occurrence.path, occurrence.task, frozenset(state.items()), occurrence.size, budget)
        known = memo.found.get(key)
        if known is None:
            known = shortest(planner, occurrence, state, occurrence.size, budget)
            if planner.past_deadline():
                break  # a search the deadline cut proves nothing, and is not kept
            memo.found[key] = known
        choices, _, nodes = known
        spent += nodes
        if choices is not None:
            genome = splice(genome, occurrence.path, choices)
            replaced.append(occurrence.path)
    return (genome if replaced else None), spent


def states_before(planner: Planner, tree: Decomposition, wanted: set[int]) -> dict[int, Mapping[str, Value]]:
    """The states the plan's actions of the ``wanted`` indices start from (one replay)."""
    state: Mapping[str, Value] = planner.domain.state
    out: dict[int, Mapping[str, Value]] = {}
    for index, step in enumerate(tree.steps):
        if index in wanted:
            out[index] = state
        state = planner.domain.operators[step.operator].effects.apply(state)
    return out
