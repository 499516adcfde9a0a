"""The command line: ``evolve run``, ``validate``, ``schedule``, ``generate``, ``bench``, ``report`` ..."""

from evolve.cli.main import cli, main

__all__ = ["cli", "main"]
