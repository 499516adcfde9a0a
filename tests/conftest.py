"""Shared fixtures: the example problems, small plan builders and a run folder per test."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evolve.llm.testing import Script, ScriptedServer
from evolve.model.problem import Problem
from evolve.problems import load_problem

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

RUNS_DIR = tempfile.mkdtemp(prefix="evolve-test-runs-")
os.environ["EVOLVE_RUNS_DIR"] = RUNS_DIR  # a command run without --out writes here, never to runs/


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(RUNS_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def refund_path() -> Path:
    """The refund example as a path, for tests that go through files or the CLI."""
    return EXAMPLES / "refund.yaml"


@pytest.fixture(scope="session")
def refund(refund_path: Path) -> Problem:
    """The refund example, loaded once: problems are immutable, so sharing is safe."""
    return load_problem(refund_path)


@pytest.fixture(scope="session")
def pipeline_path() -> Path:
    return EXAMPLES / "pipeline.yaml"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """A fresh, not yet existing run folder (the runner must create it)."""
    return tmp_path / "run"


@pytest.fixture
def serve() -> Iterator[Callable[[Script], ScriptedServer]]:
    """Start scripted chat servers on 127.0.0.1; every one is stopped when the test ends."""
    started: list[ScriptedServer] = []

    def start(script: Script) -> ScriptedServer:
        server = ScriptedServer(script).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(autouse=True)
def collector_as_found() -> Iterator[None]:
    """``evolve run`` and ``evolve plan`` tune the process's garbage collector for their one
    search (``evolve.model.collector.settle_for_one_search``); a test that runs them in this
    process must not leave that to the tests after it."""
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)
