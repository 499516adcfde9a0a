"""Numba kernels of the tool-choice search: greedy construction, decoding and hill-climbing.

The genome these kernels work on is ``choice[f]``: which tool makes fact
``f`` (``-1``: none chosen). A choice decodes to exactly one plan: walk back
from the criteria, one task per chosen tool (a tool that makes several needed
facts runs once), each task depending on the tasks that make its inputs. This
is the same space an exact model searches (tool used, producer chosen,
schedule), and it makes every decoded plan valid, complete and minimal by
construction, so the kernels can spend their time where the makespan is.

Write tools read a pseudo-fact, the last fact index, made by approval tools:
that is how ``write_requires_approval`` becomes one more producer choice.

``Tables`` is the tuple the kernels take (numba takes tuples of arrays
cheaply; a class would need a jitclass):
``(dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria, max_tasks)``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from evolve.model.graph_kernels import longest_tails, transpose
from evolve.scheduling.kernel import heap_pop, heap_push, justify, rank_by, serial_sgs

INFEASIBLE = np.inf
BOUND_EPS = 1e-9
"""The schedulers' tolerance (:data:`evolve.scheduling.base.EPS`): a task may overlap a step by
this much time, and usage may pass a capacity by this much."""
BOUND_MARGIN = 1e-7
"""Relative margin of :func:`bounded_score`'s test, far above a sum's rounding error."""
JUSTIFY_ROUNDS = 0
"""Forward-backward passes per scored choice: the first pays for itself, later ones rarely."""


@njit(cache=True, nogil=True)  # type: ignore[misc]
def greedy_choice(tables, weight, additive):  # type: ignore[no-untyped-def]
    """A producer for every reachable fact, by a generalised Dijkstra over the AND-OR graph.

    A tool's value is ``weight[t]`` plus the max (earliest finish) or the sum
    (least work, ``additive``) of its inputs' values; a fact takes its cheapest
    ready producer. A fact is final before any tool reading it is valued, so
    the choice is acyclic, and every fact some chain of tools can make gets a
    producer: the initializer finds a complete plan whenever one exists.
    """
    (dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria,
     max_tasks) = tables
    nf = initial.shape[0]
    nt = dur.shape[0]
    value = np.full(nf, np.inf)
    choice = np.full(nf, -1, dtype=np.int64)
    final = np.zeros(nf, dtype=np.bool_)
    left = np.empty(nt, dtype=np.int64)
    granted = np.zeros(nt, dtype=np.bool_)
    for f in range(nf):
        for q in range(prod_ptr[f], prod_ptr[f + 1]):
            granted[prod_idx[q]] = True
    for t in range(nt):
        left[t] = in_ptr[t + 1] - in_ptr[t]
    rd_ptr, rd_idx = transpose(in_ptr, in_idx, nf)
    cap_heap = nf + nt + 1 + out_idx.shape[0]
    keys = np.empty(cap_heap, dtype=np.float64)
    items = np.empty(cap_heap, dtype=np.int64)
    size = 0
    for f in range(nf):
        if initial[f]:
            value[f] = 0.0
            size = heap_push(keys, items, size, 0.0, f)
    for t in range(nt):
        if left[t] == 0 and granted[t]:
            v = weight[t]
            for q in range(out_ptr[t], out_ptr[t + 1]):
                g = out_idx[q]
                if v < value[g]:
                    value[g] = v
                    choice[g] = t
                    size = heap_push(keys, items, size, v, g)
    while size > 0:
        v, f, size = heap_pop(keys, items, size)
        if final[f] or v > value[f]:
            continue
        final[f] = True
        for q in range(rd_ptr[f], rd_ptr[f + 1]):
            t = rd_idx[q]
            left[t] -= 1
            if left[t] != 0 or not granted[t]:
                continue
            acc = 0.0
            for p in range(in_ptr[t], in_ptr[t + 1]):
                x = value[in_idx[p]]
                acc = acc + x if additive else max(acc, x)
            tv = acc + weight[t]
            for p in range(out_ptr[t], out_ptr[t + 1]):
                g = out_idx[p]
                if not final[g] and tv < value[g]:
                    value[g] = tv
                    choice[g] = t
                    size = heap_push(keys, items, size, tv, g)
    for f in range(nf):
        if initial[f]:
            choice[f] = -1
    return choice


@njit(cache=True, nogil=True)  # type: ignore[misc]
def decode(tables, choice, task_of, order, color):  # type: ignore[no-untyped-def]
    """The tools the choice runs, in a topological order (written to ``order``); returns their
    count, or -1 when a needed fact has no producer or the choice is cyclic.

    ``task_of`` (per tool, -1 outside) and ``color`` (per tool) are scratch arrays, returned
    with ``task_of`` holding each used tool's position in ``order`` (all -1 after a failure).
    One DFS serves both entry points: this is :func:`decode_into` on scratch that holds
    anything (``prev = -1``: reset all) with stacks of its own.
    """
    nt = tables[0].shape[0]
    stack_t = np.empty(nt + 1, dtype=np.int64)
    stack_q = np.empty(nt + 1, dtype=np.int64)
    return decode_into(tables, choice, task_of, order, color, stack_t, stack_q, -1)


@njit(cache=True, nogil=True)  # type: ignore[misc]
def decode_buffers(nt):  # type: ignore[no-untyped-def]
    """``(task_of, order, color)``: the scratch arrays :func:`decode` fills, one slot per tool."""
    return np.empty(nt, dtype=np.int64), np.empty(nt, dtype=np.int64), np.empty(nt, dtype=np.int64)


@njit(cache=True, nogil=True)  # type: ignore[misc]
def decode_into(tables, choice, task_of, order, color, stack_t, stack_q, prev):  # type: ignore[no-untyped-def]
    """:func:`decode` (the DFS both share) for a caller that decodes many choices into the
    same scratch arrays.

    Resetting ``task_of`` and ``color`` costs a pass over every tool of the catalog, more than
    the decode itself once most of a climb's moves are rejected by their work bound. So the
    scratch is kept clean except for the tools of the last successful decode: ``prev`` is its
    count (``-1``: the arrays hold anything, reset all), only ``order[:prev]`` is reset, and a
    failing decode cleans up what it marked before returning -1 (the next ``prev`` is then 0).
    ``stack_t`` and ``stack_q`` are the DFS stacks (``nt + 1`` entries each), allocated once.
    """
    (dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria,
     max_tasks) = tables
    nt = dur.shape[0]
    if prev < 0:
        for t in range(nt):
            task_of[t] = -1
            color[t] = 0
    else:
        for k in range(prev):
            t = order[k]
            task_of[t] = -1
            color[t] = 0
    n = 0
    depth = -1
    failed = False
    for c in range(criteria.shape[0]):
        f = criteria[c]
        if initial[f]:
            continue
        root = choice[f]
        if root < 0 or color[root] == 1:
            failed = True
            break
        if color[root] == 2:
            continue
        depth = 0
        stack_t[0] = root
        stack_q[0] = in_ptr[root]
        color[root] = 1
        while depth >= 0:
            t = stack_t[depth]
            q = stack_q[depth]
            if q < in_ptr[t + 1]:
                stack_q[depth] = q + 1
                g = in_idx[q]
                if initial[g]:
                    continue
                p = choice[g]
                if p < 0 or p == t or color[p] == 1:
                    failed = True
                    break
                if color[p] == 0:
                    color[p] = 1
                    depth += 1
                    stack_t[depth] = p
                    stack_q[depth] = in_ptr[p]
            else:
                color[t] = 2
                task_of[t] = n
                order[n] = t
                n += 1
                depth -= 1
        if failed:
            break
    if not failed and max_tasks >= 0 and n > max_tasks:
        failed = True
        depth = -1
    if not failed:
        return n
    for k in range(n):
        t = order[k]
        task_of[t] = -1
        color[t] = 0
    for d in range(depth + 1):
        color[stack_t[d]] = 0
    return -1


@njit(cache=True, nogil=True)  # type: ignore[misc]
def task_graph(tables, choice, order, task_of, n):  # type: ignore[no-untyped-def]
    """CSR predecessors and successors of the decoded tasks (each provider once per reader)."""
    (dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria,
     max_tasks) = tables
    pred_ptr = np.zeros(n + 1, dtype=np.int64)
    buf = np.empty(in_idx.shape[0] + 1, dtype=np.int64)
    count = 0
    for k in range(n):
        t = order[k]
        begin = count
        for q in range(in_ptr[t], in_ptr[t + 1]):
            g = in_idx[q]
            if initial[g]:
                continue
            p = task_of[choice[g]]
            seen = False
            for z in range(begin, count):
                if buf[z] == p:
                    seen = True
            if not seen:
                buf[count] = p
                count += 1
        pred_ptr[k + 1] = count
    pred_idx = buf[:count].copy()
    succ_ptr, succ_idx = transpose(pred_ptr, pred_idx, n)
    return pred_ptr, pred_idx, succ_ptr, succ_idx


@njit(cache=True, nogil=True)  # type: ignore[misc]
def priority_keys(dur_t, pred_ptr, pred_idx, succ_ptr, succ_idx, n):  # type: ignore[no-untyped-def]
    """Ranks by longest remaining path, ties by topological position: the reference's default."""
    return rank_by(-longest_tails(dur_t, succ_ptr, succ_idx, True))


