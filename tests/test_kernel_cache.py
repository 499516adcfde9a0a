"""numba's cache folder is named by the kernel sources: an edit to a callee in another file is seen,
every cached kernel of the package uses that folder, and the folder is chosen before any kernel."""

from __future__ import annotations

import ast
import importlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from numba.core.registry import CPUDispatcher

from evolve.model import kernel_cache

ROOT = Path(__file__).resolve().parents[1]

CALLEE = """
from numba import njit

import evolve.model.kernel_cache  # noqa: F401


@njit(cache=True)
def step(x):
    return x + {step}
"""

CALLER = """
from numba import njit

import evolve.model.kernel_cache  # noqa: F401
from evolve.model.callee import step


@njit(cache=True)
def twice(x):
    return 2 * step(x)
"""

RUN = """
from evolve.model import kernel_cache
from evolve.model.caller import twice
print(twice(1), sum(twice.stats.cache_hits.values()), kernel_cache.FOLDER)
"""


def run(package: Path) -> tuple[int, int, Path]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", kernel_cache.OURS, kernel_cache.USERS)}
    env["PYTHONPATH"] = str(package)
    out = subprocess.run([sys.executable, "-c", RUN], env=env, cwd=package, capture_output=True,
                         text=True, check=True).stdout.split()
    return int(out[0]), int(out[1]), Path(out[2])


def test_an_edit_to_a_callee_in_another_file_is_seen(tmp_path: Path) -> None:
    """A kernel pair in a temporary copy of the cache module: the second run reads the caller from
    the cache (where numba alone would keep the old callee inside it), the edited callee is run."""
    model = tmp_path / "evolve" / "model"
    model.mkdir(parents=True)
    (tmp_path / "evolve" / "__init__.py").write_text("")
    (model / "__init__.py").write_text("")
    shutil.copy(Path(kernel_cache.__file__), model / "kernel_cache.py")
    (model / "callee.py").write_text(CALLEE.format(step=1))
    (model / "caller.py").write_text(CALLER)

    value, hits, first = run(tmp_path)
    assert (value, hits) == (4, 0)
    assert first.parent == tmp_path / "evolve" / "__pycache__"  # beside the code
    assert list(first.rglob("*.nbi")), "nothing was cached"
    value, hits, again = run(tmp_path)
    assert (value, again) == (4, first)
    assert hits >= 1  # read from the cache: where a stale callee would come from

    (model / "callee.py").write_text(CALLEE.format(step=2))
    value, hits, second = run(tmp_path)
    assert (value, hits) == (6, 0)
    assert second != first


def test_every_cached_kernel_uses_the_hashed_folder() -> None:
    assert kernel_cache.FOLDER is not None
    folder = str(kernel_cache.FOLDER)
    checked = 0
    for path in kernel_cache.kernel_sources():
        if "@njit" not in path.read_text(encoding="utf-8"):
            continue
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        module = importlib.import_module(name)
        for value in vars(module).values():
            if isinstance(value, CPUDispatcher) and value.__module__ == name:
                cache_path = getattr(value._cache, "_cache_path", None)
                assert cache_path is not None, f"{name}.{value.__name__} is not cached"
                assert cache_path.startswith(folder), f"{name}.{value.__name__}: {cache_path}"
                checked += 1
    assert checked > 50


def test_the_package_chooses_the_folder_before_anything_else() -> None:
    """``evolve/__init__.py`` runs before any submodule; its first import is the cache module."""
    tree = ast.parse((ROOT / "evolve" / "__init__.py").read_text(encoding="utf-8"))
    first = next(node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))
    assert isinstance(first, ast.Import) and first.names[0].name == "evolve.model.kernel_cache"


def test_the_hash_follows_every_kernel_file_and_what_it_imports(tmp_path: Path) -> None:
    package = tmp_path / "evolve"
    (package / "a").mkdir(parents=True)
    (package / "a" / "__init__.py").write_text("")
    (package / "a" / "consts.py").write_text("EPS = 1e-9\n")
    (package / "a" / "k.py").write_text("from numba import njit\nfrom evolve.a.consts import EPS\n")
    (package / "a" / "other.py").write_text("X = 1\n")
    assert [p.name for p in kernel_cache.kernel_sources(package)] == ["consts.py", "k.py"]
    before = kernel_cache.sources_hash(package)
    (package / "a" / "other.py").write_text("X = 2\n")
    assert kernel_cache.sources_hash(package) == before
    (package / "a" / "consts.py").write_text("EPS = 1e-6\n")
    assert kernel_cache.sources_hash(package) != before


def test_a_users_numba_cache_dir_is_kept_for_children(monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.delenv(kernel_cache.OURS, raising=False)
    assert kernel_cache.users_root() == str(tmp_path / "mine")
    assert kernel_cache.roots()[0] == tmp_path / "mine"
    # what a child of an evolve process inherits: its folder, and the user's choice beside it
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "mine" / "evolve-kernels-x"))
    monkeypatch.setenv(kernel_cache.OURS, str(tmp_path / "mine" / "evolve-kernels-x"))
    monkeypatch.setenv(kernel_cache.USERS, str(tmp_path / "mine"))
    assert kernel_cache.users_root() == str(tmp_path / "mine")
    monkeypatch.setenv(kernel_cache.USERS, "")
    assert kernel_cache.roots()[0] == kernel_cache.PACKAGE / "__pycache__"


def test_an_unwritable_place_is_skipped_and_stale_folders_go(tmp_path: Path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    assert not kernel_cache.writable(blocked / "evolve-kernels-x")
    old, keep = tmp_path / "evolve-kernels-old", tmp_path / "evolve-kernels-new"
    old.mkdir()
    keep.mkdir()
    os.utime(old, (0, 0))
    kernel_cache.prune(tmp_path, keep, now=kernel_cache.STALE_AFTER + 10)
    assert not old.exists() and keep.exists()
