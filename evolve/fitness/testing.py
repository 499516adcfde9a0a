"""The conformance check for fitness plugins.

A plugin author proves their objective keeps the contract with one test::

    from evolve.fitness.testing import check_fitness
    from my_objectives import dollars

    def test_dollars_keeps_the_fitness_contract() -> None:
        check_fitness(dollars)

The check runs the function over many generated problems and plans (valid ones,
broken ones and mutations of both) because the engine will: a search spends
most of its time on plans that are wrong in some way, and an objective that only
works on tidy plans fails there. The strategies build their own problems, so a
test never depends on a particular problem file; they live in
:mod:`evolve.fitness.strategies` and are re-exported here.
"""

from __future__ import annotations

import copy
import json
import math
import pickle
import sys
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from evolve import defaults
from evolve.fitness.base import Context, Fitness, FitnessError, as_fitness

# The strategies, re-exported: every name that was public here before they moved keeps working.
from evolve.fitness.strategies import (  # noqa: F401
    BREAKERS,
    COSTS,
    DURATIONS,
    RESOURCES,
    SCOPES,
    Breaker,
    break_cycle,
    break_dropped_data_dep,
    break_duplicate_id,
    break_idempotency,
    break_missing_dep,
    break_priority,
    break_scope,
    break_self_dep,
    break_unbound_input,
    break_unknown_tool,
    cases,
    fresh_id,
    invalid_plans,
    mutations,
    pick,
    plans,
    problem_dicts,
    problems,
    put,
    reachable_facts,
    record,
    referenced_ids,
    rename_ids,
    renamings,
    valid_plans,
    without_task,
)
from evolve.model.plan import Plan
from evolve.model.problem import Problem


class ConformanceError(AssertionError):
    """A fitness function broke the contract; the message names the rule and the function."""


# --- the conformance check ------------------------------------------------------------------


