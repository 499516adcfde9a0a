"""Shared by every click command: how runs end, and with which exit status.

Exit statuses (the README's table is this one):

- 0: done (a valid plan, a met goal, a finished run);
- 1: it ran, but the answer is no (an invalid plan, a run with no usable result);
- 2: bad input: a file, a field or an option, named in one line on stderr;
- 3: the problem is infeasible: no plan can meet a criterion (each one named, with why);
- 4: a run of a plan waits for a person (``evolve pending``; ``evolve execute --resume`` goes on);
- 70: an internal error, a bug in evolve: one line on stderr, the traceback in a file it names;
- 130: interrupted (Ctrl-C).
"""

from __future__ import annotations

import io
import math
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any, TypeVar

import click

from evolve.model.errors import EvolveError, InfeasibleProblem, RunFailed
from evolve.run.location import RUNS_DIR_VARIABLE as RUNS_DIR_VARIABLE  # the commands import
from evolve.run.location import runs_root as runs_root  # these two from here

F = TypeVar("F", bound=Callable[..., Any])

EXIT_OK, EXIT_NO, EXIT_BAD_INPUT, EXIT_INFEASIBLE, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 70, 130
INTERRUPTED = "interrupted: Ctrl-C"
"""The stop reason of a run that a first Ctrl-C ended at a generation's end."""
EXIT_WAITING = 4


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` is Ctrl-C: a ``KeyboardInterrupt``, or the ``SystemError`` a compiled
    kernel raises when the interrupt lands while it runs (the interrupt is its context)."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, KeyboardInterrupt):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _quiet(info: Any) -> None:
    """An unraisable-exception hook that prints nothing."""


class CtrlC:
    """Notes whether Ctrl-C came while the block ran, even where its ``KeyboardInterrupt`` was lost.

    An interrupt that lands inside a ctypes callback (numba's object cache, while the
    first run compiles its kernels) is printed as "Exception ignored" and swallowed, and
    the compiler then fails with an unrelated ``RuntimeError``; the exception chain no longer
    says Ctrl-C, so the command asks this instead. The swallowed interrupt's own printout is
    suppressed, and so is every later one: the command reports the interrupt once, in its words,
and ends.
    """

    def __init__(self) -> None:
        self.seen = False
        #: while set, a first Ctrl-C only notes itself (the search stops at the end of the
        #: generation, where the caller checks :attr:`seen`); a second one interrupts at once.
        #: An interrupt raised wherever it lands can land inside numba's call of a kernel (as
        #: it unboxes a random generator) and crash the process instead (seen: SIGSEGV in the
        #: tool-choice climb, about one Ctrl-C test in 30-70)
        self.deferring = False
        self._installed = False
        self._handler: Any = None
        self._hook = sys.unraisablehook

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._handler = signal.signal(signal.SIGINT, self._on_sigint)
            self._hook = sys.unraisablehook
            sys.unraisablehook = self._unraisable
            self._installed = True
        return self

    def _on_sigint(self, signum: int, frame: FrameType | None) -> None:
        if self.deferring and not self.seen:
            self.seen = True
            sys.stderr.write("\nCtrl-C: stopping at the end of this generation "
                             "(Ctrl-C again to stop at once)\n")
            return
        self.seen = True
        raise KeyboardInterrupt

    def _unraisable(self, info: Any) -> None:
        if not (self.seen and isinstance(info.exc_value, KeyboardInterrupt)):
            self._hook(info)

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._handler)
            # after an interrupt the half-built compiler objects complain again when they are
            # collected at exit (llvmlite's ObjectRef.__del__): the command is ending with 130
            sys.unraisablehook = _quiet if self.seen else self._hook
            self._installed = False

    def caused(self, exc: BaseException) -> bool:
        """Whether ``exc`` ended the block because of Ctrl-C."""
        return self.seen or interrupted(exc)


class FiniteFloatRange(click.FloatRange):
    """A ``click.FloatRange`` that also refuses ``nan`` and ``inf``.

    click parses both from the text, and NaN passes every bound (each comparison with it is
    false), so ``--max-seconds nan`` would silently mean no limit and ``--eval-timeout inf``
    would fail every evaluation inside the search, far from the option that caused it."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number


def friendly(fn: F) -> F:
    """User errors become one clear line on stderr and their exit status; anything else is a
    bug, said to be one, with the details written to a file rather than thrown at the user."""
    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except InfeasibleProblem as exc:
            click.echo(f"infeasible: {exc}", err=True)
            sys.exit(EXIT_INFEASIBLE)
        except RunFailed as exc:
            click.echo(f"failed: {exc}", err=True)
            sys.exit(EXIT_NO)
        except EvolveError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort,
                KeyboardInterrupt, SystemExit):
            raise
        except RecursionError:
            click.echo("error: the input is nested too deeply to be read", err=True)
            sys.exit(EXIT_BAD_INPUT)
        except Exception as exc:  # a bug: say so, and where the details are
            click.echo(internal_error(exc), err=True)
            sys.exit(EXIT_INTERNAL)
    return wrapper  # type: ignore[return-value]


class ClosedPipeSafe(io.TextIOBase):
    """A standard stream that, once its reader has gone (``evolve pending | grep -q x``,
    ``evolve run ... 2>&1 | head -4``), drops what is written to it instead of raising.

    Like ``git``, a command whose output nobody reads any more ends quietly with its own exit
    status: no ``BrokenPipeError`` traceback, no internal error, and a search whose terminal went
    away still finishes and writes its run folder (the progress lines stop, the work does not).
    The stream's descriptor is pointed at the null device once the pipe is broken, so that the
    interpreter's own flush at exit has nowhere to fail either.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__()
        self._stream = stream
        #: set once the reader went away; every later write is dropped
        self.gone = False

    @property
    def encoding(self) -> str:  # type: ignore[override]  # click reads these two to keep the stream as is
        return str(self._stream.encoding)

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self._stream.errors  # type: ignore[no-any-return]

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                self._stream.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop()

    def fileno(self) -> int:
        return int(self._stream.fileno())

    def isatty(self) -> bool:
        return bool(self._stream.isatty())

    def writable(self) -> bool:
        return True

    def _drop(self) -> None:
        self.gone = True
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, self._stream.fileno())
            finally:
                os.close(null)
        except (OSError, ValueError, io.UnsupportedOperation):  # no descriptor to point elsewhere
            pass


def survive_closed_pipes() -> None:
    """Make stdout and stderr :class:`ClosedPipeSafe` (``evolve``'s entry point calls this)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, ClosedPipeSafe):
            setattr(sys, name, ClosedPipeSafe(stream))


def internal_error(exc: BaseException) -> str:
    """Write ``exc``'s traceback to a fresh file in the temporary folder; the line to show."""
    try:
        with tempfile.NamedTemporaryFile(
                "w", prefix=f"evolve-crash-{time.strftime('%Y%m%d-%H%M%S')}-", suffix=".txt",
                delete=False, encoding="utf-8") as stream:
            stream.write("".join(traceback.format_exception(exc)))
            where = f"the traceback is in {Path(stream.name)}"
    except OSError:
        where = "the traceback could not be written"
    text = str(exc).splitlines()[0][:200] if str(exc) else ""
    return (f"internal error: {type(exc).__name__}{': ' + text if text else ''} "
            f"(a bug in evolve, not in your input; {where})")

