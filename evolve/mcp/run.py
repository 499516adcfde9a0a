"""What ``evolve execute --mcp`` adds to a run: the servers started before it (every check made
before the first call), their tools beside the ``--tools`` callables, and the servers kept in
the run's journal so ``--resume`` starts them again. No SDK import here: a run without ``--mcp``
never needs the extra."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from evolve.execute.session import people_own, read_run
from evolve.execute.tools import ToolFn, load_tools
from evolve.mcp.servers import McpError, ServerSpec, journaled, parse_servers, require_sdk
from evolve.model.problem import Problem

META_KEY = "mcp"
"""The journal meta key holding a run's servers."""


def run_meta(specs: Sequence[ServerSpec]) -> dict[str, Any]:
    """The journal meta of a run's servers (nothing for a run without any)."""
    return {META_KEY: journaled(specs)} if specs else {}


def servers_of(meta: Mapping[str, Any], commands: Iterable[str], urls: Iterable[str]) -> list[ServerSpec]:
    """A resumed run's servers: the journal's, each replaced by one of the same name given again
    (a server that moved); a new name is refused (the run's plan was checked against the old)."""
    kept = [ServerSpec.from_dict(doc) for doc in meta.get(META_KEY) or ()]
    given = {spec.name: spec for spec in parse_servers(commands, urls)}
    unknown = sorted(set(given) - {spec.name for spec in kept})
    if unknown:
        raise McpError(f"--mcp {unknown[0]}: the run has no server of this name (its servers: "
                       f"{', '.join(s.name for s in kept) or 'none'})")
    return [given.get(spec.name, spec) for spec in kept]


@contextmanager
def served_tools(problem: Problem, used: Iterable[str], specs: Sequence[ServerSpec],
                 tools_spec: str | None) -> Iterator[dict[str, ToolFn] | None]:
    """The run's tool table with the servers' tools (``None`` without servers: the run loads its
    tools as it always does); the servers stop when the block ends."""
    if not specs:
        yield None
        return
    require_sdk("--mcp")
    from evolve.mcp.tools import mcp_tools  # the SDK, only for a run with servers

    needed = set(used)
    python = load_tools(tools_spec, needed)  # --tools, and evolve.tools entry points of needed tools
    with mcp_tools(problem, needed, specs, leave=set(python) | people_own(problem)) as toolset:
        yield {**toolset.tools, **python}


@contextmanager
def resumed_tools(folder: Path, commands: Iterable[str],
                  urls: Iterable[str]) -> Iterator[dict[str, ToolFn] | None]:
    """:func:`served_tools` for the run in ``folder``: its journaled servers (and ``--tools``),
    checked against every tool its revisions use."""
    journal, meta, problem = read_run(folder)
    try:
        specs = servers_of(meta, commands, urls)
        used = {task["tool"] for rev in journal.revisions() for task in rev.plan.get("tasks", [])}
    finally:
        journal.close()
    with served_tools(problem, used, specs, meta.get("tools")) as tools:
        yield tools
