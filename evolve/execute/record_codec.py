"""Records as the journal's history holds them: one JSON object per record, and back.

The history is the run's truth (:mod:`evolve.execute.journal`), so a record must come back from
it exactly as the state folds it: the codec is driven by each record class's own field types, so
a kind added to :data:`evolve.execute.records.Record` needs nothing here as long as its fields
are JSON values, tuples of them, mappings, a :class:`~evolve.model.plan.Plan` or
:class:`~evolve.execute.records.TaskRow` values. A live run folds the decoded record, not the one
it made (:meth:`evolve.execute.journal.Journal.append`), so what it holds in memory and what a
resumed run replays are the same values, tuples where a field says tuple and lists inside a
tool's outputs either way.

Decoding reads JSON and builds frozen dataclasses; it never executes anything.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, get_args, get_origin

from evolve.execute import records as rec
from evolve.model.errors import EvolveError
from evolve.model.plan import Plan
from evolve.model.plan_file import plan_from_dict


class RecordCodecError(EvolveError):
    """A history row that is not a record this evolve knows."""


KINDS: dict[str, type[Any]] = {kind.__name__: kind for kind in get_args(rec.Record)}
"""Every record kind, by its class name (the history's ``kind`` column)."""


def field_types(kind: type[Any]) -> tuple[tuple[str, Any], ...]:
    """The record class's fields with their resolved types (``from __future__`` annotations are
    strings until resolved)."""
    hints = typing.get_type_hints(kind, vars(rec))
    return tuple((f.name, hints[f.name]) for f in dataclasses.fields(kind))


Convert = Callable[[Any, str], Any]


def identity(value: Any, source: str) -> Any:
    return value


def converter(hint: Any) -> Convert:
    """How JSON data of a field typed ``hint`` becomes its value again (worked out once per
    field: decoding runs for every record a live run commits)."""
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        inner = converter(options[0]) if len(options) == 1 else identity
        if inner is identity:
            return identity
        return lambda value, source: None if value is None else inner(value, source)
    if hint is Plan:
        return lambda value, source: plan_from_dict(value, source, "plan")
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return enum_member(hint)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        fields = {name: converter(h) for name, h in field_types(hint)}
        cls = hint
        return lambda value, source: cls(**{k: fields[k](v, source) for k, v in value.items()})
    if origin is tuple:
        args = get_args(hint)
        item = converter(args[0]) if len(args) == 2 and args[1] is Ellipsis else identity
        if item is identity:
            return lambda value, source: tuple(value)
        return lambda value, source: tuple(item(v, source) for v in value)
    return identity


def enum_member(names: type[StrEnum]) -> Convert:
    """The member of ``names`` a history value spells (a status is written as its text)."""
    def member(value: Any, source: str) -> Any:
        try:
            return names(value)
        except ValueError:
            raise RecordCodecError(f"{source}: {value!r} is not one of {', '.join(names)}") from None
    return member


FIELDS: dict[str, dict[str, Convert]] = {
    name: {field: converter(hint) for field, hint in field_types(kind)} for name, kind in KINDS.items()
}
"""Each kind's fields and how to read each back, worked out once."""


def jsonable(value: Any) -> Any:
    """What ``json`` cannot write by itself: a plan, a row, a mapping other than a dict."""
    if isinstance(value, Plan):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"a record holds a {type(value).__name__}, which the history cannot keep")


def encode(record: rec.Record) -> tuple[str, str]:
    """The record's kind and its JSON text."""
    kind = type(record).__name__
    body = {name: getattr(record, name) for name in FIELDS[kind]}
    return kind, json.dumps(body, sort_keys=True, separators=(",", ":"), default=jsonable)


def decode(kind: str, text: str, source: str = "history") -> rec.Record:
    """The record a history row holds; a kind or a field this evolve does not know is a
    :class:`RecordCodecError` naming ``source``."""
    cls = KINDS.get(kind)
    if cls is None:
        raise RecordCodecError(f"{source}: unknown record kind {kind!r}")
    try:
        body = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordCodecError(f"{source}: its {kind} record is not JSON ({exc.msg})") from None
    if not isinstance(body, dict):
        raise RecordCodecError(f"{source}: its {kind} record is not a JSON object")
    known = FIELDS[kind]
    unknown = sorted(set(body) - set(known))
    if unknown:
        raise RecordCodecError(f"{source}: its {kind} record has unknown fields {', '.join(unknown)}")
    record: rec.Record = cls(**{name: known[name](value, source) for name, value in body.items()})
    return record
