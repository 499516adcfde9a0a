"""Plan input: values that seed a domain's world state before planning (``--input``).

A value given on the command line is typed as JSON reads it when that is a scalar (``true``,
``3``, ``null``, ``"x"``), else kept as text; a file gives typed values already. A key the domain
never names (not in its state, no guard tests it, no effect sets it) is refused by name, so a
typo is never a silent new key.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import replace

from evolve.model.documents import describe
from evolve.model.errors import InputError
from evolve.problems.htn.domain import Domain, Scalar, read_keys


def domain_keys(domain: Domain) -> set[str]:
    """Every key the domain names: its state, what any guard reads, what any effect writes."""
    keys = set(domain.state)
    for op in domain.operators.values():
        keys.update(read_keys(op.pre), op.effects.writes())
    for method in domain.methods:
        keys.update(read_keys(method.pre))
    for task in domain.tasks.values():
        keys.update(read_keys(task.achieves))
    return keys


def typed(text: str) -> Scalar:
    """``KEY=VALUE``'s value: JSON's reading when it is a scalar, else the text itself."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return text
    return value if value is None or isinstance(value, (str, int, float, bool)) else text


def parse_inputs(items: Iterable[str]) -> dict[str, Scalar]:
    out: dict[str, Scalar] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InputError("--input", item, "expected KEY=VALUE")
        out[key.strip()] = typed(value)
    return out


def seeded(domain: Domain, inputs: Mapping[str, object], source: str) -> Domain:
    """``domain`` with ``inputs`` over its state; ``source`` names where they came from."""
    known = domain_keys(domain)
    state: dict[str, Scalar] = dict(domain.state)
    for key, value in inputs.items():
        if key not in known:
            raise InputError(source, key, f"not a key of the domain {domain.name!r} "
                                          f"(its keys: {', '.join(sorted(known))})")
        if value is None or isinstance(value, (str, int, float, bool)):
            state[key] = value
        else:
            raise InputError(source, key,
                             f"expected a string, number, true/false or null, got {describe(value)}")
    return replace(domain, state=state)
