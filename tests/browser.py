"""Headless Chromium for the report tests: one way to start it and to read the page's self-check."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         "--enable-logging=stderr", "--v=0"]


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Chromium with a fresh profile under ``tmp_path``."""
    assert CHROMIUM is not None
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=120, check=False)


class CheckReader(HTMLParser):
    """Pulls the attributes of ``#report-check`` out of the dumped DOM."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if values.get("id") == "report-check":
            self.found = values


def read_check(dom: str) -> dict[str, str]:
    """The attributes the page's self-check wrote on ``#report-check`` (empty if it never ran)."""
    reader = CheckReader()
    reader.feed(dom)
    return reader.found
