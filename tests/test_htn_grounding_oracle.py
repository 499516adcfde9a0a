"""The fast grounding (operators made only for the actions a method uses, effects by
substitution, a join led by index sizes over composite indexes) makes the same document as the
plain one (:attr:`~evolve.problems.htn.hddl.Grounder.reference`), on the test domains and, when
they are here, the smallest competition problems of every domain."""

from __future__ import annotations

from pathlib import Path

import pytest

from evolve.problems.htn.hddl import Grounder
from evolve.problems.htn.hddl_syntax import read_files
from tests.hddl_parcel import DOMAIN, PROBLEM
from tests.test_htn_anytime import files
from tests.test_htn_hddl import IPC


def both(domain_file: Path, problem_file: Path) -> tuple[dict[str, object], dict[str, object]]:
    fast = Grounder(*read_files(domain_file, problem_file), str(problem_file)).document()
    plain = Grounder(*read_files(domain_file, problem_file), str(problem_file), reference=True).document()
    return fast, plain


def same(domain_file: Path, problem_file: Path) -> None:
    fast, plain = both(domain_file, problem_file)
    assert fast == plain
    fast_htn, plain_htn = fast["htn"], plain["htn"]
    assert isinstance(fast_htn, dict) and isinstance(plain_htn, dict)
    for task in {m["task"] for m in plain_htn["methods"].values()}:  # each task's methods, in order
        assert [n for n, m in fast_htn["methods"].items() if m["task"] == task] == \
               [n for n, m in plain_htn["methods"].items() if m["task"] == task]


def test_the_test_domains_ground_the_same(tmp_path: Path) -> None:
    same(*files(tmp_path))
    (tmp_path / "pd.hddl").write_text(DOMAIN)
    (tmp_path / "pp.hddl").write_text(PROBLEM)
    same(tmp_path / "pd.hddl", tmp_path / "pp.hddl")


SLOW = {"Freecell-Learned-ECAI-16"}
"""Left out to keep the test fast: its smallest problem grounds about 141,000 methods (6 s a way)."""


def smallest() -> list[tuple[Path, Path]]:
    if not IPC.is_dir():
        return []
    out = []
    for folder in sorted(p for p in IPC.iterdir() if p.is_dir() and p.name not in SLOW):
        problems = sorted((f for f in folder.glob("*.hddl") if not f.name.endswith("domain.hddl")),
                          key=lambda f: (f.stat().st_size, f.name))
        for problem in problems[:1]:
            own = problem.with_name(problem.stem + "-domain.hddl")
            out.append((own if own.exists() else folder / "domain.hddl", problem))
    return out


@pytest.mark.skipif(not IPC.is_dir(), reason=f"the IPC 2020 HTN problems are not at {IPC}")
@pytest.mark.parametrize(("domain_file", "problem_file"), smallest(),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_the_smallest_competition_problems_ground_the_same(domain_file: Path, problem_file: Path) -> None:
    same(domain_file, problem_file)
