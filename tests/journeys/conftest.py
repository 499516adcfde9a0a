"""A journey is a user's whole path through the command line, one real subprocess per command,
in a temporary folder: what one command writes, the next one reads as it is."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent


@dataclass
class Journey:
    """The user's folder, the environment their commands run in, and what the tools did."""

    home: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def tools(self) -> str:
        return f"{self.home / 'incident_tools.py'}:TOOLS"

    def evolve(self, *args: str | Path, status: int | None = 0,
               timeout: float = 240) -> subprocess.CompletedProcess[str]:
        """Run ``evolve ARGS`` as a user would; ``status`` is the exit status they expect."""
        done = subprocess.run([sys.executable, "-m", "evolve", *map(str, args)], cwd=self.home,
                              env=self.env, capture_output=True, text=True, timeout=timeout,
                              check=False)
        assert "Traceback" not in done.stderr, done.stderr
        if status is not None:
            assert done.returncode == status, (args, done.returncode, done.stdout, done.stderr)
        return done

    def start(self, *args: str | Path) -> subprocess.Popen[str]:
        """Start ``evolve ARGS`` in the background (to kill it)."""
        return subprocess.Popen([sys.executable, "-m", "evolve", *map(str, args)], cwd=self.home,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def shell(self, script: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        """A pipeline in bash, as a user scripts one (``evolve`` is ``python -m evolve``)."""
        prelude = f'evolve() {{ "{sys.executable}" -m evolve "$@"; }}\n'
        return subprocess.run(["bash", "-c", prelude + script], cwd=self.home, env=self.env,
                              capture_output=True, text=True, timeout=timeout, check=False)

    def switch(self, name: str) -> None:
        (self.home / name).touch()

    def calls(self, tool: str) -> list[dict[str, Any]]:
        """Every call the write ``tool`` received, repeats included."""
        path = self.home / "calls.jsonl"
        if not path.exists():
            return []
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        return [row for row in rows if row["tool"] == tool]

    def provider(self) -> dict[str, Any]:
        """What the idempotent restart API did, once per key."""
        path = self.home / "provider.json"
        data: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        return data

    def json(self, path: str | Path) -> Any:
        return json.loads((self.home / path).read_text())


@pytest.fixture
def journey(tmp_path: Path) -> Journey:
    return make_journey(tmp_path)


def make_journey(tmp_path: Path) -> Journey:
    """A new user's folder holding the problem and the tools, and their environment."""
    home = tmp_path / "user"
    home.mkdir()
    for name in ("incident.yaml", "incident_tools.py"):
        shutil.copy(HERE / name, home / name)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env["INCIDENT_DIR"] = str(home)
    env["PYTHONHASHSEED"] = "0"
    return Journey(home, env)
