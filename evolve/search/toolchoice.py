"""Tool-choice search: greedy plans and the local improvement of every child, on the compiled problem.

The structural operators edit task graphs one task at a time and pay a full
evaluation per edit. Most of a plan's makespan, though, is decided by which
tool makes each fact, and that is a small integer genome (one producer per
fact) that the kernels of :mod:`evolve.search.toolchoice_kernels` decode and
schedule in microseconds. This module is the bridge: it reads the producer
choice out of any plan, improves it by hill-climbing with the compiled
scheduler, and writes the result back as an ordinary :class:`Plan`, whose
``priority`` is the order the kernel scheduled it in (so the evaluator's
scheduler reproduces the kernel's schedule exactly).

It applies to plans built from the catalog alone: a problem with a template
keeps the structural operators, since a template's tasks may carry
conditions and literal inputs that a producer choice does not describe.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evolve import defaults
from evolve.model.compiled import CompiledProblem, compile_problem, csr
from evolve.model.keys import write_key
from evolve.model.plan import Plan, Task, parse_ref
from evolve.model.problem import Problem
from evolve.model.validate import bound_object, may_collide
from evolve.search import anneal_kernels
from evolve.search import toolchoice_kernels as k
from evolve.search.operators import thread_safe

FINAL_ROUNDS = 5
"""Forward-backward passes for the schedule a decoded plan's priority is read from."""

KICK_WEIGHT = 3.0
"""The kick's weight among the structural mutations (which weigh 0.5-2 each)."""

MADE_TASKS = 20_000
"""How many tasks :attr:`ToolChoice.made` keeps before it starts over (a bound on its memory)."""

GREEDY_RULES = ("earliest_finish", "least_work", "bottleneck")
"""The greedy initializers, tried first; later initial plans add random noise."""


def kernel_tables(cp: CompiledProblem) -> tuple[Any, ...]:
    """The kernels' tuple, with the approval pseudo-fact (index ``len(cp.facts)``) appended."""
    nf, nt = len(cp.facts), len(cp.tools)
    approval = nf
    inputs = [list(cp.inputs(t)) for t in range(nt)]
    for t in range(nt):
        if cp.gated[t]:
            inputs[t].append(approval)
    outputs = [list(cp.outputs(t)) for t in range(nt)]
    for t in range(nt):
        if cp.risk[t] == 2:
            outputs[t].append(approval)
    producers: list[list[int]] = [list(cp.producers(f)) for f in range(nf)]
    producers.append([t for t in range(nt) if cp.risk[t] == 2 and cp.granted[t]])
    in_ptr, in_idx = csr(inputs)
    out_ptr, out_idx = csr(outputs)
    prod_ptr, prod_idx = csr(producers)
    initial = np.append(cp.initial, False)
    return (cp.dur, cp.need, cp.cap, in_ptr, in_idx, out_ptr, out_idx, prod_ptr, prod_idx, initial,
            cp.criteria, cp.max_tasks)


