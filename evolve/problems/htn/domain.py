"""The HTN domain: world state, predicates, effects, operators and methods, as frozen values.

A domain is pure data (the file says everything the planner does), so it can be
validated offline, pickled to workers and fingerprinted for checkpoints. The
world state is a flat map of keys to JSON scalars; predicates test it with
``has``, ``eq``, ``not`` and conjunction, and effects ``set`` or ``unset`` keys.

A ``$result.<output>`` effect binds a tool's output, which is known only when
the plan runs. While planning, such a key holds :class:`Unknown`: it is set, so
later writes and reads are ordered after it, but no predicate over it is true or
false. Predicates are three-valued (true, false, unknown) and a precondition
holds only when it is true, so a plan never relies on a value it cannot know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class Unknown:
    """A value bound from a tool's result (``$result.<output>.<path>``), unknown until run time."""

    output: str
    path: tuple[str, ...] = ()

    def __str__(self) -> str:
        return "$result." + ".".join((self.output, *self.path))


Value = Scalar | Unknown
State = Mapping[str, Value]


@dataclass(frozen=True)
class Has:
    """``{has: k}``: ``k`` is set to something other than false or null."""

    key: str


@dataclass(frozen=True)
class Eq:
    """``{eq: [k, v]}``: ``k`` is set to exactly ``v``."""

    key: str
    value: Scalar


@dataclass(frozen=True)
class Not:
    """``{not: P}``."""

    inner: Predicate


@dataclass(frozen=True)
class All:
    """A list of predicates: all of them."""

    items: tuple[Predicate, ...] = ()


Predicate = Has | Eq | Not | All
Atom = Has | Eq
TRUE = All()


def truth(pred: Predicate, state: State) -> bool | None:
    """The predicate's value in ``state``: True, False, or None when it depends on an unknown."""
    if isinstance(pred, Has):
        value = state.get(pred.key)
        if isinstance(value, Unknown):
            return None
        return value is not None and value is not False
    if isinstance(pred, Eq):
        value = state.get(pred.key)
        if isinstance(value, Unknown):
            return None
        return pred.key in state and type(value) is type(pred.value) and value == pred.value
    if isinstance(pred, Not):
        inner = truth(pred.inner, state)
        return None if inner is None else not inner
    result: bool | None = True
    for item in pred.items:
        value = truth(item, state)
        if value is False:
            return False
        if value is None:
            result = None
    return result


def holds(pred: Predicate, state: State) -> bool:
    """Whether ``pred`` is (definitely) true in ``state``."""
    return truth(pred, state) is True


def first_failing(pred: Predicate, state: State) -> Predicate | None:
    """The first conjunct of ``pred`` that is not true in ``state`` (what blocked it), or None."""
    items = pred.items if isinstance(pred, All) else (pred,)
    for item in items:
        if isinstance(item, All):
            inner = first_failing(item, state)
            if inner is not None:
                return inner
        elif truth(item, state) is not True:
            return item
    return None


def atoms(pred: Predicate) -> list[Atom]:
    """Every ``has``/``eq`` test in ``pred``, negated or not, in order."""
    if isinstance(pred, (Has, Eq)):
        return [pred]
    if isinstance(pred, Not):
        return atoms(pred.inner)
    return [a for item in pred.items for a in atoms(item)]


def positive_keys(pred: Predicate) -> tuple[str, ...]:
    """Keys that must be set for ``pred`` to hold (its un-negated conjuncts): the facts an
    operator reads, bound to the task that last set them."""
    if isinstance(pred, (Has, Eq)):
        return (pred.key,)
    if isinstance(pred, All):
        return tuple(dict.fromkeys(k for item in pred.items for k in positive_keys(item)))
    return ()


def read_keys(pred: Predicate) -> tuple[str, ...]:
    """Every key ``pred`` looks at."""
    return tuple(dict.fromkeys(a.key for a in atoms(pred)))


def to_doc(pred: Predicate) -> object:
    """The file form of a predicate (for messages, prompts and learned methods)."""
    if isinstance(pred, Has):
        return {"has": pred.key}
    if isinstance(pred, Eq):
        return {"eq": [pred.key, pred.value]}
    if isinstance(pred, Not):
        return {"not": to_doc(pred.inner)}
    return [to_doc(item) for item in pred.items]


