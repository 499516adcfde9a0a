"""Problem catalogs from the tool specs people already have (``evolve import-tools``).

:func:`import_tools` reads an OpenAI function-tool list or an MCP ``tools/list`` result
(:mod:`~evolve.problems.toolspec.spec`), optionally a side file of durations and risks
(:mod:`~evolve.problems.toolspec.meta`) and a recorded session whose dataflow names the inputs
(:mod:`~evolve.problems.toolspec.trace`), and builds the problem
(:mod:`~evolve.problems.toolspec.catalog`); :func:`problem_yaml` writes it with its guesses as
comments, so the file says what in it is not from the input.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from evolve.model.documents import read_document
from evolve.model.errors import printable
from evolve.problems.toolspec.catalog import Imported, build_catalog
from evolve.problems.toolspec.meta import read_side_file
from evolve.problems.toolspec.spec import ToolSpec, read_spec
from evolve.problems.toolspec.trace import Call, Edge, dataflow, read_trace


def import_tools(
    spec_path: str | Path,
    *,
    meta_path: str | Path | None = None,
    trace_path: str | Path | None = None,
    goal: Sequence[str] = (),
    known: Sequence[str] | None = None,
    name: str | None = None,
) -> Imported:
    """The problem a spec file describes (see :func:`~evolve.problems.toolspec.catalog.build_catalog`).

    Every file is read with the loader's bounds, and any fault in one is an
    :class:`~evolve.model.errors.InputError` naming that file and the field."""
    return import_document(read_document(spec_path), str(spec_path), meta_path=meta_path,
                           trace_path=trace_path, goal=goal, known=known,
                           name=name or Path(spec_path).stem)


def import_document(
    doc: object,
    source: str,
    *,
    meta_path: str | Path | None = None,
    trace_path: str | Path | None = None,
    goal: Sequence[str] = (),
    known: Sequence[str] | None = None,
    name: str | None = None,
) -> Imported:
    """:func:`import_tools` of a spec already parsed (a live MCP server's ``tools/list``):
    ``source`` names it in messages."""
    specs = read_spec(doc, source)
    side = (read_side_file(read_document(meta_path), str(meta_path), [s.name for s in specs])
            if meta_path is not None else {})
    calls = read_trace(read_document(trace_path), str(trace_path)) if trace_path is not None else ()
    return build_catalog(specs, source, side=side, calls=calls,
                         trace_source=str(trace_path) if trace_path is not None else "<trace>",
                         goal=goal, known=known, name=name)


def problem_yaml(imported: Imported, header: Sequence[str] = ()) -> str:
    """The problem document as YAML, ``header`` lines and then every guess as comments on top
    (the problem format has no notes field: comments keep the file loadable by every reader)."""
    lines = [f"# {line}" for line in header]
    if imported.notes:
        lines.append("# Guesses (check them; each is a choice the input did not make):")
        lines += [f"#   - {printable(note)}" for note in imported.notes]
    body = yaml.safe_dump(imported.document, sort_keys=False, default_flow_style=None, width=100,
                          allow_unicode=True)
    return "\n".join(lines) + ("\n" if lines else "") + body


__all__ = ["Call", "Edge", "Imported", "ToolSpec", "build_catalog", "dataflow", "import_document",
           "import_tools", "problem_yaml", "read_side_file", "read_spec", "read_trace"]
