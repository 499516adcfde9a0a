"""``evolve mcp``: evolve as an MCP server (stdio, or streamable HTTP on 127.0.0.1)."""

from __future__ import annotations

from pathlib import Path

import click

from evolve import defaults
from evolve.cli.common import FiniteFloatRange, friendly, runs_root
from evolve.mcp.servers import require_sdk


@click.command(name="mcp")
@click.option("--http", "http_port", type=click.IntRange(min=1, max=65535), default=None, metavar="PORT",
              help="Serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio.")
@click.option("--runs", "runs_dir", type=click.Path(file_okay=False), default=None,
              help="The folder runs are written to and read from (default: runs/, or $EVOLVE_RUNS_DIR).")
@click.option("--wait", type=FiniteFloatRange(min=0), default=defaults.MCP_RUN_WAIT, show_default=True,
              help="Seconds a run started here keeps waiting for a person before it stops "
                   "(a decision through the server resumes a stopped run).")
@friendly
def mcp_command(http_port: int | None, runs_dir: str | None, wait: float) -> None:
    """Serve evolve over the Model Context Protocol: tools plan, validate, execute, status,
    pending, approve, reject, answer; resources evolve://runs/{run}/outcome and /report."""
    require_sdk("evolve mcp")
    from evolve.mcp.server import serve  # the SDK, only for this command

    root = Path(runs_dir) if runs_dir is not None else Path(runs_root())
    root.mkdir(parents=True, exist_ok=True)
    serve(root.resolve(), http_port=http_port, wait=wait)


COMMANDS = (mcp_command,)
