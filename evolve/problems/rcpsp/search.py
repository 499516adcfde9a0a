"""Genetic search over activity lists with justification, counted in schedules.

The default algorithm is a bi-population genetic algorithm in the style of
Debels & Vanhoucke (2007), built from the operators the literature shows to
work for activity lists (Hartmann 1998; Valls, Ballestin & Quintanilla
2005/2008; Tormos & Lova 2003):

* two populations: left-justified schedules and right-justified ones (stored
  as left-justified schedules of the reversed project). A child of two
  parents of one population is decoded in the other, from a list sorted by
  the parents' finish times, so every child *is* a justification pass and
  costs one schedule, where applying FBI to every child costs three;
* initial population by regret-biased random sampling on latest finish times
  (LFT), decoded alternately by the serial and the parallel SGS, then
  right-justified;
* precedence-preserving block crossover of a tournament winner with the
  most different of three more (a near-copy of the first parent would give a
  child that is that parent decoded again): a run of the second parent's list,
  a stretch of its schedule, is cut whole into the first's order; shift mutation that keeps the
  list precedence-feasible, a share of children decoded by the parallel SGS,
  (mu + lambda) survival of schedules that differ from every better survivor
  in the start times of a sixth of the activities, a partial restart when the search
  stagnates (on projects above 40 activities the restarted individuals are
  shift-mutated neighbours of the kept elite, as in the second phase of
  Valls et al.'s hybrid GA; see :mod:`evolve.problems.rcpsp.intensify`), and extra
  forward-backward passes only for children close to the
  best (selective FBI, which paid off on j60/j120 but not on j30), ended as
  soon as a backward pass does not shorten the child;
* every backward pass of that polishing is a schedule of the parents' world,
  already paid for: the best of them compete in that world's next survival
  instead of being thrown away.

Schedules are counted as the literature does: every SGS run and every
justification pass is one schedule, and the search never exceeds the budget.
All randomness comes from one :class:`numpy.random.Generator` seeded with
``SeedSequence(seed)`` and passed into the numba kernels, so a seed fixes the
result.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, replace
from enum import IntEnum

import numpy as np

from evolve.problems.rcpsp.decode import new_profile, reset_profile, serial_kernel, sort_by_start
from evolve.problems.rcpsp.instance import IntArray, RcpspInstance, latest_finishes
from evolve.problems.rcpsp.instance import lower_bound as instance_bound
from evolve.problems.rcpsp.intensify import _bp_restart
from evolve.problems.rcpsp.kernels import (
    BIG,
    BLOCK,
    POLISH_OFF,
    TWO_POINT,
    GenerationParams,
    _bp_generation,
    _bp_init,
)
from evolve.problems.rcpsp.lists import _rbrs_list

_BIG = BIG

#: The instance as the tuple the kernels take.
Problem = tuple[IntArray, IntArray, IntArray, IntArray, IntArray, IntArray, IntArray]


class Crossover(IntEnum):
    """How a child's list is made from its two parents' (:mod:`evolve.problems.rcpsp.lists`)."""

    #: Hartmann's two-point crossover: the mother's head and tail, the father's order between
    TWO_POINT = TWO_POINT
    #: a run of the father's list (a stretch of his schedule) cut whole into the mother's order;
    #: beat two-point on j30, j60 and j120 at 1,000, 5,000 and 50,000 schedules
    BLOCK = BLOCK


@dataclass(frozen=True)
class GaParams:
    """Tunable GA settings; the defaults are what the PSPLIB runs use (each was measured against
    its alternatives on PSPLIB; the experiments that lost are listed in docs/psplib-seeds.md).
    :mod:`evolve.defaults` names this class as the home of these defaults."""

    pop_size: int | None = None  #: None: chosen from the schedule budget
    #: per-child probability of each shift move (None: 0.25 up to 10,000 schedules, 0.5
    #: beyond or with only a time budget; once survival keeps the population distinct, short
    #: runs gain from less mutation and 50,000-schedule runs do not)
    mutation_rate: float | None = None
    mutation_moves: int = 4
    restart_after: int = 6  #: generations without improvement before a partial restart
    keep_on_restart: float = 0.25  #: fraction of the population kept at a restart
    #: regret exponent of the biased sampling (None: 1 up to 40 activities,
    #: where a flatter bias gave more diverse restarts, else 2)
    rbrs_alpha: float | None = None
    pop_scale: float = 0.55  #: see :func:`default_pop_size`
    tournament_father: int = 2  #: tournament sizes for the two parents
    tournament_mother: int = 2
    #: the second parent is the most different (by list positions) of this many
    #: tournament winners (<= 1: a plain tournament)
    mate_pool: int = 3
    #: a survivor must start at least this share of the activities at other times than
    #: every better survivor (0: only exact copies are removed); near-copies otherwise
    #: crowd out the rest of the population in long runs
    distinct: float = 1 / 6
    tiebreak: bool = True  #: among equal makespans prefer the smaller sum of starts
    #: share of children decoded by the parallel SGS at the start; after each generation it
    #: follows how often each SGS's children beat the median (bounded to ``sgs_floor ..
    #: 1 - sgs_floor``; the counts decay by ``sgs_decay`` per generation)
    parallel_rate: float = 0.3
    sgs_floor: float = 0.1
    sgs_decay: float = 0.9
    crossover: Crossover = Crossover.BLOCK
    #: the adaptive mix's second decoder: < 0 the parallel SGS (non-delay schedules), else the
    #: delay-bounded SGS with this delay (between non-delay and active schedules); children
    #: only. j120 sample (150 instances, seeds 0-2) against the parallel SGS, with the serial
    #: one: delay 1 -0.14 / -0.16 at 1k / 5k, 2 -0.09 / -0.13, 4 -0.03 / +0.01. None: 1 up to
    #: 10,000 schedules, else 2 (j120 at 50k, 100 instances, seeds 0-2, with ``ser_delay`` 5:
    #: 2 -0.053 against 1, 3 +0.067 against 2; ``ser_delay`` 3 or 8 instead of 5 there: +0.002 /
    #: -0.004 with delay 1, 8 +0.132 with delay 2)
    par_delay: int | None = None
    #: the same for the mix's first decoder (< 0: the serial SGS, active schedules); with
    #: ``par_delay`` 1: delay 5 -0.21 / -0.10 against the serial SGS, 3 -0.19 / -0.06, 10 -0.11 / -0.01
    ser_delay: int = 5
    #: extra FBI on children within this of the best, ended as soon as a backward pass does
    #: not shorten the child (<= -1000: off; None: off up to 40 activities, else 3 up to
    #: 10,000 schedules and 10 beyond or with only a time budget, as tuned on PSPLIB)
    polish_slack: int | None = None
    #: the backward passes of polishing are schedules of the source world, already counted;
    #: the best of them, up to this share of the population, are kept and compete in that
    #: world's next survival (0: thrown away)
    recycle: float = 1.0
    children: float = 1.0  #: children per generation, as a fraction of the population
    #: share of restarted individuals that are neighbours of the elite
    #: (None: none up to 40 activities, where fresh samples did better, else all)
    restart_near: float | None = None
    restart_moves: int = 4  #: shift moves that make such a neighbour


@dataclass(frozen=True)
class RcpspResult:
    """Best schedule found, with the effort spent on it."""

    makespan: int
    starts: IntArray
    activity_list: IntArray
    schedules_used: int
    seconds: float


def finishes(inst: RcpspInstance, result: RcpspResult) -> IntArray:
    """Finish time of every activity of a result."""
    return result.starts + inst.durations  # type: ignore[no-any-return]


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def default_pop_size(schedules: int | None, n: int, scale: float = 0.55) -> int:
    """Population size for a schedule budget and ``n`` activities, within 10..100.

    Small budgets need a small population to leave room for generations,
    large ones gain from diversity. Tuned on PSPLIB: small projects (j30)
    did best with budget / 60 (17 at 1,000 schedules, 83 at 5,000), larger
    ones with ``scale * sqrt(budget)`` (17 at 1,000, 39 at 5,000 on j120).
    Without a schedule budget: 120 (on j120 at 1 s per instance, about
    40,000 schedules, 120 beat 50, 80 and 160 once restarts reuse the elite).
    """
    if schedules is None:
        return 120
    size = schedules / 60 if n <= 40 else scale * schedules**0.5
    return int(min(100, max(10, round(size))))


def _resolve(p: GaParams, n: int, budget: int) -> GaParams:
    """Fill the size- and budget-dependent defaults (see the field comments of
    :class:`GaParams`); they were tuned per instance size and budget on PSPLIB.
    ``budget`` is the schedule cap, or more than 10,000 with only a time budget."""
    short = budget <= 10_000
    alpha = p.rbrs_alpha if p.rbrs_alpha is not None else (1.0 if n <= 40 else 2.0)
    near = p.restart_near if p.restart_near is not None else (0.0 if n <= 40 else 1.0)
    # polishing hurts j30 and helps j60/j120, more so with more budget
    polish = p.polish_slack if p.polish_slack is not None else (POLISH_OFF if n <= 40 else 3 if short else 10)
    mutation = p.mutation_rate if p.mutation_rate is not None else (0.25 if short else 0.5)
    delay = p.par_delay if p.par_delay is not None else (1 if short else 2)
    return replace(p, rbrs_alpha=alpha, restart_near=near, polish_slack=polish, mutation_rate=mutation,
                   par_delay=delay)


def solve(
    inst: RcpspInstance,
    *,
    schedules: int | None = None,
    seconds: float | None = None,
    seed: int = 0,
    lower_bound: int | None = None,
    params: GaParams | None = None,
) -> RcpspResult:
    """Minimise the makespan of ``inst`` within a budget.

    ``schedules`` caps generated schedules (SGS runs and justification
    passes), ``seconds`` caps wall time; at least one must be given and the
    search stops at whichever runs out first, or as soon as the makespan
    reaches ``lower_bound`` (default: the larger of the critical-path and the
    resource-energy bound, computed here), since nothing can beat a lower bound.
    The engine's ``evolve run x.sm`` drives the same :class:`BiPopulationGA` one
    generation at a time.
    """
    if schedules is None and seconds is None:
        raise ValueError("give a schedule budget, a time budget, or both")
    t0 = time.perf_counter()
    deadline = t0 + seconds if seconds is not None else None
    ga = BiPopulationGA(inst, schedules=schedules, seed=seed, lower_bound=lower_bound, params=params)
    while not ga.done() and (deadline is None or time.perf_counter() < deadline):
        ga.step()
    return ga.result(time.perf_counter() - t0)


class BiPopulationGA:
    """Bi-population GA (Debels & Vanhoucke) as a state that advances one generation per
    :meth:`step`: world 0 holds left-justified schedules, world 1 right-justified ones (stored
    mirrored: the reversed project's left-justified schedules); children of one world are
    decoded in the other, so each child costs one schedule and is a justification.

    The whole state is plain arrays, counters and the random generator (``CHECKPOINT_STATE``:
    a checkpoint holds it as plain data and resumes exactly). ``schedules`` is a hard cap (the
    kernels stop inside a generation when it runs out; ``None``: no cap).
    """

    CHECKPOINT_STATE = True

    def __init__(self, inst: RcpspInstance, *, schedules: int | None = None, seed: int = 0,
                 lower_bound: int | None = None, params: GaParams | None = None) -> None:
        if schedules is not None and schedules < 1:
            raise ValueError("schedules must be at least 1")
        # one schedule is kept for the final decode that makes list and schedule agree
        self.budget = schedules - 1 if schedules is not None else 1 << 62
        p = _resolve(params or GaParams(), inst.n, self.budget)
        self.inst = inst
        self.params = p
        self.lb = instance_bound(inst) if lower_bound is None else lower_bound
        self.rng = np.random.default_rng(np.random.SeedSequence(seed))
        n = inst.n
        self.prio = latest_finishes(inst).astype(np.float64)
        self.npop = p.pop_size or default_pop_size(schedules, n, p.pop_scale)
        self.weights = self.rng.integers(1, 1 << 20, size=n, dtype=np.int64)
        self.pop_l = np.empty((2, self.npop, n), dtype=np.int64)
        self.pop_s = np.empty((2, self.npop, n), dtype=np.int64)
        self.pop_ms = np.full((2, self.npop), _BIG, dtype=np.int64)
        self.used = 0
        self.stale = 0
        self.src = 1
        self.generation = 0
        self.par_rate = p.parallel_rate
        self.sgs_stats = np.zeros(4, dtype=np.float64)
        # polishing by-products per world, waiting for that world's next survival
        spare = round(p.recycle * self.npop)
        self.spare_l = np.empty((2, spare, n), dtype=np.int64)
        self.spare_s = np.empty((2, spare, n), dtype=np.int64)
        self.spare_ms = np.full((2, spare), _BIG, dtype=np.int64)
        avail = self.profile()
        if self.budget == 0:
            lst = np.empty(n, dtype=np.int64)
            _rbrs_list(self.rng, inst.arrays, self.prio, p.rbrs_alpha, lst)
            self.best_ms, self.best_s, self.best_l = int(_BIG), np.zeros(n, dtype=np.int64), lst
            return
        self.used = int(_bp_init(self.rng, inst.arrays, self.mirror(), self.prio, p.rbrs_alpha, avail,
                                 self.budget, self.pop_l, self.pop_s, self.pop_ms, 0))
        self.best_ms, w, b = self.best()
        self.best_s, self.best_l = self.snapshot(w, b)

    def snapshot_state(self) -> BiPopulationGA:
        """A copy for a checkpoint that the next generations leave alone: the arrays changed in
        place (the two worlds, the polishing spares, the decoders' counts) and the random
        generator are copied; the instance, priorities and weights, never changed, are shared."""
        copied = copy.copy(self)
        for name in ("pop_l", "pop_s", "pop_ms", "spare_l", "spare_s", "spare_ms", "sgs_stats"):
            setattr(copied, name, getattr(self, name).copy())
        copied.rng = copy.deepcopy(self.rng)
        return copied

    def profile(self) -> IntArray:
        """A fresh resource profile (scratch space of the kernels; not part of the state)."""
        return new_profile(self.inst.horizon, self.inst.capacities)  # type: ignore[no-any-return]

    def mirror(self) -> Problem:
        dur, dem, cap, pp, pi, sp, si = self.inst.arrays
        return (dur, dem, cap, sp, si, pp, pi)

    def done(self) -> bool:
        """Out of schedules, or at the lower bound (nothing can beat it)."""
        return self.used >= self.budget or self.best_ms <= self.lb

    def best(self) -> tuple[int, int, int]:
        w = int(self.pop_ms.min(axis=1).argmin())
        b = int(self.pop_ms[w].argmin())
        return int(self.pop_ms[w, b]), w, b

    def snapshot(self, w: int, b: int) -> tuple[IntArray, IntArray]:
        ms = int(self.pop_ms[w, b])
        lst = np.empty(self.inst.n, dtype=np.int64)
        if w == 0:
            st = self.pop_s[0, b].copy()
            sort_by_start(st, self.pop_l[0, b][::-1].copy(), lst)
        else:
            st = ms - self.pop_s[1, b] - self.inst.durations
            sort_by_start(st, self.pop_l[1, b].copy(), lst)
        return st, lst

    def step(self) -> None:
        """One generation (or a partial restart after ``restart_after`` stale ones)."""
        p, inst = self.params, self.inst
        pop_l, pop_s, pop_ms = self.pop_l, self.pop_s, self.pop_ms
        for q in range(2):
            order = np.argsort(pop_ms[q], kind="stable")
            pop_l[q], pop_s[q], pop_ms[q] = pop_l[q][order], pop_s[q][order], pop_ms[q][order]
        avail = self.profile()
        src, tgt = self.src, 1 - self.src
        left = self.budget - self.used
        if self.stale >= p.restart_after:
            keep = max(1, int(self.npop * p.keep_on_restart))
            self.used += int(_bp_restart(
                self.rng, inst.arrays, self.mirror(), self.prio, p.rbrs_alpha, avail, left,
                pop_l, pop_s, pop_ms, keep, p.restart_near, p.restart_moves))
            self.stale = 0
        else:
            self.used += int(_bp_generation(
                self.rng, inst.arrays if tgt == 0 else self.mirror(), avail, left,
                (pop_l[src], pop_s[src], pop_ms[src]), (pop_l[tgt], pop_s[tgt], pop_ms[tgt]),
                (self.spare_l, self.spare_s, self.spare_ms), src, self.weights, self.sgs_stats,
                self.kernel_params()))
            self.src = tgt
            self.adapt_sgs()
        self.generation += 1
        ms, w, b = self.best()
        if ms < self.best_ms:
            self.best_ms = ms
            self.best_s, self.best_l = self.snapshot(w, b)
            self.stale = 0
        else:
            self.stale += 1

    def kernel_params(self) -> GenerationParams:
        """This generation's settings as the kernel's typed record."""
        p = self.params
        assert p.mutation_rate is not None and p.polish_slack is not None  # filled by _resolve
        assert p.par_delay is not None
        return GenerationParams(
            mut_rate=float(p.mutation_rate), mut_moves=int(p.mutation_moves),
            tour_father=int(p.tournament_father), tour_mother=int(p.tournament_mother),
            mate_pool=int(p.mate_pool), crossover=int(p.crossover), par_rate=float(self.par_rate),
            polish=int(p.polish_slack), child_frac=float(p.children), tiebreak=bool(p.tiebreak),
            distinct=max(1, round(p.distinct * self.inst.n)),
            par_delay=int(p.par_delay), ser_delay=int(p.ser_delay))

    def adapt_sgs(self) -> None:
        """Share of parallel-SGS children in proportion to each decoder's recent success
        rate (Laplace-smoothed), so instances where non-delay schedules pay get more of them."""
        p, st = self.params, self.sgs_stats
        lo, hi = p.sgs_floor, 1.0 - p.sgs_floor
        serial = (st[1] + 1.0) / (st[0] + 2.0)
        parallel = (st[3] + 1.0) / (st[2] + 2.0)
        self.par_rate = float(min(hi, max(lo, parallel / (serial + parallel))))
        st *= p.sgs_decay

    def result(self, seconds: float) -> RcpspResult:
        """Decode the best schedule's start-sorted list once more (one counted schedule): the
        result starts no activity later, and the reported list decodes exactly to it."""
        dur, dem, cap, pred_ptr, pred_idx, _, _ = self.inst.arrays
        avail = self.profile()
        lst = np.empty(dur.shape[0], dtype=np.int64)
        sort_by_start(self.best_s, self.best_l, lst)
        out = np.empty(dur.shape[0], dtype=np.int64)
        ms = int(serial_kernel(lst, dur, dem, pred_ptr, pred_idx, avail, out))
        reset_profile(avail, cap, ms)
        return RcpspResult(ms, out, lst, self.used + 1, seconds)
