"""The condition language of ``when`` and ``assumes``: parsing, evaluation, and its bounds."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.defaults import EXPRESSION_MAX_DEPTH, EXPRESSION_MAX_LENGTH
from evolve.model.evaluation import UnknownReference, evaluate, holds, resolver, truthy
from evolve.model.expression import (
    BoolOp,
    Call,
    Compare,
    ExpressionError,
    ListNode,
    Literal,
    Negate,
    Node,
    Not,
    Reference,
    format_expression,
    parse_expression,
)
from evolve.model.plan import Ref, refs_in_text

OUTPUTS: dict[str, dict[str, Any]] = {
    "t3": {"refunds": [], "captures": [{"id": "c1", "amount": 500}, {"id": "c2", "amount": 500}]},
    "t5": {"decision": {"refund_inr": 1500, "action": "refund", "ok": True}},
}
FACTS: dict[str, Any] = {"order_id": "8472", "limit": 1000}
RESOLVE = resolver(FACTS, OUTPUTS)


def value(text: str) -> Any:
    return evaluate(parse_expression(text), RESOLVE)


@pytest.mark.parametrize(("text", "expected"), [
    ("$t5.decision.refund_inr > 1000", True),
    ("len($t3.refunds) == 0", True),
    ("len($t3.captures) == 2 and $t3.captures.0.amount == 500", True),
    ("$t5.decision.refund_inr > $limit or false", True),
    ("not ($t5.decision.action == 'refund')", False),
    ("$t5.decision.action in ['refund', 'void']", True),
    ("$t5.decision.action not in [\"refund\"]", False),
    ("'ref' in $t5.decision.action", True),
    ("'ok' in $t5.decision", True),
    ("$order_id == '8472'", True),
    ("$order_id == 8472", False),
    ("$t5.decision.ok == 1", False),
    ("1 == 1.0", True),
    ("null == null", True),
    ("-3 < -2.5", True),
    ("-$limit", -1000),
    ("exists($t5.decision.refund_inr)", True),
    ("exists($t5.decision.missing)", False),
    ("exists($t9.out)", False),
    ("[1, [2, 3]] == [1, [2, 3]]", True),
    ("'a\\'b' == \"a'b\"", True),
    ("1e3 >= 1000", True),
    ("true and (false or not false)", True),
])
def test_evaluates(text: str, expected: Any) -> None:
    assert value(text) == expected


def test_refs_in_order_and_as_refs_in_text_finds_them() -> None:
    text = "$t5.decision.refund_inr > $limit and len($t3.refunds) == 0"
    expr = parse_expression(text)
    assert expr.refs == (Ref("t5", "decision"), Ref(None, "limit"), Ref("t3", "refunds"))
    assert list(expr.refs) == refs_in_text(text)


@pytest.mark.parametrize(("text", "message"), [
    ("", "column 1: empty condition"),
    ("$t1.x >", "column 8: expected a value, got the end of the condition"),
    ("$a && $b", "column 4: unexpected character '&' (use 'and', 'or', 'not')"),
    ("(1 == 1", "expected ')' to close '('"),
    ("1 < $x < 3", "comparisons do not chain"),
    ("refund > 1", "unknown name 'refund': a reference starts with '$'"),
    ("len(1, 2)", "len() takes one argument, got 2"),
    ("exists('x')", "exists() takes a reference"),
    ("'open", "column 1: string is not closed"),
    ("'\\q'", "unknown escape \\q"),
    ("$", "'$' must start a reference"),
    ("1 2", "column 3: unexpected 2 after a complete condition"),
    ("1e400 > 1", "out of range"),
])
def test_syntax_errors_name_the_column_and_the_fault(text: str, message: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        parse_expression(text)
    assert message in str(caught.value)


@pytest.mark.parametrize(("text", "message"), [
    ("'abc' > 1", "cannot compare 'abc' (string) > 1 (number)"),
    ("true < 2", "cannot compare True (boolean) < 2 (number)"),
    ("len(3)", "len() of 3 (number)"),
    ("-'a'", "cannot negate 'a' (string)"),
    ("1 in 2", "'in' needs a list, string or mapping on its right"),
    ("1 in 'abc'", "only a string can be"),
])
def test_type_errors_are_expression_errors(text: str, message: str) -> None:
    with pytest.raises(ExpressionError) as caught:
        value(text)
    assert message in str(caught.value)


def test_an_unknown_reference_is_its_own_error() -> None:
    with pytest.raises(UnknownReference) as caught:
        value("$t9.out == 1")
    assert caught.value.ref == "$t9.out"
    with pytest.raises(UnknownReference, match=r"\$t5\.decision\.nope is not known"):
        value("$t5.decision.nope == 1")


def test_and_or_short_circuit() -> None:
    """The right side of a decided ``and``/``or`` is not evaluated, so it may name what is unknown."""
    assert value("false and $t9.out > 1") is False
    assert value("true or $t9.out > 1") is True


def test_truth_rule() -> None:
    falsy: list[Any] = [None, False, 0, 0.0, "", [], {}]
    true: list[Any] = [True, -1, 0.5, "x", [0], {"a": 0}]
    assert [truthy(v) for v in falsy] == [False] * 7
    assert [truthy(v) for v in true] == [True] * 6
    assert holds(parse_expression("$t3.refunds"), RESOLVE) is False


def test_bounds() -> None:
    deep = "(" * (EXPRESSION_MAX_DEPTH + 1) + "1" + ")" * (EXPRESSION_MAX_DEPTH + 1)
    with pytest.raises(ExpressionError, match="nested more than"):
        parse_expression(deep)
    ok = "(" * EXPRESSION_MAX_DEPTH + "1" + ")" * EXPRESSION_MAX_DEPTH
    assert value(ok) == 1
    with pytest.raises(ExpressionError, match="more than"):
        parse_expression("not " * 10_000 + "true")
    with pytest.raises(ExpressionError, match="characters long"):
        parse_expression("1" * (EXPRESSION_MAX_LENGTH + 1))
    # Within the length bound, the deepest nesting of every kind is still refused, not a RecursionError.
    for opener, closer in (("(", ")"), ("[", "]"), ("len(", ")"), ("-", ""), ("not ", "")):
        count = EXPRESSION_MAX_LENGTH // (len(opener) + len(closer) + 1)
        with pytest.raises(ExpressionError):
            parse_expression(opener * count + "1" + closer * count)


def test_never_eval(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python syntax is not the language: dunder tricks are plain unknown names."""
    import builtins

    def refuse(*args: object) -> None:
        raise AssertionError("eval called")

    monkeypatch.setattr(builtins, "eval", refuse)
    for text in ("__import__('os').system('true')", "().__class__", "open('x')", "$a.__class__"):
        with pytest.raises(ExpressionError):
            value(text)


