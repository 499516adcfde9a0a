"""How a run spends its budgets and waits: :class:`ExecuteOptions`, stored in the journal; the
step budget a plan gets when none is given (:func:`step_budget`), and the warning before a run
whose plan cannot fit its budget (:func:`fit_warning`)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

from evolve import defaults
from evolve.model.plan import Plan


@dataclass(frozen=True)
class ExecuteOptions:
    """How a run spends its budgets and waits. Stored in the journal: a resumed run keeps them."""

    max_steps: int | None = defaults.EXECUTE_MAX_STEPS
    """``None``: derived from the plan when the run starts (:meth:`for_plan`); the journal always
    keeps a number."""
    max_replans: int = defaults.EXECUTE_MAX_REPLANS
    seed: int = defaults.SEED
    timeout: float = defaults.EXECUTE_TIMEOUT
    backoff: float = defaults.EXECUTE_BACKOFF
    backoff_cap: float = defaults.EXECUTE_BACKOFF_CAP
    retry_window: float = defaults.EXECUTE_RETRY_WINDOW
    journal_sync: str = defaults.EXECUTE_JOURNAL_SYNC
    wait: float = defaults.EXECUTE_WAIT
    """Seconds this session waits for a person before it stops ``waiting`` (set per session:
    ``--resume --wait`` overrides what the run was started with)."""
    wait_poll: float = defaults.EXECUTE_WAIT_POLL
    deadline_includes_waiting: bool = defaults.EXECUTE_DEADLINE_INCLUDES_WAITING
    """Whether the time people took to decide counts against ``limits.deadline_s`` (by default
    it does not: the deadline is the run's own working time)."""
    request_id: str | None = None
    """The request this run serves, in every write's idempotency key (``{request_id}``, see
    :mod:`evolve.model.keys`): ``--request-id``; ``None``: a new run gets an id of its own
    (:func:`evolve.execute.session.start_run`), kept in the journal, so a resume keeps it."""
    horizon: int | None = defaults.EXECUTE_HORIZON
    """A rolling horizon: only the next ``horizon`` tasks of the plan are committed at a time;
    when they are over, the rest is planned again from what they made (``None``: the whole plan
    is committed, as given). See :mod:`evolve.execute.horizon`."""

    def __post_init__(self) -> None:
        if (self.max_steps is not None and self.max_steps < 1) or self.max_replans < 0:
            raise ValueError(
                f"max_steps must be >= 1 and max_replans >= 0, got {self.max_steps}, {self.max_replans}"
            )
        if self.journal_sync not in ("FULL", "NORMAL"):
            raise ValueError(f"journal sync must be FULL or NORMAL, got {self.journal_sync!r}")
        if self.wait < 0 or self.wait_poll <= 0:
            raise ValueError("wait must be >= 0 and wait_poll > 0")
        if self.timeout <= 0 or self.backoff < 0 or self.backoff_cap < 0 or self.retry_window < 0:
            raise ValueError("timeout must be > 0 and backoff, backoff_cap, retry_window >= 0")
        if self.horizon is not None and self.horizon < 1:
            raise ValueError(f"horizon must be >= 1, got {self.horizon}")

    @property
    def steps(self) -> int:
        """The step budget (``max_steps``, which a run's options always hold: see :meth:`for_plan`)."""
        if self.max_steps is None:
            raise ValueError("max_steps is derived from the plan as the run starts (for_plan)")
        return self.max_steps

    def for_plan(self, plan: Plan) -> ExecuteOptions:
        """These options for a run of ``plan``: ``max_steps`` derived from it if none was given."""
        if self.max_steps is not None:
            return self
        return replace(self, max_steps=step_budget(plan, self.max_replans))

    def to_dict(self) -> dict[str, Any]:
        """The options as the journal keeps them; ``horizon`` and ``request_id`` only when set,
        so a run without them journals exactly what it did before the options existed."""
        options = asdict(self)
        for key in ("horizon", "request_id"):
            if options[key] is None:
                del options[key]
        return options


def step_budget(plan: Plan, max_replans: int) -> int:
    """The steps a run of ``plan`` gets when ``--max-steps`` is not given: a call for each task
    and each retry its tasks allow, and :data:`~evolve.defaults.EXECUTE_STEPS_PER_REPLAN` for each
    replan allowed (a replan is a step, and the tasks it adds are calls)."""
    calls = sum(1 + task.retry_count() for task in plan.tasks)
    return max(1, calls + max_replans * defaults.EXECUTE_STEPS_PER_REPLAN)


def steps_needed(plan: Plan, options: ExecuteOptions) -> int:
    """The fewest steps a run of ``plan`` makes when nothing fails: a call for each task, and
    under a rolling horizon the replans that move it (as many as ``max_replans`` allows)."""
    tasks = len(plan.tasks)
    moves = 0
    if options.horizon is not None and tasks:
        moves = min(options.max_replans, math.ceil(tasks / options.horizon) - 1)
    return tasks + moves


def fit_warning(plan: Plan, options: ExecuteOptions) -> str | None:
    """Why a run of ``plan`` cannot finish within ``options.max_steps`` even if nothing fails
    (``None``: it can). Said before the run starts, so no step is spent to learn it."""
    needed = steps_needed(plan, options)
    budget = options.for_plan(plan).steps
    if needed <= budget:
        return None
    moves = needed - len(plan.tasks)
    what = f"{len(plan.tasks)} tasks" + (f" and {moves} horizon replans" if moves else "")
    return (f"the plan needs {needed} steps ({what}) but --max-steps is {budget}: the run will stop "
            f"step_budget before it is done (give --max-steps {needed} or more)")
