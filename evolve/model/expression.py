"""The plan's condition language: ``when`` and ``assumes`` are written in it.

A condition such as ``$t5.decision.refund_inr > 1000 and len($t3.refunds) == 0`` comes from a
plan file, from the search or from a language model: untrusted text. So it is never handed to
Python's ``eval``; it is tokenized and parsed here by a small recursive-descent parser into a
tree of frozen nodes, with a bounded length and a bounded nesting depth (a hostile condition
cannot exhaust the stack or the clock). :mod:`evolve.model.evaluation` evaluates the tree over
values the runtime resolves.

The language::

    expr       := or
    or         := and ("or" and)*
    and        := not ("and" not)*
    not        := "not" not | comparison
    comparison := unary [("==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "not" "in") unary]
    unary      := "-" unary | primary
    primary    := NUMBER | STRING | "true" | "false" | "null" | REF
                | "[" [expr ("," expr)*] "]" | NAME "(" [expr ("," expr)*] ")" | "(" expr ")"

``REF`` is ``$fact``, ``$task.output`` or ``$task.output.key.sub`` (the deeper keys walk into
the output's value). Functions: ``len(x)``, ``exists(REF)``, and the status tests ``failed($t9)``
(the task failed for good, or its write is ``unknown``) and ``status($t9)`` (its status as text:
``"done"``, ``"failed"``, ...), whose argument names a task, not a fact. Comparisons do not chain
(``1 < $x < 3`` is an error: write ``1 < $x and $x < 3``). Types are strict: ``true`` is not
``1``, and ordering compares only numbers with numbers and strings with strings.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evolve.defaults import EXPRESSION_MAX_DEPTH, EXPRESSION_MAX_LENGTH
from evolve.model.errors import EvolveError
from evolve.model.plan import REF, Ref


class ExpressionError(EvolveError):
    """A condition that cannot be parsed or evaluated; the message names where and what."""

    def __init__(self, reason: str, text: str = "", position: int | None = None) -> None:
        self.reason = reason
        self.text = text
        self.position = position
        where = f"column {position + 1}: " if position is not None else ""
        super().__init__(f"{where}{reason}")


# -- the tree -----------------------------------------------------------------------------------

Value = bool | int | float | str | None


@dataclass(frozen=True)
class Literal:
    value: Value


@dataclass(frozen=True)
class ListNode:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Reference:
    ref: Ref
    path: tuple[str, ...] = ()

    def __str__(self) -> str:
        return str(self.ref) + "".join(f".{key}" for key in self.path)


@dataclass(frozen=True)
class Not:
    operand: Node


@dataclass(frozen=True)
class Negate:
    operand: Node


@dataclass(frozen=True)
class BoolOp:
    op: str  # "and" | "or"
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Compare:
    op: str  # "==" "!=" "<" "<=" ">" ">=" "in" "not in"
    left: Node
    right: Node


@dataclass(frozen=True)
class Call:
    name: str
    args: tuple[Node, ...]


Node = Literal | ListNode | Reference | Not | Negate | BoolOp | Compare | Call


@dataclass(frozen=True)
class Expression:
    """A parsed condition: its text, every reference it reads (in order), and its tree."""

    text: str
    refs: tuple[Ref, ...]
    tree: Node = field(compare=False, repr=False, hash=False, default=Literal(True))

    tested: tuple[str, ...] = ()
    """The tasks whose status it tests (``failed($t9)``, ``status($t9)``)."""

    def __str__(self) -> str:
        return self.text


STATUS_FUNCTIONS = ("failed", "status")
FUNCTIONS = ("len", "exists", *STATUS_FUNCTIONS)
KEYWORDS = ("and", "or", "not", "in", "true", "false", "null")
COMPARISONS = ("==", "!=", "<=", ">=", "<", ">")


# -- tokens -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Token:
    kind: str  # "num" "str" "name" "ref" "op" "end"
    value: Any
    pos: int


DIGITS = "0123456789"
NUMBER = re.compile(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
NAME = re.compile(r"[A-Za-z_]\w*")
ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t"}
PUNCTUATION = ("==", "!=", "<=", ">=", "<", ">", "(", ")", "[", "]", ",", "-")


def tokenize(text: str) -> list[Token]:
    """The tokens of ``text``, ending with an ``end`` token; :class:`ExpressionError` on a
    character that starts none."""
    tokens: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch == "$":
            match = REF.match(text, i)
            if match is None:
                raise ExpressionError("'$' must start a reference such as $fact or $t1.output",
                                      text, i)
            head, tail, deeper = match.groups()
            ref = Ref(task=None, fact=head) if tail is None else Ref(task=head, fact=tail)
            path = tuple(deeper.split(".")[1:]) if deeper else ()
            tokens.append(Token("ref", Reference(ref, path), i))
            i = match.end()
            continue
        if ch in DIGITS:
            match = NUMBER.match(text, i)
            assert match is not None  # a digit always starts a number
            word = match.group()
            number: int | float = float(word) if match.group(1) or match.group(2) else int(word)
            if isinstance(number, float) and not math.isfinite(number):
                raise ExpressionError(f"number {word} is out of range", text, i)
            tokens.append(Token("num", number, i))
            i = match.end()
            continue
        if ch in "'\"":
            value, i2 = read_string(text, i)
            tokens.append(Token("str", value, i))
            i = i2
            continue
        if ch.isascii() and (ch.isalpha() or ch == "_"):
            match = NAME.match(text, i)
            assert match is not None
            tokens.append(Token("name", match.group(), i))
            i = match.end()
            continue
        for op in PUNCTUATION:
            if text.startswith(op, i):
                tokens.append(Token("op", op, i))
                i += len(op)
                break
        else:
            hint = (" (use 'and', 'or', 'not')" if ch in "&|!"
                    else " (write '==' to compare)" if ch == "=" else "")
            raise ExpressionError(f"unexpected character {ch!r}{hint}", text, i)
    tokens.append(Token("end", None, n))
    return tokens


def read_string(text: str, start: int) -> tuple[str, int]:
    """The quoted string at ``start`` and the index after its closing quote."""
    quote = text[start]
    out: list[str] = []
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == quote:
            return "".join(out), i + 1
        if ch == "\\":
            if i + 1 >= len(text):
                break
            escaped = ESCAPES.get(text[i + 1])
            if escaped is None:
                raise ExpressionError(f"unknown escape \\{text[i + 1]} in a string", text, i)
            out.append(escaped)
            i += 2
            continue
        out.append(ch)
        i += 1
    raise ExpressionError("string is not closed", text, start)


# -- the parser ---------------------------------------------------------------------------------

class Parser:
    """Recursive descent over the tokens; ``depth`` bounds the nesting so the stack stays small."""

    def __init__(self, text: str, tokens: list[Token], max_depth: int) -> None:
        self.text = text
        self.tokens = tokens
        self.at = 0
        self.depth = 0
        self.max_depth = max_depth
        self.refs: list[Ref] = []
        self.tested: list[str] = []

    def peek(self) -> Token:
        return self.tokens[self.at]

    def take(self) -> Token:
        token = self.tokens[self.at]
        self.at += 1
        return token

    def fail(self, reason: str, token: Token | None = None) -> ExpressionError:
        return ExpressionError(reason, self.text, (token or self.peek()).pos)

    def is_op(self, value: str) -> bool:
        token = self.peek()
        return token.kind == "op" and token.value == value

    def is_name(self, value: str) -> bool:
        token = self.peek()
        return token.kind == "name" and token.value == value

    def expect_op(self, value: str, what: str) -> None:
        if not self.is_op(value):
            raise self.fail(f"expected {value!r} {what}, got {shown(self.peek())}")
        self.take()

    def enter(self) -> None:
        self.depth += 1
        if self.depth > self.max_depth:
            raise self.fail(f"nested more than {self.max_depth} levels deep")

    def parse(self) -> Node:
        if self.peek().kind == "end":
            raise self.fail("empty condition")
        node = self.parse_or()
        if self.peek().kind != "end":
            raise self.fail(f"unexpected {shown(self.peek())} after a complete condition")
        return node

    def parse_or(self) -> Node:
        return self.parse_chain("or", self.parse_and)

    def parse_and(self) -> Node:
        return self.parse_chain("and", self.parse_not)

    def parse_chain(self, op: str, operand: Callable[[], Node]) -> Node:
        items = [operand()]
        while self.is_name(op):
            self.take()
            items.append(operand())
        return items[0] if len(items) == 1 else BoolOp(op, tuple(items))

    def parse_not(self) -> Node:
        if self.is_name("not"):
            self.take()
            self.enter()
            node: Node = Not(self.parse_not())
            self.depth -= 1
            return node
        return self.parse_comparison()

    def comparison_op(self) -> str | None:
        token = self.peek()
        if token.kind == "op" and token.value in COMPARISONS:
            return str(token.value)
        if token.kind == "name" and token.value == "in":
            return "in"
        if token.kind == "name" and token.value == "not":
            after = self.tokens[self.at + 1]
            if after.kind == "name" and after.value == "in":
                return "not in"
        return None

    def parse_comparison(self) -> Node:
        left = self.parse_unary()
        op = self.comparison_op()
        if op is None:
            return left
        self.take()
        if op == "not in":
            self.take()
        right = self.parse_unary()
        if self.comparison_op() is not None:
            raise self.fail("comparisons do not chain: join them with 'and'")
        return Compare(op, left, right)

    def parse_unary(self) -> Node:
        if self.is_op("-"):
            self.take()
            self.enter()
            operand = self.parse_unary()
            self.depth -= 1
            if isinstance(operand, Literal) and isinstance(operand.value, (int, float)) \
                    and not isinstance(operand.value, bool):
                return Literal(-operand.value)
            return Negate(operand)
        return self.parse_primary()

    def parse_primary(self) -> Node:
        token = self.take()
        if token.kind in ("num", "str"):
            return Literal(token.value)
        if token.kind == "ref":
            self.refs.append(token.value.ref)
            node: Node = token.value
            return node
        if token.kind == "op" and token.value == "(":
            self.enter()
            node = self.parse_or()
            self.expect_op(")", "to close '('")
            self.depth -= 1
            return node
        if token.kind == "op" and token.value == "[":
            self.enter()
            items = self.parse_items("]", "to close '['")
            self.depth -= 1
            return ListNode(items)
        if token.kind == "name":
            return self.parse_name(token)
        self.at -= 1
        raise self.fail(f"expected a value, got {shown(token)}", token)

    def parse_name(self, token: Token) -> Node:
        word = token.value
        if word == "true":
            return Literal(True)
        if word == "false":
            return Literal(False)
        if word == "null":
            return Literal(None)
        if word in FUNCTIONS:
            if not self.is_op("("):
                raise self.fail(f"expected '(' after {word}")
            self.take()
            self.enter()
            args = self.parse_items(")", f"to close {word}(")
            self.depth -= 1
            if len(args) != 1:
                raise self.fail(f"{word}() takes one argument, got {len(args)}", token)
            if word == "exists" and not isinstance(args[0], Reference):
                raise self.fail("exists() takes a reference such as $t1.output", token)
            if word in STATUS_FUNCTIONS:
                arg = args[0]
                if not isinstance(arg, Reference) or arg.ref.task is not None or arg.path:
                    raise self.fail(f"{word}() takes a task such as $t9", token)
                self.refs.remove(arg.ref)  # it names a task: no fact is read
                self.tested.append(arg.ref.fact)
            return Call(word, args)
        if word in KEYWORDS:
            raise self.fail(f"expected a value, got {word!r}", token)
        raise self.fail(
            f"unknown name {word!r}: a reference starts with '$', a string is quoted, "
            f"and the functions are {', '.join(FUNCTIONS)}", token)

    def parse_items(self, close: str, what: str) -> tuple[Node, ...]:
        items: list[Node] = []
        if self.is_op(close):
            self.take()
            return ()
        while True:
            items.append(self.parse_or())
            if self.is_op(","):
                self.take()
                continue
            self.expect_op(close, what)
            return tuple(items)


def shown(token: Token) -> str:
    """How a token is quoted in an error."""
    if token.kind == "end":
        return "the end of the condition"
    if token.kind == "ref":
        return str(token.value)
    return repr(token.value)


def parse_expression(text: str, *, max_length: int = EXPRESSION_MAX_LENGTH,
                     max_depth: int = EXPRESSION_MAX_DEPTH) -> Expression:
    """``text`` parsed, or :class:`ExpressionError` naming the column and what is wrong.

    Cached for the default bounds: plans share a small set of conditions, and the validator
    and the runtime ask for the same ones again and again.
    """
    if max_length == EXPRESSION_MAX_LENGTH and max_depth == EXPRESSION_MAX_DEPTH:
        return parse_cached(text)
    return parse_uncached(text, max_length, max_depth)


@functools.lru_cache(maxsize=4096)
def parse_cached(text: str) -> Expression:
    return parse_uncached(text, EXPRESSION_MAX_LENGTH, EXPRESSION_MAX_DEPTH)


def parse_uncached(text: str, max_length: int, max_depth: int) -> Expression:
    if not isinstance(text, str):
        raise ExpressionError(f"a condition must be text, got {type(text).__name__}")
    if len(text) > max_length:
        raise ExpressionError(f"condition is {len(text)} characters long, more than {max_length}")
    parser = Parser(text, tokenize(text), max_depth)
    tree = parser.parse()
    return Expression(text=text, refs=tuple(parser.refs), tree=tree, tested=tuple(parser.tested))


# -- writing a tree back ------------------------------------------------------------------------

def format_expression(expr: Expression | Node) -> str:
    """Canonical text for a tree: parsing it gives the same tree back (fully parenthesised
    where precedence could be in doubt)."""
    node = expr.tree if isinstance(expr, Expression) else expr
    return write(node)


def write(node: Node) -> str:
    if isinstance(node, Literal):
        return write_literal(node.value)
    if isinstance(node, Reference):
        return str(node)
    if isinstance(node, ListNode):
        return "[" + ", ".join(write(item) for item in node.items) + "]"
    if isinstance(node, Not):
        return f"not ({write(node.operand)})"
    if isinstance(node, Negate):
        return f"-({write(node.operand)})"
    if isinstance(node, BoolOp):
        return f" {node.op} ".join(f"({write(item)})" for item in node.operands)
    if isinstance(node, Compare):
        return f"({write(node.left)}) {node.op} ({write(node.right)})"
    return f"{node.name}(" + ", ".join(write(arg) for arg in node.args) + ")"


def write_literal(value: Value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    escaped = value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n").replace("\t", "\\t")
    return f"'{escaped}'"