# -- properties ---------------------------------------------------------------------------------

ALPHABET = st.sampled_from([
    *"$t1.ab_ ()[],'\"\\-<>=!0123456789eE", "and ", "or ", "not ", "in ", "len(", "exists(",
    "true", "false", "null", "$t5.decision",
    "$t3.refunds", "$limit", " == ", " < ", "²", "é", "\n"])


@settings(max_examples=400, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_any_text_raises_only_expression_errors(text: str) -> None:
    try:
        expr = parse_expression(text)
    except ExpressionError:
        return
    with contextlib.suppress(ExpressionError):
        evaluate(expr, RESOLVE)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_arbitrary_unicode_raises_only_expression_errors(text: str) -> None:
    with contextlib.suppress(ExpressionError):
        evaluate(parse_expression(text), RESOLVE)


NAMES = st.sampled_from(["t1", "t5", "a_b", "x-y"])
REFS = st.builds(lambda task, fact, path: Reference(Ref(task, fact), path if task else ()),
                 st.one_of(st.none(), NAMES), NAMES, st.lists(NAMES, max_size=2).map(tuple))
"""``$a.b`` always reads output ``b`` of task ``a``: an initial fact has no deeper keys in text."""
LITERALS = st.builds(Literal, st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8)))


def extend(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    return st.one_of(
        st.builds(lambda items: ListNode(tuple(items)), st.lists(children, max_size=3)),
        st.builds(Not, children),
        st.builds(Negate, children.filter(lambda n: not (
            isinstance(n, Literal) and isinstance(n.value, (int, float))
            and not isinstance(n.value, bool)))),
        st.builds(lambda op, items: BoolOp(op, tuple(items)), st.sampled_from(["and", "or"]),
                  st.lists(children, min_size=2, max_size=3)),
        st.builds(Compare, st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "in", "not in"]),
                  children, children),
        st.builds(lambda arg: Call("len", (arg,)), children),
        st.builds(lambda arg: Call("exists", (arg,)), REFS),
    )


TREES = st.recursive(st.one_of(LITERALS, REFS), extend, max_leaves=12)


def depth(node: Node) -> int:
    if isinstance(node, (Literal, Reference)):
        return 0
    children: tuple[Node, ...]
    if isinstance(node, ListNode):
        children = node.items
    elif isinstance(node, (Not, Negate)):
        children = (node.operand,)
    elif isinstance(node, BoolOp):
        children = node.operands
    elif isinstance(node, Compare):
        children = (node.left, node.right)
    else:
        children = node.args
    return 1 + max((depth(c) for c in children), default=0)


@settings(max_examples=300, deadline=None)
@given(TREES)
def test_round_trip(tree: Node) -> None:
    """A tree written as text parses back to the same tree; its text writes back unchanged."""
    if 3 * depth(tree) > EXPRESSION_MAX_DEPTH:
        return
    text = format_expression(tree)
    parsed = parse_expression(text)
    assert parsed.tree == tree
    assert format_expression(parsed) == text
    assert parse_expression(format_expression(parsed)) == parsed


@settings(max_examples=200, deadline=None)
@given(TREES)
def test_evaluation_raises_only_expression_errors(tree: Node) -> None:
    if 3 * depth(tree) > EXPRESSION_MAX_DEPTH:
        return
    expr = parse_expression(format_expression(tree))
    try:
        result = evaluate(expr, RESOLVE)
    except ExpressionError:
        return
    assert isinstance(truthy(result), bool)
