"""How a run spends its budgets and waits: :class:`ExecuteOptions`, stored in the journal."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from evolve import defaults


@dataclass(frozen=True)
class ExecuteOptions:
    """How a run spends its budgets and waits. Stored in the journal: a resumed run keeps them."""

    max_steps: int = defaults.EXECUTE_MAX_STEPS
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
        if self.max_steps < 1 or self.max_replans < 0:
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

    def to_dict(self) -> dict[str, Any]:
        """The options as the journal keeps them; ``horizon`` and ``request_id`` only when set,
        so a run without them journals exactly what it did before the options existed."""
        options = asdict(self)
        for key in ("horizon", "request_id"):
            if options[key] is None:
                del options[key]
        return options
