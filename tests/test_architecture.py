"""The layout is the architecture: lower layers never import higher ones, and no module imports
another that (directly or not) imports it back, counting imports inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS = ("defaults", "model", "scheduling", "fitness", "search", "problems", "llm", "run", "execute",
          "report", "agent", "patterns", "serve", "mcp", "cli")
"""Bottom to top: a module may import its own layer and the ones before it, never a later one."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in ("evolve", "fitness"):
        for path in (ROOT / package).rglob("*.py"):
            found[module_name(path)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> set[str]:
    """Every project module ``name`` imports, anywhere in its body."""
    out: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    out.add(full)
                elif base in known:
                    out.add(base)
    out.discard(name)
    return out


def graph() -> dict[str, set[str]]:
    found = modules()
    known = set(found)
    return {name: imports(name, path, known) for name, path in found.items()}


def layer(name: str) -> int | None:
    parts = name.split(".")
    if parts[0] == "fitness":
        return LAYERS.index("fitness") + 1  # the public alias sits just above what it names
    if len(parts) < 2 or parts[1] not in LAYERS:
        return None
    return LAYERS.index(parts[1])


def test_every_subpackage_has_a_layer() -> None:
    entry = {"evolve.__main__"}  # ``python -m evolve``: the command line, like the package init
    loose = [n for n in graph() if n.count(".") >= 1 and n.startswith("evolve.") and layer(n) is None
             and n not in entry]
    assert loose == [], f"modules outside the layered folders: {loose}"


def test_lower_layers_never_import_higher_ones() -> None:
    wrong = []
    for name, targets in graph().items():
        mine = layer(name)
        if mine is None or name == "evolve.__main__":
            continue  # the package's own __init__ re-exports the public API from every layer
        for target in targets:
            theirs = layer(target)
            if theirs is not None and theirs > mine:
                wrong.append(f"{name} -> {target}")
    assert wrong == [], "imports that go up the layers:\n" + "\n".join(sorted(wrong))


def test_no_import_cycles() -> None:
    edges = graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)
    assert cycles == [], "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)
