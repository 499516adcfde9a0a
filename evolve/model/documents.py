"""Reading documents strictly: the one place a file becomes data.

A typo in a problem or plan file must never turn into a silent default, so every key is
checked: :class:`Reader` walks a parsed document and raises :class:`InputError` naming the
file, the key path (``tools.orders.get.duration``) and what was expected. The YAML loader
refuses duplicate keys, and a file is read only when it is a regular file within the size
limit, so a FIFO or a device never hangs a command."""

from __future__ import annotations

import json
import math
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

import yaml

from evolve.model.errors import InputError
from evolve.model.limits import (
    DEPTH_PROBLEM,
    MAX_DEPTH,
    MAX_FILE_BYTES,
    MAX_INTEGER,
    MAX_NUMBER,
    MAX_TEXT,
    NAME,
    flow_depth,
    name_problem,
    tree_problem,
)
from evolve.model.plan import FAILURE_POLICIES, FailurePolicy

T = TypeVar("T")


def describe(value: object) -> str:
    """How a bad value is quoted in an error: short, JSON-like and printable, at a cost bounded
    whatever the value's size (a container is cut before it is encoded)."""
    text = json.dumps(_clip(value, 2), default=_opaque, ensure_ascii=True)
    return text if len(text) <= 40 else text[:37] + "..."


def _clip(value: object, depth: int) -> object:
    if isinstance(value, str):
        return value[:60]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INTEGER:
        return f"<a {len(str(abs(value))) if value.bit_length() < 20_000 else 'huge'}-digit integer>"
    if isinstance(value, (list, tuple)):
        return [_clip(v, depth - 1) for v in value[:4]] if depth > 0 else "[...]"
    if isinstance(value, Mapping):
        items = list(value.items())[:4]
        return {str(k)[:30]: _clip(v, depth - 1) for k, v in items} if depth > 0 else "{...}"
    return value


def _opaque(value: object) -> str:
    return f"<{type(value).__name__}>"


class Reader:
    """Walks a parsed document, tracking the key path for error messages."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> InputError:
        return InputError(self.source, path, message)

    def mapping(self, value: object, path: str, allowed: tuple[str, ...] | None) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail(path, f"expected a mapping, got {describe(value)}")
        for key in value:
            if not isinstance(key, str):
                raise self.fail(path, f"keys must be strings, got {describe(key)}")
            if allowed is not None and key not in allowed:
                raise self.fail(
                    join(path, key), f"unknown key (allowed: {', '.join(allowed)})"
                )
        return dict(value)

    def string(self, value: object, path: str) -> str:
        if not isinstance(value, str) or not value:
            raise self.fail(path, f"expected a non-empty string, got {describe(value)}")
        return value

    def text(self, value: object, path: str) -> str:
        """Free text (an objective, a description): a string of at most :data:`MAX_TEXT`
        characters, without control characters other than newlines and tabs."""
        if not isinstance(value, str):
            raise self.fail(path, f"expected text, got {describe(value)}")
        if len(value) > MAX_TEXT:
            raise self.fail(path, f"longer than {MAX_TEXT:,} characters")
        bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cf") and c not in "\n\t"), None)
        if bad is not None:
            raise self.fail(path, f"holds the control character U+{ord(bad):04X}")
        return value

    def name(self, value: object, path: str, pattern: re.Pattern[str] = NAME) -> str:
        """A name that references can spell and tables can show (see :mod:`evolve.model.limits`)."""
        text = self.string(value, path)
        problem = name_problem(text, pattern)
        if problem is not None:
            raise self.fail(path, f"{describe(text)} {problem}")
        return text

    def names(self, value: object, path: str, pattern: re.Pattern[str] = NAME) -> tuple[str, ...]:
        items = self.strings(value, path)
        for i, item in enumerate(items):
            self.name(item, f"{path}[{i}]", pattern)
        return items

    def strings(self, value: object, path: str) -> tuple[str, ...]:
        if not isinstance(value, list):
            raise self.fail(path, f"expected a list of strings, got {describe(value)}")
        items = tuple(self.string(item, f"{path}[{i}]") for i, item in enumerate(value))
        seen: set[str] = set()
        for i, item in enumerate(items):
            if item in seen:
                raise self.fail(f"{path}[{i}]", f"{describe(item)} appears twice")
            seen.add(item)
        return items

    def number(self, value: object, path: str, minimum: float = 0.0) -> float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok and isinstance(value, int) and abs(value) > MAX_NUMBER:
            raise self.fail(path, f"expected a number <= {MAX_NUMBER:g}, got {describe(value)}")
        if not ok or not math.isfinite(cast(float, value)) or cast(float, value) < minimum:
            raise self.fail(path, f"expected a number >= {minimum:g}, got {describe(value)}")
        if cast(float, value) > MAX_NUMBER:
            raise self.fail(path, f"expected a number <= {MAX_NUMBER:g}, got {describe(value)}")
        return float(cast(float, value))

    def integer(self, value: object, path: str, minimum: int) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.fail(path, f"expected an integer >= {minimum}, got {describe(value)}")
        if value > MAX_INTEGER:
            raise self.fail(path, f"expected an integer <= {MAX_INTEGER}, got {describe(value)}")
        return value

    def texts(self, value: object, path: str) -> tuple[str, ...]:
        """One string or a list of them (``assumes``, ``evidence``, ``proof``), as a tuple."""
        if isinstance(value, str):
            return (self.string(value, path),)
        if isinstance(value, list):
            return self.strings(value, path)
        raise self.fail(path, f"expected a string or a list of strings, got {describe(value)}")

    def choice(self, value: object, path: str, allowed: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(path, f"expected one of {', '.join(allowed)}, got {describe(value)}")
        return value

    def failure_policy(self, value: object, path: str) -> FailurePolicy:
        """An ``on_failure`` (a task's or a tool's): one of :data:`FAILURE_POLICIES`."""
        for known in FAILURE_POLICIES:
            if value == known:
                return known
        raise self.fail(path, f"expected one of {', '.join(FAILURE_POLICIES)}, got {describe(value)}")

    def positive(self, value: object, path: str) -> float:
        """A finite number > 0 (a timeout)."""
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not ok or not math.isfinite(cast(float, value)) or cast(float, value) <= 0:
            raise self.fail(path, f"expected a number > 0, got {describe(value)}")
        return float(cast(float, value))

    def boolean(self, value: object, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(path, f"expected true or false, got {describe(value)}")
        return value

    def optional(self, data: Mapping[str, Any], key: str, path: str,
                 read: Callable[[object, str], T], default: T) -> T:
        if key not in data or data[key] is None:
            return default
        return read(data[key], join(path, key))


def join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's C loader where PyYAML was built with it: ten times faster on large catalogs."""