def check_fitness(fn: Callable[..., float] | Fitness, *,
                  problem_strategy: st.SearchStrategy[Problem] | None = None,
                  max_examples: int = defaults.CHECK_FITNESS_EXAMPLES, worker: bool = True,
                  worker_cases: int = defaults.CHECK_FITNESS_WORKER_CASES,
                  executor: Executor | None = None, rel_tol: float = 0.0,
                  shrink: bool = True) -> Fitness:
    """Check that ``fn`` keeps the fitness contract; raise :class:`ConformanceError` if not.

    Over ``max_examples`` generated (problem, plan) pairs: the value is a finite
    number in the declared range; the problem, the plan and the shared context
    are left exactly as they were; a second call on deep copies gives the same
    value; renaming every task id gives the same value. Then the function must
    pickle by reference and, when ``worker`` is true, give the same values for
    ``worker_cases`` of those pairs in a fresh worker process (by default a
    joblib loky worker, the engine's own backend; pass ``executor`` to use
    another, e.g. a ``ProcessPoolExecutor``). Values are compared exactly unless
    ``rel_tol`` is set: the engine promises the same result for any ``--jobs``.
    ``shrink=False`` reports the first failing case as found instead of the
    smallest one, which is faster when only pass or fail matters.
    Returns the checked :class:`Fitness`.
    """
    fit = fn if isinstance(fn, Fitness) else conforming(fn)
    check_pickles(fit)
    passed: list[tuple[Problem, Plan, float]] = []

    phases = tuple(p for p in Phase if shrink or p not in (Phase.shrink, Phase.explain))

    @settings(max_examples=max_examples, deadline=None, phases=phases, suppress_health_check=[
        HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
    @given(case=cases(problem_strategy), data=st.data())
    def conforms(case: tuple[Problem, Plan], data: st.DataObject) -> None:
        problem, plan = case
        mapping = data.draw(renamings(problem, plan), label="renaming")
        passed.append((problem, plan, check_case(fit, problem, plan, mapping, rel_tol)))

    try:
        conforms()
    except Flaky as exc:
        raise ConformanceError(
            f"{fit.label} failed on an input and then passed on the same input: "
            f"it is not deterministic ({exc})") from exc
    if worker:
        check_in_worker(fit, passed[-worker_cases:], executor, rel_tol)
    return fit


def conforming(fn: Callable[..., float]) -> Fitness:
    """Wrap a marked function as the engine would; an unmarked one fails the check."""
    source = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
    try:
        return as_fitness(fn, source=source)
    except FitnessError as exc:
        raise ConformanceError(str(exc)) from None


def check_pickles(fit: Fitness) -> None:
    """Workers receive the function pickled, by reference, with the standard library's pickle."""
    try:
        restored = pickle.loads(pickle.dumps(fit))
    except Exception as exc:
        raise ConformanceError(
            f"{fit.label} does not pickle ({type(exc).__name__}: {exc}): define it with "
            f"def at module level, not as a lambda, a closure or a method") from None
    if restored.spec != fit.spec:
        raise ConformanceError(f"{fit.label} loses its @fitness spec when pickled")


def snapshot(value: object) -> bytes:
    """Bytes that change when anything reachable from ``value`` changes."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def describe(plan: Plan) -> str:
    text = json.dumps(plan.to_dict(), sort_keys=True, default=str)
    return text if len(text) <= 400 else text[:397] + "..."


def same(a: float, b: float, rel_tol: float) -> bool:
    return a == b or (rel_tol > 0 and math.isclose(a, b, rel_tol=rel_tol))


def score(fit: Fitness, problem: Problem, plan: Plan, context: Context | None = None) -> float:
    """One call as the engine makes it, a contract violation turned into a failed check."""
    try:
        return fit(problem, plan, Context(problem, plan) if context is None else context)
    except FitnessError as exc:
        raise ConformanceError(f"{exc}, for plan {describe(plan)}") from exc


def check_case(fit: Fitness, problem: Problem, plan: Plan, mapping: Mapping[str, str],
               rel_tol: float = 0.0) -> float:
    """Every in-process rule on one (problem, plan) pair; returns the value."""
    problem_before, plan_before = snapshot(problem), snapshot(plan)
    context = Context(problem, plan)
    shared_before = snapshot((context.errors, context.schedule))
    value = score(fit, problem, plan, context)
    for what, before, after in (("plan", plan_before, snapshot(plan)),
                                ("problem", problem_before, snapshot(problem)),
                                ("shared context", shared_before,
                                 snapshot((context.errors, context.schedule)))):
        if before != after:
            raise ConformanceError(
                f"{fit.label} modified the {what} it was given (fitness functions must be pure: "
                f"the engine shares them across objectives and candidates), on plan {describe(plan)}")
    again = score(fit, copy.deepcopy(problem), copy.deepcopy(plan))
    if not same(value, again, rel_tol):
        raise ConformanceError(
            f"{fit.label} is not deterministic: {value!r}, then {again!r} for the same input, "
            f"on plan {describe(plan)}")
    renamed = score(fit, problem, rename_ids(plan, mapping))
    if not same(value, renamed, rel_tol):
        raise ConformanceError(
            f"{fit.label} depends on task ids: {value!r}, but {renamed!r} after renaming "
            f"{dict(mapping)}, on plan {describe(plan)}")
    return value


def score_pickled(blob: bytes) -> list[float | str]:
    """Worker side: unpickle the fitness and the cases and score each (errors come back as text)."""
    fit, pairs = pickle.loads(blob)
    out: list[float | str] = []
    for problem, plan in pairs:
        try:
            out.append(fit(problem, plan, Context(problem, plan)))
        except Exception as exc:
            out.append(f"{type(exc).__name__}: {exc}")
    return out


def default_executor() -> Executor:
    """A fresh single loky worker: the engine's process model, a new interpreter.

    It is the caller's to shut down. It is not joblib's shared reusable
    executor, which joblib sets up for itself and which a pool started from
    outside would leave unusable for later ``Parallel`` calls. Its worker starts
    with the current ``sys.path``, so a plugin folder added by a test imports
    there, as it would in a new run's pool.
    """
    from joblib.externals.loky import ProcessPoolExecutor

    executor: Executor = ProcessPoolExecutor(
        max_workers=1, initializer=use_path, initargs=(tuple(sys.path),))
    return executor


def use_path(path: tuple[str, ...]) -> None:
    """Worker initializer: the parent's ``sys.path``, so plugins found here import there too."""
    sys.path[:] = list(path)


def check_in_worker(fit: Fitness, passed: Sequence[tuple[Problem, Plan, float]],
                    executor: Executor | None, rel_tol: float = 0.0) -> None:
    """Score ``passed`` again in another process and require the very same values."""
    if not passed:
        return
    blob = pickle.dumps((fit, [(problem, plan) for problem, plan, _ in passed]))
    pool = executor if executor is not None else default_executor()
    try:
        values = pool.submit(score_pickled, blob).result(timeout=300)
    except Exception as exc:
        raise ConformanceError(
            f"{fit.label} cannot be run in a worker process ({type(exc).__name__}: {exc}): "
            f"is its module importable there?") from exc
    finally:
        if executor is None:
            pool.shutdown(wait=True)
    for (_, plan, expected), got in zip(passed, values):
        if isinstance(got, str) or not same(expected, got, rel_tol):
            raise ConformanceError(
                f"{fit.label} gives {got!r} in a worker process but {expected!r} here, on plan "
                f"{describe(plan)} (does it read global state, the process id, or iterate a set "
                f"of strings, whose order changes between processes?)")


__all__ = [
    "BREAKERS",
    "ConformanceError",
    "cases",
    "check_case",
    "check_fitness",
    "invalid_plans",
    "mutations",
    "plans",
    "problem_dicts",
    "problems",
    "referenced_ids",
    "rename_ids",
    "renamings",
    "valid_plans",
    "without_task",
]
