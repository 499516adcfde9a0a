"""Search states as plain data: what a checkpoint holds, encoded so reading it runs no code.

A pickle is a program: loading one may call anything it names, so a run folder
holding a pickle would not be data. This codec writes the same state as JSON
with a few tagged forms (tuples, dicts whose keys are not plain strings, numpy arrays and
scalars, random generators, evolve's own objects and its enum members, by name), and reads
it back by building only what the tags allow:

- an object only of a class defined in an already-imported ``evolve`` module
  that is a dataclass or declares ``CHECKPOINT_STATE = True``; it is made with
  ``object.__new__`` and its attributes are set directly, so no ``__init__``,
  ``__post_init__`` or ``__setstate__`` of the file's choosing runs, and no
  module is ever imported because a file names it;
- a numpy array only of a plain numeric or boolean dtype, from its raw bytes;
- a random generator only from numpy's own bit generators, by their state.

Anything else is refused when encoding (so a new kind of state fails in the
tests that checkpoint it, not at a user's resume) and when decoding.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import random
import sys
from typing import Any

import numpy as np

from evolve.model.errors import EvolveError

BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")
"""numpy bit generators a state may name."""

DTYPES = frozenset({"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                    "float32", "float64"})
"""Array dtypes a state may hold: raw numbers, nothing that unpickles."""

MAX_DEPTH = 200
"""Nesting a state may have; deeper means a crafted file, refused before Python's own limit."""


class StateError(EvolveError):
    """A state that cannot be written or read as plain data."""


class EncodeMemo:
    """Encodings of immutable objects kept from one checkpoint to the next.

    A search's state changes little between checkpoints: most tasks and plans of the new
    population are the very objects the last one held, and encoding them again made each
    checkpoint cost time in proportion to everything the search holds (0.4 s a generation
    with plans of 800 tasks). Only objects whose class declares ``CHECKPOINT_IMMUTABLE =
    True`` (frozen, never changed in place) are kept, keyed by identity and held, so an id
    cannot be reused; :meth:`rotate` after each checkpoint drops what it no longer held.
    """

    def __init__(self) -> None:
        self.previous: dict[int, tuple[Any, Any]] = {}
        self.current: dict[int, tuple[Any, Any]] = {}

    def get(self, value: Any) -> Any:
        key = id(value)
        found = self.current.get(key) or self.previous.get(key)
        if found is None or found[0] is not value:
            return None
        self.current[key] = found
        return found[1]

    def put(self, value: Any, encoded: Any) -> None:
        self.current[id(value)] = (value, encoded)

    def rotate(self) -> None:
        """End of one state's encoding: keep only what it used."""
        self.previous, self.current = self.current, {}


def encode(value: Any, memo: EncodeMemo | None = None) -> Any:
    """``value`` as JSON-able data (see the module docstring for what is allowed); with a
    ``memo``, immutable objects encoded for an earlier state are not encoded again (the data
    is the same: the encoding of an object depends on the object alone)."""
    return _encode(value, 0, memo)


def decode(data: Any) -> Any:
    """The value :func:`encode` made ``data`` from; refuses anything it did not make."""
    return _decode(data, 0)


def _encode(value: Any, depth: int, memo: EncodeMemo | None) -> Any:
    if depth > MAX_DEPTH:
        raise StateError(f"state nested deeper than {MAX_DEPTH} levels")
    if value is None or isinstance(value, (bool, str)):
        return value
    if type(value) in (int, float):
        return value
    if isinstance(value, list):
        return [_encode(v, depth + 1, memo) for v in value]
    if type(value) is tuple:
        return {"$tuple": [_encode(v, depth + 1, memo) for v in value]}
    if type(value) in (set, frozenset):
        items = sorted((_encode(v, depth + 1, memo) for v in value), key=repr)
        return {"$frozenset" if type(value) is frozenset else "$set": items}
    if type(value) is dict:
        if all(type(k) is str and not k.startswith("$") for k in value):
            return {k: _encode(v, depth + 1, memo) for k, v in value.items()}
        return {"$dict": [[_encode(k, depth + 1, memo), _encode(v, depth + 1, memo)]
                          for k, v in value.items()]}
    if isinstance(value, np.ndarray):
        if value.dtype.name not in DTYPES:
            raise StateError(f"arrays of dtype {value.dtype} cannot be checkpointed")
        data = np.ascontiguousarray(value)
        return {"$array": value.dtype.name, "shape": list(value.shape),
                "bytes": base64.b64encode(data.tobytes()).decode("ascii")}
    if isinstance(value, np.generic):
        if value.dtype.name not in DTYPES:
            raise StateError(f"numpy scalars of dtype {value.dtype} cannot be checkpointed")
        return {"$scalar": value.dtype.name, "value": value.item()}
    if isinstance(value, np.random.Generator):
        bits = value.bit_generator
        return {"$generator": type(bits).__name__, "state": _encode(bits.state, depth + 1, memo)}
    if type(value) is random.Random:
        return {"$random": _encode(value.getstate(), depth + 1, memo)}
    cls = type(value)
    if isinstance(value, enum.Enum) and cls.__module__.split(".")[0] == "evolve":
        return {"$enum": f"{cls.__module__}:{cls.__qualname__}", "name": value.name}
    if _allowed_class(cls):
        shared = memo if getattr(cls, "CHECKPOINT_IMMUTABLE", False) is True else None
        if shared is not None:
            known = shared.get(value)
            if known is not None:
                return known
        fields = _attributes(value)
        encoded = {"$object": f"{cls.__module__}:{cls.__qualname__}",
                   "fields": {k: _encode(v, depth + 1, memo) for k, v in fields.items()}}
        if shared is not None:
            shared.put(value, encoded)
        return encoded
    raise StateError(f"{cls.__module__}.{cls.__qualname__} cannot be checkpointed as plain data "
                     "(make it a dataclass or set CHECKPOINT_STATE = True on it)")


