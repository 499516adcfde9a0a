"""Shared by every click command: how user errors end."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

import click

from evolve.model.errors import EvolveError

F = TypeVar("F", bound=Callable[..., Any])


def friendly(fn: F) -> F:
    """Turn the errors users cause into one clear line on stderr and exit status 2."""
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (EvolveError, ValueError) as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(2)
    return wrapper  # type: ignore[return-value]
