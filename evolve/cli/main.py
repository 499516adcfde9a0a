"""The ``evolve`` command line: the group, each command loaded from its module when it runs.

Bad input ends in one line on stderr naming the file, the key and the fault,
with exit status 2; never a traceback.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import click

from evolve.cli.common import survive_closed_pipes

SUBCOMMANDS: Mapping[str, tuple[str, ...]] = {
    "evolve.cli.run": ("run",),
    "evolve.cli.checks": ("validate", "schedule", "fitness", "generate"),
    "evolve.cli.report": ("report", "plot", "show"),
    "evolve.cli.bench": ("bench",),
    "evolve.cli.bound": ("bound",),
    "evolve.cli.htn": ("validate-domain", "hddl"),
    "evolve.cli.author": ("author",),
    "evolve.cli.execute": ("execute",),
    "evolve.cli.human": ("pending", "approve", "reject", "answer", "resolve"),
    "evolve.cli.patterns": ("patterns",),
    "evolve.cli.plan": ("plan",),
    "evolve.cli.tools": ("import-tools",),
    "evolve.cli.serve": ("serve",),
    "evolve.cli.mcp": ("mcp",),
}
"""The commands the other modules of this package define (their ``COMMANDS``), by module. A
module is imported only when one of its commands runs (or ``evolve --help`` lists them all), so
``evolve run`` does not wait for the server's, the executor's or the bounds' libraries (nor, until its
first plan is on disk, for the engine's: see :mod:`evolve.cli.run`). A test
holds each entry to its module's ``COMMANDS``."""


class LazyGroup(click.Group):
    """A click group whose commands of :data:`SUBCOMMANDS` are imported on first use."""

    def __init__(self, *args: Any, modules: Mapping[str, tuple[str, ...]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = {name: module for module, names in modules.items() for name in names}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = self.lazy.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            for command in importlib.import_module(module).COMMANDS:
                self.add_command(command)
        return super().get_command(ctx, cmd_name)


@click.group(cls=LazyGroup, modules=SUBCOMMANDS)
@click.version_option(package_name="evolve")
def cli() -> None:
    """evolve: evolutionary search for the best plan (task graph) for a planning problem."""


def main() -> None:
    survive_closed_pipes()
    cli(prog_name="evolve")


__all__ = ["cli", "main"]
