"""docs/htn.md's ``max_depth`` example says what a run of it prints: the domain in the manual is
run as written, and the line the manual quotes is the line the command prints, exit 1."""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml
from click.testing import CliRunner

from evolve.cli.main import cli

DOC = Path(__file__).resolve().parent.parent / "docs" / "htn.md"


def test_the_max_depth_example_prints_what_the_manual_says(tmp_path: Path) -> None:
    text = DOC.read_text(encoding="utf-8")
    domain = next(block for block in re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
                  if "name: deep-release" in block)
    quoted = next(line.strip() for line in text.splitlines() if "no plan within max_depth" in line
                  and line.strip().startswith("failed:"))
    (tmp_path / "deep.yaml").write_text(yaml.safe_dump(yaml.safe_load(domain)))
    here = Path.cwd()
    try:
        os.chdir(tmp_path)
        result = CliRunner().invoke(cli, ["run", "deep.yaml", "--out", "run", "--no-report"])
    finally:
        os.chdir(here)
    assert result.exit_code == 1, result.output
    assert quoted in result.output.splitlines()
