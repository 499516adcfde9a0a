"""The plan: a task graph, which is both the genome the search evolves and its output.

Plans are immutable values. Operators build new plans rather than editing old
ones, so a parent stays exactly what was evaluated and a cache keyed by
:func:`plan_hash` can never go stale.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, get_args

from evolve.defaults import ON_FAILURE, RETRIES

REF = re.compile(r"\$([A-Za-z_][\w\-:]*)(?:\.([A-Za-z_][\w\-]*))?((?:\.[\w\-]+)*)")
"""A reference: ``$fact`` or ``$task.output`` (a deeper ``.path`` may follow in ``when``)."""


@dataclass(frozen=True)
class Ref:
    """A parsed reference. ``task`` is ``None`` for an initial fact (``$order_id``)."""

    task: str | None
    fact: str

    def __str__(self) -> str:
        return f"${self.fact}" if self.task is None else f"${self.task}.{self.fact}"


def parse_ref(value: object) -> Ref | None:
    """The reference a bound input value makes, or ``None`` when it is a literal.

    ``$a.b`` always reads output ``b`` of task ``a``, even when no task ``a``
    exists, so the validator reports the missing task instead of guessing.
    """
    if not isinstance(value, str) or not value.startswith("$"):
        return None
    return parse_ref_text(value)


@functools.lru_cache(maxsize=65536)
def parse_ref_text(value: str) -> Ref:
    """:func:`parse_ref` for a ``$`` string; cached, as plans share a small set of references."""
    match = REF.fullmatch(value)
    if match is None:
        return Ref(task=None, fact=value[1:])
    head, tail, _ = match.groups()
    if tail is None:
        return Ref(task=None, fact=head)
    return Ref(task=head, fact=tail)


STATUS_TEST = re.compile(r"\b(?:failed|status)\(\s*\$([A-Za-z_][\w\-:]*)\s*\)")
"""A test of a task's status in a condition: ``failed($t9)``, ``status($t9)`` (it names a task,
and reads none of its outputs)."""


def tested_in_text(text: str) -> list[str]:
    """The tasks whose status a condition tests (``failed($t9)``, ``status($t9) == 'done'``)."""
    return [match.group(1) for match in STATUS_TEST.finditer(text)]


def refs_in_text(text: str) -> list[Ref]:
    """Every reference inside a ``when`` expression such as ``$t5.decision.amount > 1000`` (a
    status test names a task, not a fact: it is in :func:`tested_in_text`)."""
    found = []
    for match in REF.finditer(STATUS_TEST.sub(" ", text)):
        head, tail, _ = match.groups()
        found.append(Ref(task=None, fact=head) if tail is None else Ref(task=head, fact=tail))
    return found


TASK_MEMO = "_memo"
"""Where :mod:`evolve.model.plan_arrays` keeps what it derived from a task object (its compiled
record, tagged with the numbering it is valid in). A task is immutable, so this is a cache, not a
change: it lives outside the fields (equality, hashing, ``repr`` and ``replace`` ignore it) and
:meth:`Task.__getstate__` leaves it out of pickles, so a task pickles to the same bytes whether
or not it was ever evaluated."""

TASK_TEXT = "_text"
"""Where :func:`task_text` keeps a task's canonical JSON text: like :data:`TASK_MEMO`, a cache
outside the fields, left out of pickles and checkpoints. A child shares most of its task objects
with its parents, so hashing it writes only the tasks that are new."""


FailurePolicy = Literal["retry", "fail_plan", "skip_dependents", "replan"]
"""What a failed call leads to, the values of ``on_failure`` (a plan's task, a catalog's tool):
``retry`` (its retries, then as ``fail_plan``), ``fail_plan`` (the run ends), ``skip_dependents``
(the tasks downstream are skipped), ``replan`` (a new plan for the rest). Declared once: the
loader, the executor and the docs read it."""

FAILURE_POLICIES: tuple[FailurePolicy, ...] = get_args(FailurePolicy)


@dataclass(frozen=True)
class Task:
    """One node of the graph: a tool call with its bound inputs and dependencies."""

    CHECKPOINT_IMMUTABLE: ClassVar[bool] = True
    """Never changed in place (operators make new tasks), so a checkpoint may reuse the encoding
    it made of this object for the previous checkpoint (see ``evolve.run.state_codec``)."""

    id: str
    tool: str
    deps: tuple[str, ...] = ()
    inputs: Mapping[str, Any] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    when: str | None = None
    idempotency_key: str | None = None
    name: str | None = None
    # The keys the runtime reads (see evolve.execute); their defaults change nothing for a plan
    # that does not use them: not its dict, its hash or its pickle (see RUNTIME_DEFAULTS).
    assumes: tuple[str, ...] = ()
    """Conditions the task's plan rests on, checked once their references are known: a false
    one means the plan is wrong and the runtime replans."""
    on_failure: FailurePolicy | None = None
    """What a failed call leads to (:data:`FailurePolicy`); ``None``: its tool's catalog
    ``on_failure``, else :data:`evolve.defaults.ON_FAILURE` (see :meth:`failure_policy`)."""
    retries: int | None = None
    """Further attempts after a failed first call (with backoff); ``None``: its tool's catalog
    ``retries``, else :data:`evolve.defaults.RETRIES` (see :meth:`retry_count`)."""
    timeout: float | None = None
    """Seconds a call may take before it counts as a timeout failure (``None``: no deadline)."""
    evidence: tuple[str, ...] = ()
    """Repository facts the task rests on (what ``policy.require_evidence`` asks for)."""
    proof: tuple[str, ...] = ()
    """Exact checks that show the task done (what ``policy.require_evidence`` asks for)."""

    def __hash__(self) -> int:
        return hash((self.id, self.tool, self.deps, self.outputs))

    def __getstate__(self) -> dict[str, Any]:
        """The fields only, never the :data:`TASK_MEMO` a compiled evaluation keeps on the task,
        and the runtime keys only where they differ from their defaults: a task that does not
        use them pickles to the same bytes as before they existed. Unpickling needs nothing
        special, as a field left out reads its class-level default."""
        state = dict(self.__dict__)
        state.pop(TASK_MEMO, None)
        state.pop(TASK_TEXT, None)
        for key, default in RUNTIME_DEFAULTS.items():
            if key in state and state[key] == default:
                del state[key]
        return state

    def failure_policy(self) -> FailurePolicy:
        """The task's ``on_failure``, the default where neither it nor its catalog entry names
        one (:func:`with_catalog_failure` fills the catalog's in)."""
        return self.on_failure if self.on_failure is not None else ON_FAILURE

    def retry_count(self) -> int:
        """The task's ``retries``, the default where neither it nor its catalog entry names them."""
        return self.retries if self.retries is not None else RETRIES

    def refs(self) -> list[Ref]:
        """Every reference this task reads, from its inputs, its ``when`` and its ``assumes``."""
        return read_refs(self.inputs, self.when, self.assumes)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "tool": self.tool,
            "deps": list(self.deps),
            "inputs": dict(self.inputs),
            "outputs": list(self.outputs),
        }
        if self.when is not None:
            data["when"] = self.when
        if self.idempotency_key is not None:
            data["idempotency_key"] = self.idempotency_key
        if self.name is not None:
            data["name"] = self.name
        for key, default in RUNTIME_DEFAULTS.items():
            value = getattr(self, key)
            if value != default:
                data[key] = list(value) if isinstance(value, tuple) else value
        return data


