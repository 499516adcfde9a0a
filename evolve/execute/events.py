"""The run's events: their one shape (:class:`Events`, pure) and ``events.jsonl`` (:class:`EventLog`).

An event is built by a transition beside its records and numbered by the journal in the same
transaction; only then does the log write it (and tell ``on_event``), so the file never says
more than the journal.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from evolve.execute.dispatch import Clock
from evolve.execute.records import ErrorKind, Next
from evolve.model.plan import Task
from evolve.model.problem import Problem


class Events:
    """Builds events stamped with the run's clock; no I/O."""

    def __init__(self, clock: Clock, problem: Problem) -> None:
        self.clock = clock
        self.problem = problem

    def event(self, name: str, /, **fields: Any) -> dict[str, Any]:
        return {"event": name, "time": round(self.clock.now(), 6), **fields}

    def risk_of(self, tool_name: str) -> str:
        """The tool's risk; ``read`` for a tool the catalog no longer has."""
        tool = self.problem.tools.get(tool_name)
        return tool.risk if tool else "read"

    def step(
        self, name: str, task: Task, /, *, attempt: int, risk: str | None = None, **fields: Any
    ) -> dict[str, Any]:
        """An event about one step of ``task``, in the one shape every ``step.*`` event starts
        with; the risk defaults to the tool's (``read`` for a tool the catalog lost)."""
        return self.event(
            name,
            task=task.id,
            tool=task.tool,
            risk=self.risk_of(task.tool) if risk is None else risk,
            attempt=attempt,
            **fields,
        )

    def step_error(
        self,
        task: Task,
        error: str,
        kind: ErrorKind,
        *,
        attempt: int,
        retryable: bool,
        nxt: Next,
        started: float,
        finished: float,
        retry_at: float | None = None,
        risk: str | None = None,
    ) -> dict[str, Any]:
        """The ``step.error`` event: the same fields for every way a step fails."""
        return self.step(
            "step.error",
            task,
            risk=risk,
            attempt=attempt,
            error=error,
            kind=kind,
            retryable=retryable,
            next=nxt,
            retry_at=retry_at,
            started=started,
            finished=finished,
        )


class EventLog:
    """``events.jsonl``, appended to as the journal numbers events; ``on_event`` sees each."""

    def __init__(self, path: Path, on_event: Callable[[dict[str, Any]], None] | None) -> None:
        self.on_event = on_event
        self.stream: IO[str] = path.open("a", encoding="utf-8")

    @staticmethod
    def rewrite(path: Path, events: Iterable[dict[str, Any]]) -> None:
        """``events.jsonl`` as the journal holds it (after a crash it may have lost a tail)."""
        with path.open("w", encoding="utf-8") as stream:
            for event in events:
                stream.write(json.dumps(event, sort_keys=True) + "\n")

    def emit(self, events: Iterable[dict[str, Any]]) -> None:
        for event in events:
            self.stream.write(json.dumps(event, sort_keys=True, default=str) + "\n")
            if self.on_event is not None:
                self.on_event(event)

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        self.stream.close()
