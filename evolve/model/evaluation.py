"""Evaluation of a parsed condition (:mod:`evolve.model.expression`) over resolved values.

Kept apart from the parser: parsing needs only the text (the validator parses every
condition of a plan), evaluation needs the values a runtime has resolved, and the
language's strict rules for truth, equality and ordering live here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evolve.model.expression import (
    BoolOp,
    Call,
    Compare,
    Expression,
    ExpressionError,
    ListNode,
    Literal,
    Negate,
    Node,
    Not,
    Reference,
)
from evolve.model.plan import Ref
from evolve.model.status import ENDED_WITHOUT_OUTPUTS


class UnknownReference(ExpressionError):
    """Evaluation met a reference the resolver does not know (yet): a distinct case, as a
    runtime may wait for it rather than fail."""

    def __init__(self, ref: str) -> None:
        super().__init__(f"{ref} is not known")
        self.ref = ref


Resolver = Callable[[Ref, tuple[str, ...]], Any]
"""``resolve(ref, path)``: the value of ``$task.output.path...``; raises ``KeyError`` when unknown."""


StatusOf = Callable[[str], str]
"""``status(task_id)``: a task's status in a run (``failed($t9)``, ``status($t9)`` read it)."""


def no_status(task_id: str) -> str:
    raise ExpressionError(f"status(${task_id}): task statuses are known only in a run")


def evaluate(expr: Expression, resolve: Resolver, status: StatusOf = no_status) -> Any:
    """The value of ``expr`` with references looked up through ``resolve`` (and task statuses
    through ``status``).

    :class:`UnknownReference` (an :class:`ExpressionError`) when ``resolve`` raises ``KeyError``;
    :class:`ExpressionError` on a type error such as ``'abc' > 1``.
    """
    return ConditionEvaluator(expr.text, resolve, status).run(expr.tree)


def holds(expr: Expression, resolve: Resolver, status: StatusOf = no_status) -> bool:
    """Whether ``expr`` is true by :func:`truthy` (what ``when`` and ``assumes`` ask)."""
    return truthy(evaluate(expr, resolve, status))


