"""Reading tool definitions people already have: OpenAI function tools and MCP ``tools/list``.

Both formats describe a tool's arguments with a JSON schema; neither says how long a call takes
or whether it changes the world, and only MCP may declare what a call returns. This module reads
what they say, strictly (a wrong shape is an :class:`~evolve.model.errors.InputError` naming the
file and the field), into :class:`ToolSpec` records; turning them into a catalog, with the
guesses that takes, is :mod:`evolve.problems.toolspec.catalog`'s job.

Accepted shapes:

- OpenAI: ``{"tools": [{"type": "function", "function": {name, description, parameters}}]}``,
  or the bare list, or a list of bare function objects (``{name, description, parameters}``);
- MCP: a ``tools/list`` result ``{"tools": [{name, description, inputSchema, outputSchema?,
  annotations?}]}``, or the JSON-RPC response wrapping it (``{"jsonrpc", "id", "result": ...}``).

A tool entry (or its ``function`` object) may carry ``x-evolve: {duration, risk, cost, scope,
...}``: catalog fields the spec gives itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from evolve.model.documents import Reader, describe, join
from evolve.problems.toolspec.meta import read_meta

EXTENSION = "x-evolve"
"""The key under which a spec's tool entry gives catalog fields (duration, risk, ...) itself."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool as its spec describes it, before any name is made a fact."""

    name: str
    where: str
    """The key path of its entry in the spec file (``tools[3]``), for messages."""
    description: str = ""
    required: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    outputs: tuple[str, ...] | None = None
    """The properties of a declared object output schema; ``None`` when none is declared."""
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Catalog fields the spec gives (``x-evolve``, MCP annotations read as a risk)."""
    meta_where: str = ""


def read_spec(doc: object, source: str) -> tuple[ToolSpec, ...]:
    """The tools of a parsed OpenAI or MCP document (see the module docstring for the shapes)."""
    r = Reader(source)
    entries, path = tool_entries(r, doc)
    if not entries:
        raise r.fail(path or "tools", "no tools: the list is empty")
    specs = tuple(read_entry(r, entry, f"{path}[{i}]") for i, entry in enumerate(entries))
    seen: dict[str, str] = {}
    for spec in specs:
        if spec.name in seen:
            raise r.fail(join(spec.where, "name"), f"{describe(spec.name)} is defined twice "
                         f"(first at {seen[spec.name]})")
        seen[spec.name] = spec.where
    return specs


def tool_entries(r: Reader, doc: object) -> tuple[list[Any], str]:
    """The list of tool entries and its key path, unwrapping a JSON-RPC response."""
    if isinstance(doc, list):
        return doc, ""
    if not isinstance(doc, Mapping):
        raise r.fail("", f"expected a list of tools or a mapping with 'tools', got {describe(doc)}")
    prefix = ""
    if "result" in doc and "tools" not in doc:
        if "error" in doc:
            raise r.fail("error", f"a JSON-RPC error response, not a tool list: {describe(doc['error'])}")
        doc, prefix = doc["result"], "result"
        if not isinstance(doc, Mapping):
            raise r.fail(prefix, "expected a tools/list result (a mapping with 'tools'), "
                         f"got {describe(doc)}")
    if "tools" not in doc:
        raise r.fail(join(prefix, "tools"), "missing: the file must list its tools under 'tools' "
                     "(OpenAI function tools or an MCP tools/list result)")
    tools = doc["tools"]
    path = join(prefix, "tools")
    if not isinstance(tools, list):
        raise r.fail(path, f"expected a list of tools, got {describe(tools)}")
    return tools, path


def read_entry(r: Reader, entry: object, path: str) -> ToolSpec:
    """One tool entry in any accepted shape."""
    doc = r.mapping(entry, path, None)
    meta: dict[str, Any] = {}
    meta_where = ""
    if EXTENSION in doc:
        meta, meta_where = read_meta(r, doc[EXTENSION], join(path, EXTENSION)), join(path, EXTENSION)
    if "function" in doc or doc.get("type") == "function":
        kind = doc.get("type", "function")
        if kind != "function":
            raise r.fail(join(path, "type"), f"expected 'function', got {describe(kind)}")
        if "function" not in doc:
            raise r.fail(join(path, "function"), "missing: an OpenAI tool of type function needs "
                         "its 'function' object")
        path = join(path, "function")
        doc = r.mapping(doc["function"], path, None)
        if EXTENSION in doc:
            meta = {**meta, **read_meta(r, doc[EXTENSION], join(path, EXTENSION))}
            meta_where = join(path, EXTENSION)
    if "name" not in doc:
        raise r.fail(join(path, "name"), "missing: every tool needs a name")
    name = r.string(doc["name"], join(path, "name"))
    description = r.optional(doc, "description", path, lambda v, p: free_text(r, v, p), "")
    if "inputSchema" in doc:
        params_key = "inputSchema"
    elif "parameters" in doc:
        params_key = "parameters"
    else:
        params_key = ""
    required, optional = (read_parameters(r, doc[params_key], join(path, params_key))
                          if params_key else ((), ()))
    outputs = (read_output_schema(r, doc["outputSchema"], join(path, "outputSchema"))
               if doc.get("outputSchema") is not None else None)
    risk = annotation_risk(r, doc.get("annotations"), join(path, "annotations"))
    if risk is not None and "risk" not in meta:
        meta, meta_where = {**meta, "risk": risk}, meta_where or join(path, "annotations")
    return ToolSpec(name=name, where=path, description=description, required=required,
                    optional=optional, outputs=outputs, meta=meta, meta_where=meta_where)


def free_text(r: Reader, value: object, path: str) -> str:
    """A spec's description as written (the catalog cleans control characters and length):
    specs in the wild hold carriage returns and long texts, which are no reason to refuse them."""
    if not isinstance(value, str):
        raise r.fail(path, f"expected text, got {describe(value)}")
    return value


def read_parameters(r: Reader, schema: object, path: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The required and the optional parameter names of an object schema, in schema order."""
    doc = r.mapping(schema, path, None)
    kind = doc.get("type", "object")
    if kind != "object":
        raise r.fail(join(path, "type"), f"expected 'object' (arguments are named), got {describe(kind)}")
    props = r.mapping(doc.get("properties", {}), join(path, "properties"), None)
    no_names: tuple[str, ...] = ()
    required = r.optional(doc, "required", path, r.strings, no_names)
    for i, name in enumerate(required):
        if name not in props:
            raise r.fail(f"{join(path, 'required')}[{i}]", f"{describe(name)} is not among the properties")
    return required, tuple(p for p in props if p not in required)


def read_output_schema(r: Reader, schema: object, path: str) -> tuple[str, ...] | None:
    """The properties of a declared output: an object schema's property names (``None`` when
    the schema is not an object with properties: the result is then one value)."""
    doc = r.mapping(schema, path, None)
    if doc.get("type", "object") != "object" or "properties" not in doc:
        return None
    return tuple(r.mapping(doc["properties"], join(path, "properties"), None)) or None


def annotation_risk(r: Reader, annotations: object, path: str) -> str | None:
    """The risk MCP tool annotations state: ``readOnlyHint`` true is a read; ``readOnlyHint``
    false or ``destructiveHint`` true a write; nothing said, ``None``."""
    if annotations is None:
        return None
    doc = r.mapping(annotations, path, None)
    read_only = doc.get("readOnlyHint")
    if read_only is True:
        return "read"
    if read_only is False or doc.get("destructiveHint") is True:
        return "write"
    return None