@njit(cache=True, nogil=True)  # type: ignore[misc]
def schedule_choice(tables, choice, task_of, order, color, rounds):  # type: ignore[no-untyped-def]
    """``(makespan, tasks, starts)`` of the plan a choice decodes to: a serial schedule by
    longest remaining path, then up to ``rounds`` forward-backward passes while they help.
    Makespan ``inf`` when the choice decodes to no plan."""
    (dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria,
     max_tasks) = tables
    n = decode(tables, choice, task_of, order, color)
    if n < 0:
        return INFEASIBLE, 0, np.zeros(0, dtype=np.float64)
    return schedule_decoded(tables, choice, task_of, order, n, rounds)


@njit(cache=True, nogil=True)  # type: ignore[misc]
def schedule_decoded(tables, choice, task_of, order, n, rounds):  # type: ignore[no-untyped-def]
    """:func:`schedule_choice` of a choice :func:`decode` has just decoded to ``n`` tasks."""
    (dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria,
     max_tasks) = tables
    pred_ptr, pred_idx, succ_ptr, succ_idx = task_graph(tables, choice, order, task_of, n)
    dur_t, need_t = dur[order[:n]], need[order[:n]]
    key = priority_keys(dur_t, pred_ptr, pred_idx, succ_ptr, succ_idx, n)
    start = serial_sgs(dur_t, need_t, cap, pred_ptr, pred_idx, succ_ptr, succ_idx, key)
    ms = _makespan(start, dur_t)
    for _ in range(rounds):
        better = justify(dur_t, need_t, cap, pred_ptr, pred_idx, succ_ptr, succ_idx, start)
        ms2 = _makespan(better, dur_t)
        if ms2 >= ms - 1e-9:
            break
        start, ms = better, ms2
    return ms, n, start


