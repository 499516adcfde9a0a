"""Where numba keeps evolve's compiled kernels: a folder named by a hash of every kernel source file.

numba's on-disk cache (``@njit(cache=True)``) checks only the file that defines a
function, by its modification time and size. A kernel that calls a kernel of
another file carries the callee's machine code inside its own cache entry, and
a global it reads is frozen in as a constant, so after an edit of the other file
the caller would go on running the old code (numba's documentation, "Cache
invalidation fails to recognize changes in functions defined in a different
file"; numba issue #1833). Kernels here do call across files (the rcpsp
generation step calls the decoders, the tool-choice kernels the scheduler, every
layer the graph kernels of :mod:`evolve.model.graph_kernels`), so instead of
trusting numba's check this module names the cache folder ``evolve-kernels-<hash>``
after the contents of every module of the package that holds a kernel and of every
evolve module those import from (where their frozen globals come from). An edit
to any of them names a new folder: every kernel recompiles once, and no call
across files can run stale code.

``evolve/__init__.py`` imports this module first, and so before any module that
defines a kernel (a test holds it to that): numba binds a function to its cache
folder when the decorator runs (``numba.config.CACHE_DIR`` is read then). The folder is
put in ``NUMBA_CACHE_DIR``, which numba reads when it is first imported (so this module does
not import numba: a command that compiles nothing does not pay for it), and so that numba's
reload of its settings from the environment (at every compilation) keeps it and worker
processes inherit it; it is therefore the cache folder of every cached numba function of the
process, evolve's or not.

Where the folder lives, first that works:

* inside ``$NUMBA_CACHE_DIR`` when the user set it (their choice of place);
* beside the code, ``evolve/__pycache__/evolve-kernels-<hash>``, as numba's own default
  keeps a ``__pycache__`` beside each source: a checkout or editable install keeps
  the machine code it compiled, two checkouts never share (or race on) one
  folder, and deleting the checkout deletes its cache;
* the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``), for an install
  whose package folder is read-only;
* the system's temporary folder (``evolve-<uid>`` in it).

Folders of other hashes in the same place that were not touched for
:data:`STALE_AFTER` seconds are removed, so edits do not pile up caches
(about 10 MB each).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
"""The ``evolve`` package folder, whose kernel files are hashed."""

PREFIX = "evolve-kernels-"
"""How every cache folder's name starts (the rest is the hash)."""

OURS = "EVOLVE_NUMBA_CACHE_DIR"
"""The environment variable recording the folder this module chose, so that a child process that
inherits ``NUMBA_CACHE_DIR`` from it tells it from a folder the user chose."""

USERS = "EVOLVE_NUMBA_CACHE_ROOT"
"""The environment variable keeping the user's own ``NUMBA_CACHE_DIR`` (or nothing) for children."""

STALE_AFTER = 24 * 3600.0
"""Seconds after which another hash's cache folder is removed."""

IMPORT = re.compile(r"^\s*(?:from\s+(evolve[\w.]*)\s+import|import\s+(evolve[\w.]*))", re.MULTILINE)


def module_file(name: str, package: Path = PACKAGE) -> Path | None:
    """The source file of module ``name`` (``evolve.x.y``) inside ``package``, if there is one."""
    base = package.parent.joinpath(*name.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def kernel_sources(package: Path = PACKAGE) -> list[Path]:
    """Every module of ``package`` that mentions ``njit`` and every module of it they import from,
    sorted: the files whose edit may change what a cached kernel does."""
    found: set[Path] = set()
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        if "njit" not in text:
            continue
        found.add(path)
        for match in IMPORT.finditer(text):
            source = module_file(match.group(1) or match.group(2), package)
            if source is not None:
                found.add(source)
    return sorted(found)


def sources_hash(package: Path = PACKAGE) -> str:
    """A short hash of the kernel sources' paths (relative to ``package``) and contents."""
    digest = hashlib.sha256()
    for path in kernel_sources(package):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def users_root() -> str:
    """The ``NUMBA_CACHE_DIR`` the user set ("": none), also when an evolve process that has
    replaced it with its own folder is this one's parent."""
    chosen = os.environ.get("NUMBA_CACHE_DIR", "")
    if chosen and chosen == os.environ.get(OURS):
        return os.environ.get(USERS, "")
    return chosen


def roots(package: Path = PACKAGE) -> list[Path]:
    """The places to try for the cache folder, in order (see the module's docstring)."""
    places = []
    chosen = users_root()
    if chosen:
        places.append(Path(chosen))
    places.append(package / "__pycache__")
    home = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    places.append(Path(home))
    places.append(Path(tempfile.gettempdir()) / f"evolve-{os.getuid() if hasattr(os, 'getuid') else 0}")
    return places


def writable(folder: Path) -> bool:
    """Whether ``folder`` exists or can be made, and a file can be written in it."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError:
        return False
    return True


def prune(root: Path, keep: Path, now: float) -> None:
    """Remove the cache folders of other hashes in ``root`` untouched for :data:`STALE_AFTER`."""
    for other in root.glob(f"{PREFIX}*"):
        try:
            stale = other != keep and other.is_dir() and now - other.stat().st_mtime > STALE_AFTER
        except OSError:
            continue
        if stale:
            shutil.rmtree(other, ignore_errors=True)


def cache_folder(package: Path = PACKAGE) -> Path | None:
    """The first writable ``<root>/evolve-kernels-<hash>`` (``None``: nowhere is writable)."""
    name = PREFIX + sources_hash(package)
    for root in roots(package):
        folder = root / name
        if writable(folder):
            prune(root, folder, time.time())
            return folder
    return None


def configure(package: Path = PACKAGE) -> Path | None:
    """Point numba's cache at :func:`cache_folder` (for functions decorated from now on)."""
    users = users_root()
    folder = cache_folder(package)
    if folder is not None:
        os.environ[USERS] = users
        os.environ["NUMBA_CACHE_DIR"] = os.environ[OURS] = str(folder)
        # numba reads NUMBA_CACHE_DIR when it is first imported, so it need not be imported here
        # (that costs a command line a third of a second); a numba already imported is told
        config = sys.modules.get("numba.core.config")
        if config is not None:
            config.CACHE_DIR = str(folder)  # type: ignore[attr-defined]
    return folder


FOLDER = configure()
"""The cache folder of this process's kernels (``None``: numba's default places)."""