class StrictLoader(SAFE_LOADER):  # type: ignore[misc]
    """The safe loader, refusing a mapping that holds one key twice (YAML would keep the last,
    silently: two ``tools:`` sections must be an error, not a lost catalog)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"the key {describe(key)} appears twice", key_node.start_mark)
            seen.add(key)
        return cast(dict[Any, Any], super().construct_mapping(node, deep=deep))


StrictLoader.add_constructor("tag:yaml.org,2002:map", StrictLoader.construct_yaml_map)


class DuplicateKey(ValueError):
    """A JSON object holding one key twice."""


def unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


FILE_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
              (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
"""What a path may be instead of a regular file, in the words of the refusal."""


def read_file_bytes(path: str | Path) -> bytes:
    """The bytes of an input file, refused unless it is a regular file of at most
    :data:`MAX_FILE_BYTES`.

    Checked before opening, because opening a FIFO blocks until a writer comes and reading
    ``/dev/zero`` never ends; the read itself is bounded too, so a file that grows after the
    check cannot make it allocate more than the limit.
    """
    source = str(path)
    try:
        mode = os.stat(path).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in FILE_KINDS if test(mode)), "not a file")
            raise InputError(source, "", f"not a regular file ({kind}); give the path of a file")
        with open(path, "rb") as stream:
            data = stream.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise InputError(source, "", f"cannot read file ({exc.strerror or exc})") from None
    if len(data) > MAX_FILE_BYTES:
        raise InputError(source, "", f"larger than {MAX_FILE_BYTES >> 20} MiB; such files are not read")
    return data


def read_text_file(path: str | Path) -> str:
    """A UTF-8 text file within :data:`MAX_FILE_BYTES`; any failure is one line naming it."""
    try:
        return read_file_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), "", f"not UTF-8 text (byte {exc.start})") from None


def write_text_file(path: str | Path, text: str) -> None:
    """Write ``text`` as UTF-8 to ``path``, or say in one line why it cannot be: a missing folder,
    a parent that is a file or a read-only place is the user's path to fix, not a bug in evolve."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(str(path), "", f"cannot write {describe(path)} ({exc.strerror or exc})") from None


def document_text(doc: Any, path: str | Path) -> str:
    """``doc`` as the text :func:`read_document` reads back from ``path``: JSON for a ``.json``
    name, YAML (keys in their order) for any other."""
    if str(path).endswith(".json"):
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)


def read_document(path: str | Path) -> Any:
    """Parse a YAML or JSON file (JSON is YAML, but its errors read better from ``json``), within
    the bounds of :mod:`evolve.model.limits`."""
    source = str(path)
    text = read_text_file(path)
    try:
        if source.endswith(".json"):
            doc = json.loads(text, object_pairs_hook=unique_pairs)
        else:
            doc = yaml.load(text, Loader=StrictLoader)
    except DuplicateKey as exc:
        raise InputError(source, "", f"invalid JSON: the key {describe(exc.args[0])} appears twice") from None
    except json.JSONDecodeError as exc:
        raise InputError(source, "", f"invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except RecursionError:
        raise InputError(source, "", DEPTH_PROBLEM) from None
    except yaml.YAMLError as exc:
        if flow_depth(text) > MAX_DEPTH:
            raise InputError(source, "", DEPTH_PROBLEM) from None
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(source, "", f"invalid YAML{where}: {problem}") from None
    problem = tree_problem(doc)
    if problem is not None:
        raise InputError(source, "", problem)
    return doc