@njit(cache=True, nogil=True)  # type: ignore[misc]
def _makespan(start, dur):  # type: ignore[no-untyped-def]
    ms = 0.0
    for k in range(start.shape[0]):
        if start[k] + dur[k] > ms:
            ms = start[k] + dur[k]
    return ms


@njit(cache=True, nogil=True)  # type: ignore[misc]
def score(tables, choice, task_of, order, color):  # type: ignore[no-untyped-def]
    """``(makespan, tasks)`` of a choice, as the hill-climb compares them (one justification)."""
    ms, n, _ = schedule_choice(tables, choice, task_of, order, color, JUSTIFY_ROUNDS)
    return ms, n


@njit(cache=True, nogil=True)  # type: ignore[misc]
def work_bound(tables, order, n):  # type: ignore[no-untyped-def]
    """A makespan no schedule of the decoded tasks ``order[:n]`` beats: for each limited
    capacity, the work it carries (duration times need, summed) over the capacity.

    Generated plans are limited by ``max_parallel`` almost everywhere (the climbed schedule is
    within a fraction of a percent of this bound), so most moves that add work cannot be better
    and need no schedule: see :func:`bounded_score`.
    """
    dur, need, cap = tables[0], tables[1], tables[2]
    best = 0.0
    for r in range(cap.shape[0]):
        if not np.isfinite(cap[r]) or cap[r] <= 0.0:
            continue
        acc = 0.0
        for k in range(n):
            t = order[k]
            acc += dur[t] * need[t, r]
        # the scheduler lets usage reach cap + EPS (see evolve.scheduling.base)
        acc /= cap[r] + BOUND_EPS
        if acc > best:
            best = acc
    return best