RUNTIME_DEFAULTS: dict[str, Any] = {
    "assumes": (), "on_failure": None, "retries": None, "timeout": None,
    "evidence": (), "proof": (),
}
"""The runtime keys of a task and their defaults, in the order ``to_dict`` writes them; a key
at its default is left out of the dict (so of :func:`plan_hash`) and of the pickle."""


@dataclass(frozen=True)
class Plan:
    """A task graph plus an optional scheduling priority (an activity list of task ids)."""

    CHECKPOINT_IMMUTABLE: ClassVar[bool] = True
    """As :attr:`Task.CHECKPOINT_IMMUTABLE`."""

    tasks: tuple[Task, ...] = ()
    priority: tuple[str, ...] | None = None

    def __iter__(self) -> Iterator[Task]:
        return iter(self.tasks)

    def __len__(self) -> int:
        return len(self.tasks)

    def by_id(self) -> dict[str, Task]:
        """Tasks keyed by id (the last one wins when ids repeat; the validator reports that)."""
        return {task.id: task for task in self.tasks}

    def dependency_map(self) -> dict[str, list[str]]:
        """Each task's deps on other tasks that exist: the graph the validator, scheduler and
        analysis walk (missing tasks and self-dependencies are reported, not followed)."""
        tasks = self.by_id()
        return {tid: [d for d in t.deps if d in tasks and d != tid] for tid, t in tasks.items()}

    def ids(self) -> list[str]:
        return [task.id for task in self.tasks]

    def with_tasks(self, tasks: Iterable[Task]) -> Plan:
        """The same plan with other tasks; the priority keeps only ids that still exist."""
        tasks = tuple(tasks)
        if self.priority is None:
            return replace(self, tasks=tasks)
        alive = {task.id for task in tasks}
        return Plan(tasks=tasks, priority=tuple(i for i in self.priority if i in alive))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tasks": [task.to_dict() for task in self.tasks]}
        if self.priority is not None:
            data["priority"] = list(self.priority)
        return data