def _attributes(value: Any) -> dict[str, Any]:
    """The attributes a plain object is made of: its own ``__getstate__`` decides what is
    state (a task leaves out its memo), else its ``__dict__``."""
    own = getattr(type(value), "__getstate__", None) is not getattr(object, "__getstate__", None)
    state = value.__getstate__() if own else None
    if isinstance(state, dict):
        return state
    if hasattr(value, "__dict__"):
        return dict(vars(value))
    slots = [s for c in type(value).__mro__ for s in getattr(c, "__slots__", ())]
    return {s: getattr(value, s) for s in slots if hasattr(value, s)}


def _allowed_class(cls: type) -> bool:
    return (cls.__module__.split(".")[0] == "evolve"
            and (dataclasses.is_dataclass(cls) or getattr(cls, "CHECKPOINT_STATE", False) is True))


def _resolve_class(name: object, allowed: Any = None) -> type:
    """The class a tag names, if it is one of evolve's already-imported classes that
    ``allowed`` accepts (default: a checkpointable object's class)."""
    if not isinstance(name, str) or name.count(":") != 1:
        raise StateError(f"bad object tag {str(name)[:60]!r}")
    module_name, qualname = name.split(":")
    module = sys.modules.get(module_name)
    if module_name.split(".")[0] != "evolve" or module is None:
        raise StateError(f"unknown class {name[:80]!r}")
    found: Any = module
    for part in qualname.split("."):
        found = getattr(found, part, None)
    if not isinstance(found, type) or found.__module__ != module_name \
            or not (allowed or _allowed_class)(found):
        raise StateError(f"class {name[:80]!r} may not be restored from a checkpoint")
    return found


def _is_enum(cls: type) -> bool:
    return issubclass(cls, enum.Enum)


def _decode(data: Any, depth: int) -> Any:
    if depth > MAX_DEPTH:
        raise StateError(f"state nested deeper than {MAX_DEPTH} levels")
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [_decode(v, depth + 1) for v in data]
    if not isinstance(data, dict):
        raise StateError(f"unexpected value {str(data)[:60]!r}")
    if not any(k.startswith("$") for k in data):
        return {k: _decode(v, depth + 1) for k, v in data.items()}
    tag = next(iter(data))
    body = data[tag]
    if tag == "$tuple":
        return tuple(_decode(v, depth + 1) for v in _list(body, tag))
    if tag in ("$set", "$frozenset"):
        items = [_decode(v, depth + 1) for v in _list(body, tag)]
        return frozenset(items) if tag == "$frozenset" else set(items)
    if tag == "$dict":
        pairs = _list(body, tag)
        out: dict[Any, Any] = {}
        for pair in pairs:
            if not isinstance(pair, list) or len(pair) != 2:
                raise StateError("a $dict entry is not a [key, value] pair")
            out[_decode(pair[0], depth + 1)] = _decode(pair[1], depth + 1)
        return out
    if tag == "$array":
        return _array(data)
    if tag == "$scalar":
        if body not in DTYPES or not isinstance(data.get("value"), (bool, int, float)):
            raise StateError(f"bad numpy scalar {str(data)[:60]!r}")
        return np.dtype(str(body)).type(data["value"])
    if tag == "$generator":
        if body not in BIT_GENERATORS:
            raise StateError(f"unknown bit generator {str(body)[:40]!r}")
        bits = getattr(np.random, str(body))()
        try:
            bits.state = _decode(data.get("state"), depth + 1)
        except (TypeError, ValueError, KeyError) as exc:
            raise StateError(f"bad {body} state ({exc})") from None
        return np.random.Generator(bits)
    if tag == "$random":
        rng = random.Random()
        try:
            rng.setstate(_decode(body, depth + 1))
        except (TypeError, ValueError) as exc:
            raise StateError(f"bad random state ({exc})") from None
        return rng
    if tag == "$enum":
        kind: Any = _resolve_class(body, _is_enum)
        member = kind.__members__.get(data.get("name")) if isinstance(data.get("name"), str) else None
        if member is None:
            raise StateError(f"{body}: no member {str(data.get('name'))[:40]!r}")
        return member
    if tag == "$object":
        cls = _resolve_class(body)
        fields = data.get("fields")
        if not isinstance(fields, dict):
            raise StateError(f"{body}: fields missing")
        obj: Any = object.__new__(cls)
        for key, value in fields.items():
            if not isinstance(key, str) or key.startswith("__"):
                raise StateError(f"{body}: bad attribute name {str(key)[:40]!r}")
            object.__setattr__(obj, key, _decode(value, depth + 1))
        return obj
    raise StateError(f"unknown tag {str(tag)[:40]!r}")


def _list(body: Any, tag: str) -> list[Any]:
    if not isinstance(body, list):
        raise StateError(f"{tag} must hold a list")
    return body


def _array(data: dict[str, Any]) -> np.ndarray[Any, Any]:
    dtype, shape, raw = data.get("$array"), data.get("shape"), data.get("bytes")
    if dtype not in DTYPES or not isinstance(raw, str) or not isinstance(shape, list) \
            or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape):
        raise StateError("bad array record")
    try:
        buffer = base64.b64decode(raw, validate=True)
    except ValueError:
        raise StateError("bad array bytes") from None
    array = np.frombuffer(buffer, dtype=np.dtype(str(dtype)))
    expected = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if array.size != expected:
        raise StateError(f"array of {array.size} values does not have shape {shape}")
    return array.reshape(shape).copy()