@njit(cache=True, nogil=True)  # type: ignore[misc]
def bounded_score(tables, choice, task_of, order, color, beat, stack_t, stack_q, prev):  # type: ignore[no-untyped-def]
    """``(makespan, tasks, decoded)``: :func:`score`, except that a choice whose
    :func:`work_bound` is above ``beat`` (by more than rounding could explain) is not scheduled:
    it scores ``(inf, tasks)``, since its real makespan would be above ``beat`` too. The
    hill-climb passes the value a move must reach to be kept or probed, so skipping the
    schedule changes none of its decisions. Decodes with :func:`decode_into` (``stack_*``,
    ``prev``); ``decoded`` is the ``prev`` of the next call."""
    n = decode_into(tables, choice, task_of, order, color, stack_t, stack_q, prev)
    if n < 0:
        return INFEASIBLE, 0, 0
    bound = work_bound(tables, order, n)
    if bound * (1.0 - BOUND_MARGIN) - 4 * n * BOUND_EPS > beat + BOUND_EPS:
        return INFEASIBLE, n, n
    ms, m, _ = schedule_decoded(tables, choice, task_of, order, n, JUSTIFY_ROUNDS)
    return ms, m, n


@njit(cache=True, nogil=True)  # type: ignore[misc]
def better(ms_a, n_a, ms_b, n_b):  # type: ignore[no-untyped-def]
    """Makespan first, then fewer tasks (the default ranking's order for complete plans)."""
    if ms_a < ms_b - 1e-9:
        return True
    return abs(ms_a - ms_b) <= 1e-9 and n_a < n_b


@njit(cache=True, nogil=True)  # type: ignore[misc]
def critical_first(tables, choice, task_of, order, start, ms, n, facts, m, rng):  # type: ignore[no-untyped-def]
    """A random visiting order of ``facts[:m]`` with the facts made by critical tasks first.

    A critical task is one the makespan waits for: a task finishing last, and, walking back,
    each predecessor that finishes exactly when a critical task starts. Giving such a fact
    another producer is the move that can shorten the plan, so the climb tries those first.
    ``task_of``, ``order``, ``start``, ``ms`` and ``n`` are the current choice's decode and
    schedule (see :func:`schedule_choice`).
    """
    perm = rng.permutation(m)
    if n <= 0:
        return perm
    (dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria,
     max_tasks) = tables
    pred_ptr, pred_idx, _, _ = task_graph(tables, choice, order, task_of, n)
    critical = np.zeros(n, dtype=np.bool_)
    for k in range(n - 1, -1, -1):
        if abs(start[k] + dur[order[k]] - ms) <= 1e-9:
            critical[k] = True
        if critical[k]:
            for q in range(pred_ptr[k], pred_ptr[k + 1]):
                p = pred_idx[q]
                if abs(start[p] + dur[order[p]] - start[k]) <= 1e-9:
                    critical[p] = True
    out = np.empty(m, dtype=np.int64)
    front = 0
    for i in range(m):
        if critical[task_of[choice[facts[perm[i]]]]]:
            out[front] = perm[i]
            front += 1
    back = front
    for i in range(m):
        if not critical[task_of[choice[facts[perm[i]]]]]:
            out[back] = perm[i]
            back += 1
    return out