def plan_hash(plan: Plan) -> str:
    """A canonical digest of the plan: equal plans give equal hashes, whatever their history.

    The text hashed is ``json.dumps(plan.to_dict(), sort_keys=True, separators=(",", ":"),
    default=str)``, put together from each task's own text (:func:`task_text`, kept on the task):
    with sorted keys ``priority`` comes before ``tasks``, and a list's items are written one after
    the other, so the pieces join to exactly that text."""
    head = "" if plan.priority is None else f'"priority":{_canonical(list(plan.priority))},'
    text = f'{{{head}"tasks":[{",".join(task_text(task) for task in plan.tasks)}]}}'
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


def task_text(task: Task) -> str:
    """The task's canonical JSON text (sorted keys, no spaces), made once per task object."""
    held: str | None = task.__dict__.get(TASK_TEXT)
    if held is None:
        held = _canonical(task.to_dict())
        object.__setattr__(task, TASK_TEXT, held)  # a cache, not a change: see TASK_TEXT
    return held


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)


def next_task_id(plan: Plan, prefix: str = "t") -> str:
    """A fresh id ``t<n>`` above every numbered id already in the plan."""
    return f"{prefix}{highest_task_number(plan.tasks, prefix) + 1}"


def highest_task_number(tasks: Iterable[Task], prefix: str = "t") -> int:
    """The largest ``n`` of the ids ``t<n>`` among ``tasks`` (0 when none): a caller issuing many
    fresh ids counts up from it instead of rescanning the plan for each (quadratic at scale)."""
    highest = 0
    cut = len(prefix)
    for task in tasks:
        tid = task.id
        if tid.startswith(prefix) and tid[cut:].isdigit():
            number = int(tid[cut:])
            if number > highest:
                highest = number
    return highest


def read_refs(inputs: Mapping[str, Any], when: str | None = None,
              assumes: Iterable[str] = ()) -> list[Ref]:
    """Every reference that bound ``inputs`` (and ``when`` and ``assumes`` conditions) read;
    literals are skipped."""
    found = [ref for ref in (parse_ref(v) for v in inputs.values()) if ref is not None]
    if when:
        found.extend(refs_in_text(when))
    for condition in assumes:
        found.extend(refs_in_text(condition))
    return found


def task_refs_deps(inputs: Mapping[str, Any], when: str | None = None,
                   assumes: Iterable[str] = ()) -> tuple[str, ...]:
    """The upstream task ids that ``inputs`` (and ``when`` and ``assumes``) read, in first-seen
    order."""
    refs = read_refs(inputs, when, assumes)
    tested = [tid for text in (when or "", *assumes) for tid in tested_in_text(text)]
    return tuple(dict.fromkeys([*(ref.task for ref in refs if ref.task is not None), *tested]))
