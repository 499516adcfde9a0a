"""Every relative link of the README and the manuals leads somewhere: to a file of the checkout,
and, when the link names an anchor, to a heading of that file (GitHub's anchor rules).

A front page that points into docs/ is only as good as its links; this keeps a moved section or
a renamed heading from leaving a dead one behind.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
CODE_SPAN = re.compile(r"`+[^`\n]*`+")
LINK = re.compile(r"!?\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def prose(text: str) -> str:
    """The text without fenced code blocks, where neither links nor headings count."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces to '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: Counter[str] = Counter()
    out = set()
    for heading in HEADING.findall(prose(page.read_text(encoding="utf-8"))):
        base = slug(heading)
        out.add(base if not seen[base] else f"{base}-{seen[base]}")
        seen[base] += 1
    return out


def links(page: Path) -> list[str]:
    text = CODE_SPAN.sub("", prose(page.read_text(encoding="utf-8")))
    return [t for t in LINK.findall(text) if not re.match(r"[a-z][a-z0-9+.-]*:", t)]


def test_slugs_follow_githubs_rules() -> None:
    assert slug("Set up (two commands)") == "set-up-two-commands"
    assert slug("Pictures alone: `evolve plot`") == "pictures-alone-evolve-plot"
    assert slug('Fitness functions: what "best" means') == "fitness-functions-what-best-means"
    assert slug("The LLM fallback (ChatHTN)") == "the-llm-fallback-chathtn"


def test_a_dead_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Top\n\n[ok](#top) [gone](#nowhere) [file](missing.md)\n"
                    "```\n[in code](ignored.md)\n# not a heading\n```\n", encoding="utf-8")
    assert links(page) == ["#top", "#nowhere", "missing.md"]
    assert anchors(page) == {"top"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    dead = []
    for target in links(page):
        path_part, _, anchor = target.partition("#")
        file = (page.parent / path_part).resolve() if path_part else page
        name = file.relative_to(ROOT).as_posix() if file.is_relative_to(ROOT) else str(file)
        if not file.exists():
            dead.append(f"{target}: no file {name}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            dead.append(f"{target}: no heading #{anchor} in {name}")
    assert not dead, f"{page.relative_to(ROOT)}: " + "; ".join(dead)
