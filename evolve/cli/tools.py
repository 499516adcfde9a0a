"""``evolve import-tools``: a problem catalog from OpenAI function tools or an MCP tool list."""

from __future__ import annotations

import click
import yaml

from evolve import defaults
from evolve.cli.common import friendly
from evolve.mcp.servers import McpError, one_server, require_sdk
from evolve.model.documents import write_text_file
from evolve.model.errors import printable
from evolve.problems.toolspec import import_tools as import_catalog
from evolve.problems.toolspec import problem_yaml


def names(values: tuple[str, ...]) -> list[str]:
    """Repeated or comma-separated option values, in order, without blanks."""
    return [item.strip() for value in values for item in value.split(",") if item.strip()]


@click.command(name="import-tools")
@click.argument("spec_file", type=click.Path(dir_okay=False), required=False)
@click.option("--mcp", "mcp_command", default=None, metavar='"CMD ARGS"',
              help="Start this MCP server (stdio) and import the tools it lists, instead of SPEC_FILE.")
@click.option("--mcp-url", "mcp_url", default=None, metavar="URL",
              help="Import the tools a running MCP server (streamable HTTP) lists, instead of SPEC_FILE.")
@click.option("--out", "out_file", type=click.Path(dir_okay=False), default=None,
              help="Problem file to write (YAML); default: print it.")
@click.option("--meta", "meta_file", type=click.Path(dir_okay=False), default=None,
              help="Side file keyed by tool name: duration, risk, cost, scope, ... of each tool "
                   f"(without one: duration {defaults.IMPORT_DURATION:g}, risk {defaults.IMPORT_RISK}).")
@click.option("--trace", "trace_file", type=click.Path(dir_okay=False), default=None,
              help="A recorded session (calls with arguments and results): an argument equal to an "
                   "earlier result field is dataflow, and names the input after that output.")
@click.option("--goal", "goal", multiple=True,
              help="A fact the plan must make, or a tool meaning its outputs (repeat or comma-separate; "
                   "default: from the trace, else the outputs no tool reads).")
@click.option("--known", "known", multiple=True,
              help="A fact known at start (repeat or comma-separate; default: the trace's literal "
                   "arguments and the inputs no tool makes).")
@click.option("--name", default=None, help="The problem's name (default: the spec file's stem).")
@click.option("--plan-out", "plan_file", type=click.Path(dir_okay=False), default=None,
              help="Also write the trace as a plan of the problem (one task per call).")
@friendly
def import_tools(spec_file: str | None, mcp_command: str | None, mcp_url: str | None,
                 out_file: str | None, meta_file: str | None, trace_file: str | None,
                 goal: tuple[str, ...], known: tuple[str, ...], name: str | None,
                 plan_file: str | None) -> None:
    """Write a problem catalog for the tools SPEC_FILE defines: OpenAI function tools
    ({tools: [{type: function, function: {name, description, parameters}}]} or the bare list) or
    an MCP tools/list result (or the JSON-RPC response holding it); or the tools a live MCP
    server lists (--mcp "CMD ARGS", --mcp-url URL), every page of them.

    Inputs are the required parameters, outputs the declared output schema's properties (else one
    <tool>_result); every guess is printed on stderr and written as a comment in the file."""
    if plan_file is not None and trace_file is None:
        raise click.BadParameter("needs --trace (the plan is the trace's calls)", param_hint="--plan-out")
    live = mcp_command is not None or mcp_url is not None
    if live == (spec_file is not None):
        raise McpError("give SPEC_FILE, or --mcp \"CMD ARGS\" / --mcp-url URL for a live MCP server")
    if live:
        require_sdk("--mcp" if mcp_command is not None else "--mcp-url")
        from evolve.mcp.catalog import import_server  # the SDK, only for a live server

        server = one_server(mcp_command, mcp_url)
        imported = import_server(server, meta_path=meta_file, trace_path=trace_file, goal=names(goal),
                                 known=names(known) or None, name=name)
        source = f"MCP server {mcp_url or mcp_command}"
    else:
        assert spec_file is not None
        imported = import_catalog(spec_file, meta_path=meta_file, trace_path=trace_file, goal=names(goal),
                                  known=names(known) or None, name=name)
        source = f"spec {spec_file}"
    sources = [source] + ([f"side file {meta_file}"] if meta_file else []) \
        + ([f"trace {trace_file}"] if trace_file else [])
    text = problem_yaml(imported, [f"Written by `evolve import-tools` from {', '.join(sources)}."])
    for note in imported.notes:
        click.echo(f"guess: {printable(note)}", err=True)
    if out_file is None:
        click.echo(text, nl=False)
    else:
        write_text_file(out_file, text)
    if plan_file is not None and imported.reference is not None:
        write_text_file(plan_file, yaml.safe_dump(imported.reference.to_dict(), sort_keys=False,
                                                  default_flow_style=None, width=100))
    problem = imported.problem
    click.echo(f"{out_file or 'problem'}: {len(problem.tools)} tools, initial: "
               f"{', '.join(problem.initial) or '-'}; criteria: {', '.join(problem.criteria)}"
               + (f"; plan of the trace: {plan_file}" if plan_file else ""), err=True)


COMMANDS = (import_tools,)
