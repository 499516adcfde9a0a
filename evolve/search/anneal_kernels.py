"""Numba kernels of the tool-choice search that value a producer choice by its work, not its
schedule: the annealing of first plans (and of half the children) on problems whose
``max_parallel`` slots are the bottleneck, so that the makespan is the choice of tools.

They work on the genome and tables of :mod:`evolve.search.toolchoice_kernels` (see there) and
use its decoding, moves and work bound; what is here is the floor a choice is valued by (its
work over the slots, its critical path) and the annealing on it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evolve.search.toolchoice_kernels import (
    BOUND_EPS,
    INFEASIBLE,
    apply_move,
    better,
    decode_buffers,
    decode_into,
    greedy_choice,
    move_scratch,
    needed_facts,
    undo_move,
    work_bound,
)


@njit(cache=True, nogil=True)  # type: ignore[misc]
def critical_length(tables, choice, task_of, order, n, finish):  # type: ignore[no-untyped-def]
    """The longest dataflow path of the decoded tasks ``order[:n]`` (durations summed, resources
    ignored): no schedule of them is shorter. ``order`` is topological (see :func:`decode`), so
    one pass does; ``finish`` is scratch (one per tool)."""
    dur, in_ptr, in_idx, initial = tables[0], tables[3], tables[4], tables[9]
    longest = 0.0
    for k in range(n):
        t = order[k]
        ready = 0.0
        for q in range(in_ptr[t], in_ptr[t + 1]):
            g = in_idx[q]
            if not initial[g]:
                ready = max(ready, finish[task_of[choice[g]]])
        finish[k] = ready + dur[t]
        longest = max(longest, finish[k])
    return longest

@njit(cache=True, nogil=True)  # type: ignore[misc]
def refresh_dormant(tables, choice, task_of, needed, weight):  # type: ignore[no-untyped-def]
    """Point every fact the decoded plan does not need at its cheapest derivation *given the
    plan*: :func:`greedy_choice`'s least-work rule with the plan's tools almost free.

    A move that gives a needed fact another producer pulls in, for that producer's inputs,
    whatever the choice holds for them: for facts the plan does not need, a leftover of the
    first greedy plan or of earlier moves, often a derivation that duplicates work the plan
    already does. Refreshed, such a move is valued with the derivation that reuses the most.
    The plan itself does not change (only facts it does not need are touched); ``weight`` is
    scratch (one per tool).
    """
    dur, initial = tables[0], tables[9]
    for t in range(dur.shape[0]):
        weight[t] = dur[t] * (DORMANT_DISCOUNT if task_of[t] >= 0 else 1.0)
    fresh = greedy_choice(tables, weight, True)
    for f in range(initial.shape[0]):
        if not needed[f] and fresh[f] >= 0:
            choice[f] = fresh[f]


DORMANT_DISCOUNT = 1e-3
"""What a tool the plan already runs costs :func:`refresh_dormant`, per unit of its duration:
small, not zero, so that among free derivations the shorter still wins."""


@njit(cache=True, nogil=True)  # type: ignore[misc]
def work_anneal(tables, choice, rng, max_evals, t_start, t_end, refresh, floor):  # type: ignore[no-untyped-def]
    """Simulated annealing of the choice on a floor of its makespan: its :func:`work_bound`
    (the work on its busiest limited resource over the capacity), with ``floor`` the larger of
    that and its :func:`critical_length`; ties go to less work, then fewer tasks. Leaves
    ``choice`` at the best found and returns ``(floor, tasks, evaluations)``.

    Where the ``max_parallel`` slots are the bottleneck, evolve's schedules pack them almost
    perfectly, so the makespan is the work and the whole question is which tools to run: a
    least-work covering of the criteria, where a tool making several needed facts counts once.
    The makespan climb (:func:`hill_climb`) descends on greedy schedules, so from a plan whose
    greedy schedule does not pack it trades work for a better greedy schedule; and a
    first-improvement descent on work stops in the first local optimum, a few per cent above the
    least work on generated problems of 1,000 facts. Annealing crosses those, at a decode per
    move (no schedule). The critical path keeps it from a least-work plan that cannot pack
    because one chain of it is longer than its work over the slots.

    The move is :func:`hill_climb`'s (a random needed fact, a random other producer,
    :func:`apply_move`), accepted when no worse, else with probability ``exp(-delta / T)``;
    ``T`` falls geometrically from ``t_start`` to ``t_end`` times the start's floor per task.
    Every ``refresh`` accepted moves (0: never) :func:`refresh_dormant` re-points the facts the
    plan does not need.
    """
    (dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria,
     max_tasks) = tables
    nt = dur.shape[0]
    nf = initial.shape[0]
    task_of, order, color = decode_buffers(nt)
    stack_t = np.empty(nt + 1, dtype=np.int64)
    stack_q = np.empty(nt + 1, dtype=np.int64)
    finish = np.empty(nt, dtype=np.float64)
    n = decode_into(tables, choice, task_of, order, color, stack_t, stack_q, -1)
    if n <= 0:
        return INFEASIBLE if n < 0 else 0.0, max(n, 0), 1
    work = work_bound(tables, order, n)
    value = max(work, critical_length(tables, choice, task_of, order, n, finish)) if floor else work
    best_value, best_work, best_n = value, work, n
    best = choice.copy()
    scale = value / n if value > 0.0 else 1.0
    hot, cold = t_start * scale, t_end * scale
    prev = n
    changed_f, changed_v = move_scratch(tables)
    needed = np.zeros(nf, dtype=np.bool_)
    facts = np.empty(nf, dtype=np.int64)
    weight = np.empty(nt)
    m = needed_facts(tables, task_of, needed, facts)
    accepted = 0
    evals = 1
    while evals < max_evals and m > 0:
        f = facts[rng.integers(0, m)]
        p = prod_idx[prod_ptr[f] + rng.integers(0, prod_ptr[f + 1] - prod_ptr[f])]
        temperature = hot * (cold / hot) ** (evals / max_evals)
        evals += 1
        if p == choice[f]:
            continue
        count = apply_move(tables, choice, f, p, needed, changed_f, changed_v)
        n2 = decode_into(tables, choice, task_of, order, color, stack_t, stack_q, prev)
        prev = max(n2, 0)
        # accepted when no worse, else with probability exp(-delta / T): when delta < slack
        slack = max(BOUND_EPS, -temperature * np.log(1.0 - rng.random()))
        if n2 >= 0:
            work2 = work_bound(tables, order, n2)
            value2 = work2
            if floor and work2 <= value + slack:  # else rejected whatever the critical path
                value2 = max(work2, critical_length(tables, choice, task_of, order, n2, finish))
            if value2 <= value + slack:
                # the scratch holds this decode: the needed facts follow the new plan
                value, work, n = value2, work2, n2
                m = needed_facts(tables, task_of, needed, facts)
                accepted += 1
                if refresh > 0 and accepted % refresh == 0:
                    refresh_dormant(tables, choice, task_of, needed, weight)
                if value < best_value - 1e-9 or (abs(value - best_value) <= 1e-9
                                                 and better(work, n, best_work, best_n)):
                    best_value, best_work, best_n = value, work, n
                    best[:] = choice
                continue
        undo_move(choice, changed_f, changed_v, count)
    choice[:] = best
    return best_value, best_n, evals