@njit(cache=True, nogil=True)  # type: ignore[misc]
def needed_facts(tables, task_of, needed, facts):  # type: ignore[no-untyped-def]
    """Mark in ``needed`` the facts the decoded plan needs (its tasks' inputs and the criteria,
    initial facts excepted; ``task_of`` is the decode's); list in ``facts`` those with more than
    one producer (the facts a move can give another) and return their count."""
    (dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria,
     max_tasks) = tables
    nt = dur.shape[0]
    nf = initial.shape[0]
    for f in range(nf):
        needed[f] = False
    for t in range(nt):
        if task_of[t] >= 0:
            for q in range(in_ptr[t], in_ptr[t + 1]):
                g = in_idx[q]
                if not initial[g]:
                    needed[g] = True
    for c in range(criteria.shape[0]):
        if not initial[criteria[c]]:
            needed[criteria[c]] = True
    m = 0
    for f in range(nf):
        if needed[f] and prod_ptr[f + 1] - prod_ptr[f] > 1:
            facts[m] = f
            m += 1
    return m


@njit(cache=True, nogil=True)  # type: ignore[misc]
def move_scratch(tables):  # type: ignore[no-untyped-def]
    """The arrays :func:`apply_move` records a move in: one entry per fact the widest tool
    makes, plus the moved fact."""
    out_ptr = tables[5]
    widest = 1
    for t in range(out_ptr.shape[0] - 1):
        widest = max(widest, out_ptr[t + 1] - out_ptr[t] + 1)
    return np.empty(widest, dtype=np.int64), np.empty(widest, dtype=np.int64)


@njit(cache=True, nogil=True)  # type: ignore[misc]
def apply_move(tables, choice, f, p, needed, changed_f, changed_v):  # type: ignore[no-untyped-def]
    """The climbs' move: fact ``f`` gets producer ``p``, and so does every other needed fact
    ``p`` makes (swap-then-prune: the one tool replaces several). The facts changed and their
    old values go to ``changed_f``/``changed_v``; returns their count (see :func:`undo_move`)."""
    out_ptr, out_idx, initial = tables[5], tables[6], tables[9]
    changed_f[0], changed_v[0] = f, choice[f]
    count = 1
    choice[f] = p
    for z in range(out_ptr[p], out_ptr[p + 1]):
        g = out_idx[z]
        if needed[g] and not initial[g]:
            changed_f[count], changed_v[count] = g, choice[g]
            count += 1
            choice[g] = p
    return count


@njit(cache=True, nogil=True)  # type: ignore[misc]
def undo_move(choice, changed_f, changed_v, count):  # type: ignore[no-untyped-def]
    """Take back what :func:`apply_move` did: backwards, so a fact changed twice gets its
    first value back."""
    for z in range(count - 1, -1, -1):
        choice[changed_f[z]] = changed_v[z]


