"""evolve and the Model Context Protocol: MCP servers as the catalog and as the tools that run
(the client side), and evolve as an MCP server (``evolve mcp``).

- :mod:`~evolve.mcp.servers`: which servers a run names (``--mcp NAME="CMD ARGS"``,
  ``--mcp-url NAME=URL``), as the journal keeps them; needs no SDK.
- :mod:`~evolve.mcp.client`: one live connection per server, on its own event loop thread, so
  the executor's threads call it with a timeout; a server that dies is started again once.
- :mod:`~evolve.mcp.catalog`: a server's ``tools/list`` (every page) as a problem catalog,
  through the same conversion as ``evolve import-tools`` of a saved list.
- :mod:`~evolve.mcp.tools`: a server's tools as the executor's tool callables.
- :mod:`~evolve.mcp.server`: ``evolve mcp``, plan / validate / execute / people over MCP.

The SDK (the ``mcp`` package, ``pip install 'evolve[mcp]'``) is imported only by the modules
that talk the protocol, so evolve without the extra loses only these commands.
"""

from __future__ import annotations

from evolve.mcp.servers import McpError, ServerSpec, parse_servers, require_sdk

__all__ = ["McpError", "ServerSpec", "parse_servers", "require_sdk"]
