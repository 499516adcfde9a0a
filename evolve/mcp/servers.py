"""The MCP servers a command names: ``--mcp NAME="COMMAND ARGS..."`` (stdio) and ``--mcp-url
NAME=URL`` (streamable HTTP), parsed once and kept in a run's journal, so ``--resume`` starts
the same servers again."""

from __future__ import annotations

import importlib.util
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evolve.model.errors import EvolveError

SERVER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
"""How a server may be named on the command line (it appears in every message about it)."""


class McpError(EvolveError):
    """An MCP server that cannot be used: one line naming the server (and the tool) and what is
    wrong. The command line exits with status 2 when it is raised before a run starts."""


def require_sdk(option: str) -> None:
    """Raise a one-line error when the ``mcp`` package is not installed."""
    if importlib.util.find_spec("mcp") is None:
        raise McpError(f"{option} needs the MCP SDK: pip install 'evolve[mcp]'")


@dataclass(frozen=True)
class ServerSpec:
    """One server: a command started as a subprocess (stdio), or the URL of a running one."""

    name: str
    command: tuple[str, ...] = ()
    url: str | None = None

    def describe(self) -> str:
        """How messages name it: ``shop (python shop.py)``."""
        return f"{self.name} ({self.url or shlex.join(self.command)})"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "url": self.url} if self.url else {"name": self.name,
                                                                      "command": list(self.command)}

    @staticmethod
    def from_dict(doc: Mapping[str, Any]) -> ServerSpec:
        return ServerSpec(name=str(doc["name"]), command=tuple(str(a) for a in doc.get("command") or ()),
                          url=doc.get("url"))


def command_server(name: str, text: str, option: str) -> ServerSpec:
    """A stdio server from its command line, split as a shell would (without running a shell)."""
    try:
        command = tuple(shlex.split(text))
    except ValueError as exc:
        raise McpError(f"{option} {name}: the command cannot be split ({exc}): {text!r}") from None
    if not command:
        raise McpError(f"{option} {name}: no command given")
    return ServerSpec(name=name, command=command)


def url_server(name: str, url: str, option: str) -> ServerSpec:
    if not re.match(r"https?://[^\s/]+", url):
        raise McpError(f"{option} {name}: expected an http:// or https:// URL, got {url!r}")
    return ServerSpec(name=name, url=url)


def named(item: str, option: str) -> tuple[str, str]:
    name, sep, value = item.partition("=")
    if not sep or SERVER_NAME.fullmatch(name.strip()) is None:
        raise McpError(f"{option} {item!r}: expected NAME=VALUE with a server name "
                       "(letters, digits, _ . -) before the '='")
    return name.strip(), value.strip()


def parse_servers(commands: Iterable[str], urls: Iterable[str]) -> list[ServerSpec]:
    """The servers of ``--mcp NAME="CMD ARGS"`` and ``--mcp-url NAME=URL`` items, each name once."""
    specs = [command_server(*named(item, "--mcp"), "--mcp") for item in commands]
    specs += [url_server(*named(item, "--mcp-url"), "--mcp-url") for item in urls]
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise McpError(f"--mcp {spec.name}: two servers have this name")
        seen.add(spec.name)
    return specs


def one_server(command: str | None, url: str | None, name: str = "server") -> ServerSpec:
    """The single server of ``import-tools --mcp "CMD ARGS"`` or ``--mcp-url URL`` (no name)."""
    if (command is None) == (url is None):
        raise McpError("give one of --mcp \"COMMAND ARGS\" and --mcp-url URL")
    return command_server(name, command, "--mcp") if command is not None else url_server(name, url or "",
                                                                                       "--mcp-url")


def journaled(specs: Sequence[ServerSpec]) -> list[dict[str, Any]]:
    """The servers as a run's journal keeps them."""
    return [spec.to_dict() for spec in specs]
