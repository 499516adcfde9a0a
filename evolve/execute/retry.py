"""When a failed call is tried again: :class:`RetryPolicy`, a value (as Temporal's ``RetryPolicy``).

A task's ``retries`` and the run's ``--backoff``, ``--backoff-cap`` and ``--retry-window`` are
spread over two records today; the policy puts the one rule they make in one place, so the
result commit asks a question (``retry_at``) instead of doing the arithmetic inline.
"""

from __future__ import annotations

from dataclasses import dataclass

from evolve.execute.options import ExecuteOptions
from evolve.model.plan import Task


@dataclass(frozen=True)
class RetryPolicy:
    """``retries`` tries after the first, the n-th waiting ``initial * coefficient**(n-1)``
    seconds (at most ``cap``), all of them within ``window`` seconds of the first failure."""

    retries: int
    initial: float
    cap: float
    window: float
    coefficient: float = 2.0

    def __post_init__(self) -> None:
        if self.retries < 0 or self.initial < 0 or self.cap < 0 or self.window < 0 or self.coefficient < 1:
            raise ValueError(f"a retry policy needs non-negative numbers and a coefficient >= 1: {self}")

    @classmethod
    def of(cls, task: Task, options: ExecuteOptions) -> RetryPolicy:
        """The policy of ``task`` under the run's options."""
        return cls(
            retries=task.retry_count(),
            initial=options.backoff,
            cap=options.backoff_cap,
            window=options.retry_window,
        )

    @property
    def attempts(self) -> int:
        """Calls at most: the first and its retries."""
        return self.retries + 1

    def delay(self, failures: int) -> float:
        """The wait before the try after the ``failures``-th failure."""
        return min(self.initial * self.coefficient ** (failures - 1), self.cap)

    def retry_at(self, *, failures: int, first: float, finished: float, retryable: bool) -> float | None:
        """When to try again after the ``failures``-th failure (finished at ``finished``, the
        first one at ``first``), or ``None``: the failure is final."""
        delay = self.delay(failures)
        if retryable and failures <= self.retries and finished + delay - first <= self.window:
            return finished + delay
        return None

    def spent(self, *, failures: int, retryable: bool) -> bool:
        """Whether a final failure is final because the retries ran out (its error says so)."""
        return retryable and failures > self.retries > 0