def show(pred: Predicate) -> str:
    """A predicate as compact text, e.g. ``{has: logged_in}``."""
    if isinstance(pred, Has):
        return f"{{has: {pred.key}}}"
    if isinstance(pred, Eq):
        return f"{{eq: [{pred.key}, {pred.value!r}]}}"
    if isinstance(pred, Not):
        return f"{{not: {show(pred.inner)}}}"
    return "[" + ", ".join(show(item) for item in pred.items) + "]"


@dataclass(frozen=True)
class Effects:
    """What an operator does to the state: keys set (to a literal or a tool result), keys unset."""

    set: Mapping[str, Value] = field(default_factory=dict)
    unset: tuple[str, ...] = ()

    def apply(self, state: State) -> dict[str, Value]:
        out = dict(state)
        for key in self.unset:
            out.pop(key, None)
        out.update(self.set)
        return out

    def writes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.unset, *self.set)))


@dataclass(frozen=True)
class Operator:
    """A primitive action: what must hold, what it changes, and what running it costs.

    ``tool`` names the external tool a runtime calls for it (with the catalog's
    attributes when the domain has a ``tools`` catalog); the plan's task runs the
    operator itself, whose attributes below already include the catalog's.
    """

    name: str
    pre: Predicate
    effects: Effects
    duration: float
    cost: float = 0.0
    tool: str | None = None
    risk: str = "read"
    scope: str | None = None
    uses: Mapping[str, float] = field(default_factory=dict)
    llm_calls: int = 0
    description: str = ""
    prompt: str | None = None
    """A prompt for a small model that fills the tool's arguments at run time (``{{key}}`` from
    the state); carried with the domain, not used by the planner."""
    exec_spec: Mapping[str, Any] | None = None
    """The file's ``exec``: how a runtime runs the tool (``cmd`` and ``args``); carried only."""
    args: Mapping[str, str] | None = None
    """With ``prompt``: the arguments the small model must return, name -> ``string``,
    ``number``, ``integer`` or ``boolean`` (``None``: any JSON object of scalars)."""

    def __hash__(self) -> int:
        return hash(self.name)


@dataclass(frozen=True)
class Method:
    """One way to do a compound task: a guard and subtasks (ordered, or any order when
    ``unordered``). ``learned`` marks one accepted from the fallback during a run."""

    name: str
    task: str
    pre: Predicate
    subtasks: tuple[str, ...]
    unordered: bool = False
    learned: bool = False

    def __hash__(self) -> int:
        return hash(self.name)


@dataclass(frozen=True)
class CompoundTask:
    """A compound task's own declaration: what achieving it means (optional) and a description."""

    name: str
    achieves: Predicate = TRUE
    description: str = ""


@dataclass(frozen=True)
class Decision:
    """A hoisted decision: a state key a small model sets once, before planning (``decide``).

    ``prompt`` is rendered from the state (``{{key}}``); the answer must be one of ``enum``
    (when given), else ``default`` is taken, else the run does not start (``has_default``
    tells a ``null`` default from none)."""

    key: str
    prompt: str
    enum: tuple[Scalar, ...] | None = None
    default: Scalar = None
    has_default: bool = False
    kind: str | None = None
    """The value's type (``string``, ``number``, ``integer``, ``boolean``; ``None``: any scalar)."""
    fields: tuple[Decision, ...] = ()
    """Further fields of the same answer (``approach`` with ``line``, ``action`` with ``image``),
    each with its own ``enum``, ``kind`` and ``default`` (their ``prompt`` is unused). The answer
    is judged as one object: a field missing or wrong refuses all of it, and every field then
    takes its default."""


@dataclass(frozen=True)
class Domain:
    """A whole HTN domain. ``methods`` keeps file order: the order the planner tries them in."""

    name: str
    state: Mapping[str, Scalar]
    goal: str
    operators: Mapping[str, Operator]
    methods: tuple[Method, ...]
    tasks: Mapping[str, CompoundTask]
    max_depth: int
    max_nodes: int
    source: str = "<domain>"
    decisions: Mapping[str, Decision] = field(default_factory=dict)

    def __hash__(self) -> int:
        return hash((self.name, self.goal, tuple(self.operators), self.methods))

    def methods_for(self, task: str) -> tuple[Method, ...]:
        return tuple(m for m in self.methods if m.task == task)

    def is_compound(self, name: str) -> bool:
        return name in self.tasks

    def knows(self, name: str) -> bool:
        return name in self.operators or name in self.tasks