def truthy(value: Any) -> bool:
    """The language's truth rule: ``null``, ``false``, zero, and an empty string, list or mapping
    are false; every other value is true."""
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if is_number(value):
        return bool(value != 0)
    if isinstance(value, (str, Sequence, Mapping)):
        return len(value) > 0
    return True


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def kind(value: object) -> str:
    """A value's type as the language names it, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, Sequence):
        return "list"
    return type(value).__name__


def quoted(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def equal(a: Any, b: Any) -> bool:
    """Strict equality: numbers compare by value, ``true`` is not ``1``, lists and mappings
    compare item by item."""
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(equal(a[k], b[k]) for k in a)
    if isinstance(a, Sequence) and isinstance(b, Sequence):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    if a is None or b is None:
        return a is None and b is None
    return bool(a == b)


def walk(value: Any, path: tuple[str, ...], ref: str = "") -> Any:
    """``value`` followed down ``path`` (mapping keys, or list indexes given as digits);
    ``KeyError`` when a step is missing. A resolver can use it for the deeper keys."""
    for key in path:
        if isinstance(value, Mapping) and key in value:
            value = value[key]
        elif isinstance(value, Sequence) and not isinstance(value, str) and key.isdigit() \
                and int(key) < len(value):
            value = value[int(key)]
        else:
            raise KeyError(f"{ref}.{key}" if ref else key)
    return value


def resolver(facts: Mapping[str, Any], outputs: Mapping[str, Mapping[str, Any]]) -> Resolver:
    """A :data:`Resolver` over known initial ``facts`` and each done task's ``outputs``
    (task id -> output name -> value), walking deeper keys with :func:`walk`."""

    def resolve(ref: Ref, path: tuple[str, ...]) -> Any:
        if ref.task is None:
            return walk(facts[ref.fact], path, str(ref))
        return walk(outputs[ref.task][ref.fact], path, str(ref))

    return resolve


def inputs_resolver(inputs: Mapping[str, Any]) -> Resolver:
    """A :data:`Resolver` over one task's bound ``inputs``, as a threshold reads them:
    ``$amount`` is the input ``amount``, ``$decision.refund_inr`` the key ``refund_inr`` of the
    input ``decision`` (deeper keys walk on)."""

    def resolve(ref: Ref, path: tuple[str, ...]) -> Any:
        if ref.task is None:
            return walk(inputs[ref.fact], path, str(ref))
        return walk(inputs[ref.task], (ref.fact, *path), str(ref))

    return resolve


class ConditionEvaluator:
    """Walks one condition's expression tree against the facts (named apart from the run's
    :class:`evolve.run.evaluator.Evaluator`, which scores plans)."""

    def __init__(self, text: str, resolve: Resolver, status: StatusOf = no_status) -> None:
        self.text = text
        self.resolve = resolve
        self.status = status

    def fail(self, reason: str) -> ExpressionError:
        return ExpressionError(f"{reason} (in {quoted(self.text)})")

    def lookup(self, node: Reference) -> Any:
        try:
            return self.resolve(node.ref, node.path)
        except KeyError:
            raise UnknownReference(str(node)) from None

    def run(self, node: Node) -> Any:
        if isinstance(node, Literal):
            return node.value
        if isinstance(node, Reference):
            return self.lookup(node)
        if isinstance(node, ListNode):
            return [self.run(item) for item in node.items]
        if isinstance(node, Not):
            return not truthy(self.run(node.operand))
        if isinstance(node, Negate):
            value = self.run(node.operand)
            if not is_number(value):
                raise self.fail(f"cannot negate {quoted(value)} ({kind(value)})")
            return -value
        if isinstance(node, BoolOp):
            if node.op == "and":
                return all(truthy(self.run(item)) for item in node.operands)
            return any(truthy(self.run(item)) for item in node.operands)
        if isinstance(node, Compare):
            return self.compare(node.op, self.run(node.left), self.run(node.right))
        return self.call(node)

    def call(self, node: Call) -> Any:
        arg = node.args[0]
        if node.name in ("failed", "status"):
            assert isinstance(arg, Reference)  # the parser allows nothing else
            found = self.status(arg.ref.fact)
            return found in ENDED_WITHOUT_OUTPUTS if node.name == "failed" else found
        if node.name == "exists":
            assert isinstance(arg, Reference)  # the parser allows nothing else
            try:
                self.resolve(arg.ref, arg.path)
            except KeyError:
                return False
            return True
        value = self.run(arg)
        if isinstance(value, (str, Sequence, Mapping)):
            return len(value)
        raise self.fail(f"len() of {quoted(value)} ({kind(value)}): it needs a string, list or mapping")

    def compare(self, op: str, left: Any, right: Any) -> bool:
        if op == "==":
            return equal(left, right)
        if op == "!=":
            return not equal(left, right)
        if op in ("in", "not in"):
            found = self.contains(right, left)
            return found if op == "in" else not found
        ordered = (is_number(left) and is_number(right)) or (
            isinstance(left, str) and isinstance(right, str))
        if not ordered:
            raise self.fail(f"cannot compare {quoted(left)} ({kind(left)}) {op} "
                            f"{quoted(right)} ({kind(right)})")
        if op == "<":
            return bool(left < right)
        if op == "<=":
            return bool(left <= right)
        if op == ">":
            return bool(left > right)
        return bool(left >= right)

    def contains(self, container: Any, item: Any) -> bool:
        if isinstance(container, str):
            if not isinstance(item, str):
                raise self.fail(f"{quoted(item)} ({kind(item)}) in a string: only a string can be")
            return item in container
        if isinstance(container, Mapping):
            return any(equal(item, key) for key in container)
        if isinstance(container, Sequence):
            return any(equal(item, member) for member in container)
        raise self.fail(f"'in' needs a list, string or mapping on its right, got "
                        f"{quoted(container)} ({kind(container)})")