@njit(cache=True, nogil=True)  # type: ignore[misc]
def hill_climb(tables, choice, rng, max_evals, probe, near, bound=True):  # type: ignore[no-untyped-def]
    """First-improvement local search on the choice; returns ``(makespan, tasks, evaluations)``.

    A move gives one needed fact another producer and, in the same step,
    hands that producer every other needed fact it makes (swap-then-prune:
    the one tool replaces several). Needed facts are visited in a random
    order each pass; the search stops after a pass without improvement or
    after ``max_evals`` decodes.

    A choice's value is its schedule by the longest-path rule, unless ``probe``
    is positive: then a choice is also worth what a short priority search
    (``probe`` schedules) makes of it, since the best tool set under a
    greedy priority rule is often not the best one. Probing every move would
    cost ``probe`` times more, so only moves whose greedy schedule comes within
    ``near`` (a fraction) of the current value are probed; a greedy schedule
    already better needs no probe.

    With ``bound`` (the default) a move whose work bound already exceeds what it must reach
    to be kept (or probed) is not scheduled (see :func:`bounded_score`), decodes reset only
    what the last one marked (:func:`decode_into`) and a rejected move undoes only the facts
    it changed: the same climb, decision for decision, at a cost that follows the plan rather
    than the catalog; ``bound=False`` is the plain climb the tests hold it to.
    """
    (dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria,
     max_tasks) = tables
    nt = dur.shape[0]
    nf = initial.shape[0]
    task_of, order, color = decode_buffers(nt)
    ms, n = score(tables, choice, task_of, order, color)
    evals = 1
    if probe > 0 and ms < INFEASIBLE:
        polished, _ = priority_climb(tables, choice, rng, probe)
        evals += probe
        ms = min(ms, polished)
    saved = np.empty(nf, dtype=np.int64)
    changed_f, changed_v = move_scratch(tables)  # what a move changed, to undo only that
    stack_t = np.empty(nt + 1, dtype=np.int64)
    stack_q = np.empty(nt + 1, dtype=np.int64)
    prev = -1
    n_changed = 0
    needed = np.zeros(nf, dtype=np.bool_)
    facts = np.empty(nf, dtype=np.int64)
    improved = True
    while improved and evals < max_evals:
        improved = False
        if ms == INFEASIBLE:
            break
        cur_ms, cur_n, cur_start = schedule_choice(tables, choice, task_of, order, color, 0)
        prev = cur_n if cur_ms < INFEASIBLE else -1
        m = needed_facts(tables, task_of, needed, facts)
        perm = critical_first(tables, choice, task_of, order, cur_start, cur_ms, cur_n, facts, m, rng)
        for i in range(m):
            f = facts[perm[i]]
            if evals >= max_evals:
                break
            for q in range(prod_ptr[f], prod_ptr[f + 1]):
                p = prod_idx[q]
                if p == choice[f]:
                    continue
                if bound:
                    n_changed = apply_move(tables, choice, f, p, needed, changed_f, changed_v)
                    beat = max(ms, ms * (1.0 + near)) if probe > 0 else ms
                    ms2, n2, prev = bounded_score(tables, choice, task_of, order, color, beat,
                                                  stack_t, stack_q, prev)
                else:
                    saved[:] = choice
                    apply_move(tables, choice, f, p, needed, changed_f, changed_v)
                    ms2, n2 = score(tables, choice, task_of, order, color)
                evals += 1
                if probe > 0 and ms2 < INFEASIBLE and not better(ms2, n2, ms, n) \
                        and ms2 <= ms * (1.0 + near):
                    polished, _ = priority_climb(tables, choice, rng, probe)
                    evals += probe
                    ms2 = min(ms2, polished)
                if better(ms2, n2, ms, n):
                    ms, n = ms2, n2
                    improved = True
                    break
                if bound:
                    undo_move(choice, changed_f, changed_v, n_changed)
                else:
                    choice[:] = saved
                if evals >= max_evals:
                    break
            if improved:
                break
    return ms, n, evals


@njit(cache=True, nogil=True)  # type: ignore[misc]
def priority_climb(tables, choice, rng, max_evals):  # type: ignore[no-untyped-def]
    """The best schedule found for the choice's fixed task set by searching the priority:
    returns ``(makespan, starts)``, starts in decoded task order.

    Starting from the justified longest-path schedule, a move swaps the keys of two random
    tasks (the serial scheme still respects precedence, whatever the keys) and is kept when
    the justified schedule is no longer; sideways moves are kept so plateaus are crossed.
    """
    (dur, need, cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial, criteria,
     max_tasks) = tables
    nt = dur.shape[0]
    task_of, order, color = decode_buffers(nt)
    ms, n, best = schedule_choice(tables, choice, task_of, order, color, JUSTIFY_ROUNDS)
    if n < 2:
        return ms, best
    pred_ptr, pred_idx, succ_ptr, succ_idx = task_graph(tables, choice, order, task_of, n)
    dur_t, need_t = dur[order[:n]], need[order[:n]]
    key = rank_by(best)
    for _ in range(max_evals):
        a = rng.integers(0, n)
        b = rng.integers(0, n)
        if a == b:
            continue
        key[a], key[b] = key[b], key[a]
        start = serial_sgs(dur_t, need_t, cap, pred_ptr, pred_idx, succ_ptr, succ_idx, key)
        start = justify(dur_t, need_t, cap, pred_ptr, pred_idx, succ_ptr, succ_idx, start)
        ms2 = _makespan(start, dur_t)
        if ms2 <= ms + 1e-9:
            if ms2 < ms - 1e-9:
                best = start
            ms = ms2
            key = rank_by(start)
        else:
            key[a], key[b] = key[b], key[a]
    return ms, best
