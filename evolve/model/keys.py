"""Idempotency keys that name the action: templates a plan carries, resolved when a write is
dispatched.

A key is only final once the task's inputs are bound, so a plan carries a *template*
(``{request_id}:{tool}:{inputs}``, or a catalog's business key such as ``refund:{order_id}``)
and the executor resolves it at dispatch: ``{request_id}`` is the run's request id (two runs of
one plan for two alerts never share a key), ``{tool}`` the tool, ``{inputs}`` a digest of the
bound inputs (a replanned write of the same inputs keeps its key, whatever the replanning search
numbers its task), ``{NAME}`` the bound value of the input ``NAME``. A key with no ``{field}`` is
used as written (a key a person chose).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

from evolve import defaults
from evolve.model.problem import Tool

FIELD = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
"""A ``{field}`` of a key template."""

FIELDS = ("request_id", "tool", "inputs")
"""The fields every key template may use besides the tool's inputs."""


def is_template(key: str) -> bool:
    """Whether ``key`` has fields to resolve (else it is used as written)."""
    return FIELD.search(key) is not None


def write_key(tool: Tool) -> str:
    """The key template the search gives a write of ``tool``: its catalog ``idempotency``, else
    :data:`evolve.defaults.IDEMPOTENCY_KEY`."""
    return tool.idempotency or defaults.IDEMPOTENCY_KEY


def inputs_digest(inputs: Mapping[str, Any]) -> str:
    """A stable short id of bound inputs: the same values give the same digest in every run."""
    text = json.dumps(dict(inputs), sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:defaults.KEY_DIGEST_LENGTH]


def resolve_key(template: str, *, request_id: str, tool: str, inputs: Mapping[str, Any]) -> str:
    """The key of one write: ``template`` with its fields replaced (see the module's docstring);
    an input that is not text is written as JSON, a field it does not know stays as written."""
    if not is_template(template):
        return template
    known = {"request_id": request_id, "tool": tool}

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in known:
            return known[name]
        if name == "inputs":
            return inputs_digest(inputs)
        if name in inputs:
            bound = inputs[name]
            return bound if isinstance(bound, str) else json.dumps(bound, sort_keys=True, default=repr)
        return match.group(0)

    return FIELD.sub(value, template)


def unknown_fields(template: str, tool: Tool) -> list[str]:
    """The fields of ``template`` that are neither :data:`FIELDS` nor inputs of ``tool``."""
    return [name for name in FIELD.findall(template) if name not in FIELDS and name not in tool.inputs]