@dataclass
class ToolChoice:
    """The tool-choice search of one problem: compiled once, used by the initializer and improver.

    ``max_evals`` bounds the decodes one tool-choice climb may spend (each is a
    decode plus a schedule and its justification on the compiled kernel);
    ``priority_evals`` the schedules of the priority search that follows it;
    ``probe`` and ``near`` how promising moves are valued by a short priority
    search (see :func:`~evolve.search.toolchoice_kernels.hill_climb`), which is
    switched off for problems whose plans exceed ``CHOICE_PROBE_MAX_TASKS``; ``anneal_evals``
    the moves of the annealing on work that replaces the climb of the first plans of problems
    whose greedy plan exceeds ``ANNEAL_MIN_TASKS`` tasks and that have a limited resource (0:
    none; capped at ``ANNEAL_TASK_MOVES`` per task of the greedy plan and ``ANNEAL_TASK_EVALS``
    over its tasks).
    """

    problem: Problem
    max_evals: int = defaults.CHOICE_EVALS
    priority_evals: int = defaults.PRIORITY_EVALS
    probe: int = defaults.CHOICE_PROBE
    near: float = defaults.CHOICE_NEAR
    anneal_evals: int = defaults.ANNEAL_EVALS
    compiled: CompiledProblem = field(init=False)
    tables: tuple[Any, ...] = field(init=False, repr=False)
    base: Any = field(init=False, repr=False)
    made: dict[tuple[Any, ...], Task] = field(init=False, repr=False, compare=False)
    """The tasks :meth:`plan_of` made, by what they are made of: a child shares about half its
    tasks with the plans before it, and handing back the same object lets everything kept on a
    task (its canonical text, its compiled record, its checkpoint encoding) be reused. Shared by
    the development threads, which only ever add equal tasks (the worst race makes a duplicate);
    emptied at :data:`MADE_TASKS` entries, and never pickled."""
    writes: list[str | None] = field(init=False, repr=False)
    """Per tool, the object its writes name (``Tool.writes``), ``None`` for a tool that names
    none: two writes that may meet are ordered (validator rule ``write-order``)."""
    fact_id: dict[str, int] = field(init=False, repr=False)
    tool_id: dict[str, int] = field(init=False, repr=False)
    """The compiled problem's name maps, built once (every child reads its plan through them;
    built per call they cost more than the reading at 20,000 tools)."""

    def __post_init__(self) -> None:
        self.made = {}
        self.compiled = self.problem.derived(compile_problem)  # the one the fitnesses read too
        self.fact_id, self.tool_id = self.compiled.fact_id, self.compiled.tool_id
        self.writes = [tool.writes if tool.risk == "write" else None for tool in self.problem.tools.values()]
        self.tables = kernel_tables(self.compiled)
        nt = len(self.compiled.tools)
        self.base = self.greedy("earliest_finish")
        size = int(k.decode(self.tables, self.base, *k.decode_buffers(nt)))
        if size > defaults.CHOICE_PROBE_MAX_TASKS:
            self.probe = 0
        limited = bool(np.any(np.isfinite(self.compiled.cap) & (self.compiled.cap > 0)))
        if size <= defaults.ANNEAL_MIN_TASKS or not limited:
            self.anneal_evals = 0
        else:
            self.anneal_evals = min(self.anneal_evals, defaults.ANNEAL_TASK_MOVES * size,
                                    defaults.ANNEAL_TASK_EVALS // size)

    def __getstate__(self) -> dict[str, Any]:
        """Without the tasks made so far: a worker starts with none (they are only a cache)."""
        state = dict(self.__dict__)
        state["made"] = {}
        return state

    @staticmethod
    def applies_to(problem: Problem) -> bool:
        """Whether plans of ``problem`` are built from the catalog alone (no template)."""
        return problem.template is None and bool(problem.criteria)

    # -- the genome --------------------------------------------------------------------------

    def greedy(self, rule: str, rng: np.random.Generator | None = None, noise: float = 0.0) -> Any:
        """A producer per fact by one of :data:`GREEDY_RULES`, durations jittered by ``noise``."""
        cp = self.compiled
        weight = cp.dur.copy()
        if rule == "bottleneck":
            load = cp.need[:, 1:] / np.where(cp.cap[1:] > 0, cp.cap[1:], 1.0)
            slot = 1.0 / cp.cap[0] if np.isfinite(cp.cap[0]) else 0.0
            pressure = np.maximum(load.max(axis=1, initial=0.0), slot)
            weight = weight * (1.0 + 2.0 * pressure)
        if rng is not None and noise > 0:
            weight = weight * (1.0 + noise * rng.random(weight.shape[0]))
        return self.without_spare_producers(k.greedy_choice(self.tables, weight, rule == "least_work"))

    def without_spare_producers(self, choice: Any) -> Any:
        """``choice`` without a producer that makes only criteria no task reads, each of which
        another producer in the plan makes too (those criteria take that producer).

        The greedy rule picks each fact's cheapest producer on its own, so a criterion can get a
        tool of its own although a tool the plan runs anyway makes it: a task nothing needs.
        Nobody reads what moves, so no task starts later. Tools are looked at in decoding
        order and the first other maker is taken: deterministic.
        """
        cp = self.compiled
        nt = len(cp.tools)
        task_of, order, color = k.decode_buffers(nt)
        criteria = [int(f) for f in cp.criteria]
        approval = len(cp.facts)  # the choice's entry for the approver of the plan's writes
        while True:
            n = int(k.decode(self.tables, choice, task_of, order, color))
            if n < 0:
                return choice
            used = [int(t) for t in order[:n]]
            # per pass, one index each (a scan per tool made this quadratic in the plan's size):
            # the tools some read fact is chosen from, each tool's criteria, each fact's first
            # two makers among the used tools (in decoding order)
            read_from = {int(choice[f]) for t in used for f in cp.inputs(t)}
            mine_of: dict[int, list[int]] = {}
            for f in criteria:
                mine_of.setdefault(int(choice[f]), []).append(f)
            first_makers: dict[int, list[int]] = {}
            for u in used:
                for f in dict.fromkeys(cp.outputs(u).tolist()):
                    makers_f = first_makers.setdefault(f, [])
                    if len(makers_f) < 2:
                        makers_f.append(u)
            approver = (int(choice[approval]) if approval < len(choice)
                        and any(cp.gated[u] for u in used) else -1)
            for t in used:
                mine = mine_of.get(t, [])
                if not mine or t == approver or t in read_from:
                    continue
                makers = [next((u for u in first_makers.get(f, ()) if u != t), -1) for f in mine]
                if min(makers) >= 0:
                    for f, u in zip(mine, makers):
                        choice[f] = u
                    break
            else:
                return choice

    def choice_of(self, plan: Plan) -> Any:
        """The producer choice a plan makes: for each fact, the tool of the task its readers
        read it from (else the first task making it); facts it does not make keep the greedy
        earliest-finish producer, so any plan, even a broken one, maps to a complete choice."""
        cp = self.compiled
        fact_id, tool_id = self.fact_id, self.tool_id
        choice = self.base.copy()
        tool_of = {t.id: tool_id.get(t.tool, -1) for t in plan.tasks}
        set_by_plan = np.zeros(choice.shape[0], dtype=np.bool_)
        for task in plan.tasks:
            for value in task.inputs.values():
                ref = parse_ref(value)
                if ref is None or ref.task is None:
                    continue
                f, t = fact_id.get(ref.fact), tool_of.get(ref.task, -1)
                if f is not None and t >= 0 and cp.granted[t] and not set_by_plan[f] \
                        and f in cp.outputs(t):
                    choice[f], set_by_plan[f] = t, True
        for task in plan.tasks:
            t = tool_of.get(task.id, -1)
            if t < 0 or not cp.granted[t]:
                continue
            for f in cp.outputs(t):
                if not set_by_plan[f]:
                    choice[f], set_by_plan[f] = t, True
        return choice

    def climb(self, choice: Any, rng: np.random.Generator) -> tuple[float, int]:
        """Improve ``choice`` in place; ``(makespan, tasks)`` of the result."""
        ms, n, _ = k.hill_climb(self.tables, choice, rng, self.max_evals, self.probe, self.near)
        return float(ms), int(n)

    def anneal(self, choice: Any, rng: np.random.Generator, evals: int | None = None,
               start: float = defaults.ANNEAL_START) -> tuple[float, int]:
        """Anneal ``choice`` in place on its work (see
        :func:`~evolve.search.anneal_kernels.work_anneal`) for ``evals`` moves (default
        ``anneal_evals``) from temperature ``start``; ``(floor, tasks)`` of the result."""
        moves = self.anneal_evals if evals is None else min(evals, self.anneal_evals)
        floor, n, _ = anneal_kernels.work_anneal(self.tables, choice, rng, moves, start, defaults.ANNEAL_END,
                                    defaults.ANNEAL_REFRESH, defaults.ANNEAL_FLOOR)
        return float(floor), int(n)

    def polish(self, choice: Any, rng: np.random.Generator) -> Any:
        """The starts of the best schedule a priority search finds for the choice's tasks."""
        _, start = k.priority_climb(self.tables, choice, rng, self.priority_evals)
        return start

    def plan_of(self, choice: Any, start: Any = None) -> Plan | None:
        """The plan a choice decodes to, tasks in topological order, priority = the kernel's
        scheduling order; ``None`` when it decodes to no plan (a cycle, a fact without producer)."""
        cp = self.compiled
        nt = len(cp.tools)
        task_of, order, color = k.decode_buffers(nt)
        n = int(k.decode(self.tables, choice, task_of, order, color))
        if n < 0:
            return None
        pred_ptr, pred_idx, _, _ = k.task_graph(self.tables, choice, order, task_of, n)
        if start is None:
            _, _, start = k.schedule_choice(self.tables, choice, task_of, order, color, FINAL_ROUNDS)
        ids = [f"t{i + 1}" for i in range(n)]
        approval_fact = len(cp.facts)
        made = self.made
        tasks = []
        written: list[tuple[str, str]] = []  # (task, object) of the writes so far
        for pos in range(n):
            t = int(order[pos])
            inputs: dict[str, str] = {}
            for f in cp.inputs(t):
                fact = cp.facts[f]
                inputs[fact] = f"${fact}" if cp.initial[f] else f"${ids[task_of[choice[f]]]}.{fact}"
            deps = [ids[int(p)] for p in pred_idx[pred_ptr[pos]:pred_ptr[pos + 1]]]
            write = cp.risk[t] == 1
            if cp.gated[t]:
                approver = ids[task_of[choice[approval_fact]]]
                deps = [*(d for d in deps if d != approver), approver] if approver not in deps else deps
            writes = self.writes[t]
            if writes is not None:  # rule write-order: after every earlier write of the same object
                obj = bound_object(writes, inputs)
                deps += [tid for tid, other in written if may_collide(obj, other)]
                written.append((ids[pos], obj))
            unique = tuple(dict.fromkeys(deps))
            key = (pos, t, unique, *inputs.values())
            task = made.get(key)
            if task is None:
                name = cp.tools[t]
                spec = self.problem.tools[name]
                task = Task(id=ids[pos], tool=name, deps=unique, inputs=inputs,
                            idempotency_key=write_key(spec) if write else None,
                            on_failure=spec.on_failure, retries=spec.retries)
                if len(made) >= MADE_TASKS:
                    made.clear()
                made[key] = task
            tasks.append(task)
        # serial SGS on the list sorted by start reproduces a schedule at least as short
        priority = tuple(ids[int(i)] for i in np.lexsort((np.arange(n), start)))
        return Plan(tasks=tuple(tasks), priority=priority)

    # -- as operators ------------------------------------------------------------------------

    def warm(self, problem: Problem) -> Plan | None:
        """One development at the smallest budgets (one move of each search, from the greedy
        choice, on a stream of its own), so that every kernel a child's development calls is
        loaded; the plan it makes is for the caller to score, which loads the scoring's kernels
        (see :attr:`~evolve.search.operators.OperatorSet.warm`). In the order the first plans
        call them (see :meth:`greedy_initial`), so that it never holds numba's lock while they
        wait for a kernel it could have left for later."""
        rng = np.random.default_rng(0)
        choice = self.base.copy()
        if self.anneal_evals > 0:
            self.anneal(choice, rng, 1)
        else:
            k.hill_climb(self.tables, choice, rng, 1, self.probe, self.near)
        _, start = k.priority_climb(self.tables, choice, rng, 1)
        made = self.plan_of(choice, start)
        self.plan_of(choice)  # the kick's plans are scheduled by the kernel's own pass
        if self.anneal_evals > 0:
            k.hill_climb(self.tables, choice, rng, 1, self.probe, self.near)
        return made

    @thread_safe
    def greedy_initial(self, problem: Problem, rng: np.random.Generator) -> Plan:
        """A greedy plan, rule and jitter drawn from the stream; hill-climbed three times in
        four (climbs from different starts often meet in one optimum: the unclimbed quarter
        keeps the first population diverse).

        On problems whose plans are too big for the probing climb (``anneal_evals`` > 0) it is
        annealed on its work instead and only its priority searched: there the slots are the
        bottleneck, the schedule is the work, and a climb on greedy schedules would trade work
        for a better greedy schedule (on the generated 300- and 1,000-fact problems of
        ``benchmarks/gap_to_bound.py`` these plans alone come within 0-1.5 % of the proven
        bound, where the climbed ones stop 3-5 % above it)."""
        rule = GREEDY_RULES[int(rng.integers(len(GREEDY_RULES)))]
        noise = float(rng.choice([0.0, 0.3, 1.0]))
        choice = self.greedy(rule, rng, noise)
        if self.anneal_evals > 0:
            self.anneal(choice, rng)
            return self.plan_of(choice, self.polish(choice, rng)) or Plan()
        if rng.random() < 0.25:
            return self.plan_of(choice) or Plan()
        self.climb(choice, rng)
        return self.plan_of(choice, self.polish(choice, rng)) or Plan()

    def kick(self, problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
        """Give a few random needed facts a random other producer (the kick of an iterated local
        search: the improvement that follows climbs from somewhere the parent's climb could not
        reach). ``None`` when no fact has an alternative or the kick breaks the plan."""
        choice = self.choice_of(plan)
        cp = self.compiled
        prod_ptr = self.tables[7]
        open_facts = [f for f in range(len(cp.facts) + 1)
                      if choice[f] >= 0 and prod_ptr[f + 1] - prod_ptr[f] > 1]
        if not open_facts:
            return None
        strength = 1 + int(rng.integers(max(2, len(open_facts) // 20)))
        for f in rng.choice(open_facts, size=min(strength, len(open_facts)), replace=False):
            options = self.tables[8][prod_ptr[f]:prod_ptr[f + 1]]
            choice[f] = int(options[int(rng.integers(len(options)))])
        return self.plan_of(choice)

    @thread_safe
    def improve(self, problem: Problem, plan: Plan, rng: np.random.Generator) -> Plan | None:
        """``plan``'s producer choice, hill-climbed (or, on problems whose first plans are
        annealed, annealed short and cool on its work half the time: the climb keeps the
        schedules the work alone does not see) and decoded; ``None`` if it decodes to none."""
        choice = self.choice_of(plan)
        if self.anneals(rng):
            self.anneal(choice, rng, defaults.ANNEAL_IMPROVE_EVALS, defaults.ANNEAL_IMPROVE_START)
        else:
            self.climb(choice, rng)
        return self.plan_of(choice, self.polish(choice, rng))

    def anneals(self, rng: np.random.Generator) -> bool:
        """Whether :meth:`improve` anneals the child of stream ``rng`` (its first draw there)
        rather than climb it."""
        return self.anneal_evals > 0 and rng.random() < defaults.ANNEAL_IMPROVE_SHARE

    def kind(self, problem: Problem, plan: Plan | None, rng: np.random.Generator) -> str:
        """The development a child will get, read from a copy of its stream: a first plan, a
        short anneal or a climb (see :attr:`~evolve.search.operators.OperatorSet.kind`)."""
        if plan is None:
            return "initial"
        return "anneal" if self.anneals(copy.deepcopy(rng)) else "climb"
