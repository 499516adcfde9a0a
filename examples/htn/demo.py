"""Run one HTN example end to end with its scripted tools and scripted small model:

    python -m examples.htn.demo pr-doctor [--out DIR]
    python -m examples.htn.demo fix-red-test
    python -m examples.htn.demo k8s-medic

The small model is a real chat-completions server on 127.0.0.1 (``evolve.llm.testing``)
answering the domain's hoisted decision; ``evolve execute DOMAIN`` asks it, plans, runs the
scripted tools, and when the first rung fails for good replans from the world as it is onto
the next rung. Exit status: evolve's (0: goal met).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from evolve.cli.main import cli
from evolve.llm.testing import ScriptedServer
from examples.htn.scripted import small_model

HERE = Path(__file__).resolve().parent
DOMAINS = {"pr-doctor": "pr_doctor.yaml", "fix-red-test": "fix_red_test.yaml", "k8s-medic": "k8s_medic.yaml"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name", choices=sorted(DOMAINS))
    parser.add_argument("--out", default=None, help="the run folder (default: a temporary one)")
    args = parser.parse_args(argv)
    out = args.out or tempfile.mkdtemp(prefix=f"evolve-{args.name}-")
    with ScriptedServer(small_model) as server, tempfile.TemporaryDirectory() as cache:
        command = ["execute", str(HERE / DOMAINS[args.name]), "--tools", "examples.htn.scripted:TOOLS",
                   "--llm-base-url", server.url, "--llm-model", "scripted-small", "--out", out,
                   "--no-report"]
        before = os.environ.get("XDG_CACHE_HOME")
        os.environ["XDG_CACHE_HOME"] = cache  # the model's replies cached apart, for this run only
        try:
            cli.main(args=command, prog_name="evolve", standalone_mode=False)
        except SystemExit as exc:
            return int(exc.code or 0)
        finally:
            if before is None:
                os.environ.pop("XDG_CACHE_HOME", None)
            else:
                os.environ["XDG_CACHE_HOME"] = before
    return 0


if __name__ == "__main__":
    sys.exit(main())
