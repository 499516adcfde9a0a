"""What a tool is to the runtime: a callable ``fn(inputs, call)`` found by name, that fails loudly.

The user names a mapping ``MODULE:ATTR`` from tool name to callable (``--tools``); installed
packages may offer tools under the ``evolve.tools`` entry-point group, one entry point per tool
(its name is the tool's name, as ``evolve.fitness`` entry points are named by objective). The
mapping wins over an entry point of the same name. A tool signals failure by raising
:class:`ToolFailure`; any other exception is a failure that is not retried. A callable may carry
``reconcile(idempotency_key)``: after a crash, the runtime asks it whether a write it had
dispatched was made, rather than calling the write again blindly.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any, Protocol, cast

from evolve.model.errors import EvolveError

ENTRY_POINT_GROUP = "evolve.tools"


class ToolFailure(Exception):
    """A tool call that failed. ``retryable`` says whether the same call may succeed later (a
    timeout, a 503); the task's ``retries`` and backoff then apply. Otherwise the failure is final
    and the task's ``on_failure`` decides what happens to the run."""

    def __init__(self, message: str, retryable: bool = False, uncertain: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.uncertain = uncertain
        """The call may have taken effect before it failed (the server that took it died): for
        a write the executor then asks the tool's ``reconcile`` first, as after a timeout; a
        write it cannot settle waits for a person as ``unknown``, never made again blindly."""


@dataclass(frozen=True)
class Call:
    """What a tool is told about the call it serves.

    ``attempt`` counts from 1 for each task; ``idempotency_key`` is the task's (``None`` for
    reads), the same on every attempt, so a write the tool's backend already made can be
    recognised; ``deadline`` is the wall time (``time.time()`` seconds; virtual seconds under
    ``--simulate``) after which the runtime no longer waits for this call.
    """

    task_id: str
    attempt: int
    idempotency_key: str | None
    deadline: float
    tool: str = ""


ToolFn = Callable[[Mapping[str, Any], Call], Mapping[str, Any]]
"""A tool: bound inputs and the call context in, the tool's outputs (a mapping) out."""


class Reconcilable(Protocol):
    def reconcile(self, idempotency_key: str) -> Mapping[str, Any] | None: ...


class AsksModel(Protocol):
    """A tool callable that asks a model itself before its tool runs (an HTN operator with a
    ``prompt``: its arguments are filled at dispatch). ``limits.max_llm_calls`` counts those asks
    under ``purpose``: the most a call may make is journaled with its dispatch record (a crash
    never loses one), and what it did not make is given back when its result is committed."""

    purpose: str

    def model_calls_needed(self, task_id: str) -> int:
        """The most model calls the next call of ``task_id`` makes (0: none, e.g. its
        arguments were filled by an earlier call)."""

    def model_calls_made(self, task_id: str, attempt: int) -> int:
        """The model calls the call ``attempt`` of ``task_id`` made (read from its record)."""


def asks_model(fn: object) -> AsksModel | None:
    """``fn`` when it is :class:`AsksModel`, else ``None``; an attribute look-up, as it is made
    for every dispatch (a protocol ``isinstance`` costs tens of microseconds)."""
    return cast(AsksModel, fn) if callable(getattr(fn, "model_calls_made", None)) else None


def reconciler(fn: object) -> Callable[[str], Mapping[str, Any] | None] | None:
    """The ``reconcile`` of a tool callable, or ``None`` when it has none."""
    found = getattr(fn, "reconcile", None)
    return found if callable(found) else None


class ToolError(EvolveError):
    """A ``--tools`` spec that cannot be used: names the spec and what is wrong."""


def import_object(spec: str) -> object:
    """``MODULE:ATTR`` imported as ``python -m`` would, from ``sys.path`` or the current folder."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ToolError(f"--tools {spec}: expected MODULE:ATTR")
    try:
        if module_name.endswith(".py"):
            module = import_file(Path(module_name))
        else:
            here = str(Path.cwd())
            if here not in sys.path:
                sys.path.insert(0, here)
            module = importlib.import_module(module_name)
    except (ImportError, OSError) as exc:
        raise ToolError(f"--tools {spec}: cannot import {module_name} ({exc})") from None
    obj: object = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ToolError(f"--tools {spec}: {module_name} has no attribute {attr!r}") from None
    return obj


def import_file(path: Path) -> object:
    """A module from a ``.py`` file, registered under its stem (so that its tools pickle)."""
    if not path.is_file():
        raise ImportError(f"no file {path}")
    name = path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_tools(spec: str | None, needed: Iterable[str]) -> dict[str, ToolFn]:
    """The callables of the tools in ``needed`` that can be found: from the mapping ``spec`` names,
    else from an ``evolve.tools`` entry point of the tool's name.

    Only the entry points of needed tools are loaded, so a broken plugin package stops only the
    runs that use its tool, and then with its name and the error, never a traceback.
    """
    wanted = set(needed)
    table: dict[str, ToolFn] = {}
    if spec is not None:
        mapping = import_object(spec)
        if not isinstance(mapping, Mapping):
            raise ToolError(
                f"--tools {spec}: expected a mapping of tool name to callable, got {type(mapping).__name__}"
            )
        for name, fn in mapping.items():
            if not isinstance(name, str) or not callable(fn):
                raise ToolError(f"--tools {spec}: entry {name!r} is not a tool name with a callable")
            table[name] = fn
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in table or ep.name not in wanted:
            continue
        try:
            fn = ep.load()
        except Exception as exc:  # a broken plugin package: name it
            raise ToolError(
                f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP}) failed to load: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        if not callable(fn):
            raise ToolError(f"entry point {ep.name} = {ep.value} ({ENTRY_POINT_GROUP}) is not callable")
        table[ep.name] = fn
    return table
