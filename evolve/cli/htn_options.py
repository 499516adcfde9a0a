"""The options ``evolve run`` shares with the HTN commands (``--max-depth``, ``--max-nodes``,
``--input``, ``--htn-fallback``), apart from those commands so that ``evolve run`` can declare
them without loading the HTN modules before its first plan is on disk."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from evolve import defaults

MAX_DEPTH_HELP = "HTN domains: how deep compound tasks may nest (default: the domain file's, " \
                 f"else {defaults.HTN_MAX_DEPTH}; {defaults.HDDL_MAX_DEPTH} for HDDL)."
MAX_NODES_HELP = "HTN domains: search nodes one decomposition may visit (default: the domain file's, " \
                 f"else {defaults.HTN_MAX_NODES}; {defaults.HDDL_MAX_NODES} for HDDL)."


def limit_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--max-depth`` and ``--max-nodes``, for ``evolve hddl`` and ``evolve run``."""
    command = click.option("--max-nodes", type=click.IntRange(min=1), default=None,
                           help=MAX_NODES_HELP)(command)
    return click.option("--max-depth", type=click.IntRange(min=1, max=defaults.HTN_MAX_DEPTH_LIMIT),
                        default=None, help=MAX_DEPTH_HELP)(command)


def input_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--input`` and ``--input-file``, for ``evolve run`` and ``evolve execute``."""
    command = click.option("--input-file", type=click.Path(dir_okay=False), default=None,
                           help="HTN domains: a JSON or YAML mapping of world-state values before "
                                "planning.")(command)
    return click.option("--input", "input_items", multiple=True, metavar="KEY=VALUE",
                        help="HTN domains: a value of the world state before planning (true, 3, "
                             "null, text).")(command)


FALLBACKS = ("none", "llm")
FALLBACK_HELP = ("HTN domains: who decomposes a compound task no method applies to: nobody, or an LLM "
                 "(ChatHTN; needs --llm-base-url and --llm-model, as does --operator llm on a domain).")
