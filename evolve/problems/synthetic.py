"""Random planning problems of any size, for tests, benchmarks and larger examples.

A hand-written example exercises the engine on one shape only; a generator lets
tests and benchmarks ask for "a problem with 200 tools" and get one with the same
features as ``examples/refund.yaml``: alternative tools of different speed, cost
and scope for each fact, useless tools, write tools that need approval, renewable
resources and limits. Every criterion is guaranteed reachable, so a search that
fails to find a feasible plan is the engine's fault, not the problem's.

The output is a problem *document* (the dict a YAML file holds) as well as the
:class:`~evolve.model.problem.Problem`; the problem is built from the document by the
strict loader, so a saved file reads back to an equal problem by construction.

Randomness comes from ``numpy.random.default_rng(seed)`` only: the same
arguments always give the same problem, on any machine.

From the shell: ``evolve generate --tools 60 --seed 1 --out examples/pipeline.yaml``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from evolve import defaults
from evolve.model import feasibility
from evolve.model.documents import document_text, write_text_file
from evolve.model.errors import UsageError, printable
from evolve.model.problem import Problem
from evolve.model.problem_file import problem_from_dict

NOUNS = (
    "orders", "users", "events", "payments", "inventory", "sessions", "clicks", "logs",
    "prices", "shipments", "invoices", "reviews", "carts", "refunds", "devices", "campaigns",
    "accounts", "products", "stores", "returns", "tickets", "searches", "ads", "visits",
)
"""Subjects of the data-pipeline flavour of names."""

STAGES = (
    "raw", "clean", "joined", "enriched", "features", "aggregates", "scores", "forecast",
    "report", "dashboard", "export", "digest",
)
"""Fact name prefixes by layer: deeper layers get later stages."""

VARIANTS = (
    ("batch", 1.0), ("spark", 0.5), ("sql", 0.8), ("stream", 0.35), ("python", 1.6),
    ("legacy", 3.0), ("gpu", 0.25), ("manual", 6.0), ("cached", 0.4), ("dbt", 0.9),
)
"""Tool name suffixes and how much slower (>1) or faster (<1) than usual they run."""

RESOURCES = {"spark_cluster": 2, "warehouse_conn": 3, "gpu": 1}
"""Renewable resources and their capacities; ``uses`` of a tool never exceed them."""

GRANTED_SCOPES = ("lake:read", "warehouse:read", "warehouse:write", "ml", "reports")
DENIED_SCOPES = ("prod:admin", "pii:read")
"""Scopes the generated run does not grant: some alternative tools need them and are unusable."""


def generate_problem(tools: int, seed: int, *, write_requires_approval: bool = True,
                     resources: bool = True, name: str | None = None) -> Problem:
    """A random problem with exactly ``tools`` tools, equal to loading its saved document."""
    doc = generate_document(tools, seed, write_requires_approval=write_requires_approval,
                            resources=resources, name=name)
    return problem_from_dict(doc, f"<generated tools={tools} seed={seed}>")


def generate_document(tools: int, seed: int, *, write_requires_approval: bool = True,
                      resources: bool = True, name: str | None = None) -> dict[str, Any]:
    """The problem document (what a YAML file holds) for :func:`generate_problem`.

    ``tools`` must be at least 4 (two facts, their producers and an approval) and at most
    :data:`evolve.defaults.GENERATE_MAX_TOOLS` (a problem evolve can still load).
    """
    if not 4 <= tools <= defaults.GENERATE_MAX_TOOLS:
        raise UsageError(f"a generated problem needs 4 to {defaults.GENERATE_MAX_TOOLS} tools, got {tools}")
    rng = np.random.default_rng(seed)
    gen = _Generator(rng, tools, write_requires_approval, resources)
    return gen.document(name or f"pipeline-{tools}-{seed}")


class _Generator:
    """The state of one generation: facts by layer and the tool catalog built so far."""

    def __init__(self, rng: np.random.Generator, tools: int, approval: bool,
                 resources: bool) -> None:
        self.rng = rng
        self.total = tools
        self.approval = approval
        self.resources = dict(RESOURCES) if resources else {}
        self.tools: dict[str, dict[str, Any]] = {}
        self.used_fact_names: set[str] = set()

    # -- naming -----------------------------------------------------------------------------

    def fact_name(self, layer: int) -> str:
        stage = STAGES[min(layer, len(STAGES) - 1)] if layer > 0 else "source"
        noun = NOUNS[int(self.rng.integers(len(NOUNS)))]
        base = f"{stage}_{noun}"
        candidate, n = base, 2
        while candidate in self.used_fact_names:
            candidate, n = f"{base}_{n}", n + 1
        self.used_fact_names.add(candidate)
        return candidate

    def tool_name(self, verb: str, fact: str) -> tuple[str, float]:
        """A unique tool name for making ``fact`` and its speed factor."""
        order = [int(i) for i in self.rng.permutation(len(VARIANTS))]
        for i in order:
            suffix, factor = VARIANTS[i]
            name = f"{verb}.{fact}.{suffix}"
            if name not in self.tools:
                return name, factor
        n = 2
        while f"{verb}.{fact}.v{n}" in self.tools:
            n += 1
        return f"{verb}.{fact}.v{n}", 1.0

    # -- pieces -----------------------------------------------------------------------------

    def spec(self, inputs: Sequence[str], outputs: Sequence[str], factor: float, *,
             scope: str | None, risk: str = "read") -> dict[str, Any]:
        """One tool entry with a duration, cost and resource demands drawn at random."""
        duration = max(5, round(float(self.rng.integers(50, 600)) * factor))
        entry: dict[str, Any] = {}
        if scope is not None:
            entry["scope"] = scope
        entry["duration"] = int(duration)
        entry["inputs"] = list(inputs)
        entry["outputs"] = list(outputs)
        if risk != "read":
            entry["risk"] = risk
        if self.rng.random() < 0.4:
            entry["cost"] = round(float(self.rng.uniform(0.001, 0.05)), 4)
        if self.resources and self.rng.random() < 0.45:
            res = sorted(self.resources)[int(self.rng.integers(len(self.resources)))]
            entry["uses"] = {res: int(self.rng.integers(1, self.resources[res] + 1))}
        return entry

    def pick_inputs(self, layers: list[list[str]], layer: int) -> list[str]:
        """One fact from the layer just below (so the layer means depth) plus 0-2 from any below."""
        below = layers[layer - 1]
        chosen = [below[int(self.rng.integers(len(below)))]]
        pool = [f for lay in layers[:layer] for f in lay if f not in chosen]
        extra = int(self.rng.integers(0, 3))
        if pool and extra:
            idx = self.rng.choice(len(pool), size=min(extra, len(pool)), replace=False)
            chosen += [pool[int(i)] for i in sorted(idx)]
        return chosen

    def granted_scope(self, write: bool) -> str | None:
        if write:
            return "warehouse:write"
        options: list[str | None] = [None, *(s for s in GRANTED_SCOPES if s != "warehouse:write")]
        return options[int(self.rng.integers(len(options)))]

    # -- the document -----------------------------------------------------------------------

    def document(self, name: str) -> dict[str, Any]:
        rng = self.rng
        n_approval = 1 if self.total < 12 else 2
        n_useless = self.total // 10
        n_producers = self.total - n_approval - n_useless
        n_facts = max(2, min(n_producers, round(n_producers / 2.2)))
        n_layers = max(2, min(len(STAGES), round(math.log2(n_facts + 1)) + 1))
        n_layers = min(n_layers, n_facts)

        initial = [self.fact_name(0) for _ in range(int(rng.integers(2, 5)))]
        sizes = [1] * n_layers
        for i in rng.integers(0, n_layers, size=n_facts - n_layers):
            sizes[int(i)] += 1
        layers: list[list[str]] = [initial]
        for k in range(n_layers):
            layers.append([self.fact_name(k + 1) for _ in range(sizes[k])])
        derived = [(k, fact) for k in range(1, len(layers)) for fact in layers[k]]

        # Approval tools first: the first reads only initial facts, so it is always reachable.
        approval_facts = []
        for i in range(n_approval):
            fact = "sign_off" if i == 0 else f"sign_off_{i + 1}"
            self.used_fact_names.add(fact)
            approval_facts.append(fact)
            inputs = [initial[int(rng.integers(len(initial)))]] if i == 0 else \
                self.pick_inputs(layers, 1)
            tool, _ = self.tool_name("approve", "release")
            factor = 8.0 if i == 0 else 0.6
            self.tools[tool] = self.spec(inputs, [fact], factor, scope=None if i == 0 else "reports",
                                         risk="approval")

        # One granted producer per derived fact guarantees every fact is reachable.
        write_share = 0.15
        producers_left = n_producers - len(derived)
        for k, fact in derived:
            write = bool(rng.random() < write_share)
            self.add_producer(layers, k, fact, write=write, granted=True)
        # Alternatives: some faster, some slower, some with a scope the run lacks.
        for i in rng.integers(0, len(derived), size=producers_left):
            k, fact = derived[int(i)]
            granted = bool(rng.random() < 0.85)
            write = bool(rng.random() < write_share)
            self.add_producer(layers, k, fact, write=write, granted=granted)
        # Useless tools: they make facts nothing reads and no criterion needs.
        for _ in range(n_useless):
            k = int(rng.integers(1, len(layers)))
            fact = f"audit_{self.fact_name(k)}"
            tool, factor = self.tool_name("audit", fact)
            self.tools[tool] = self.spec(self.pick_inputs(layers, k), [fact], factor,
                                         scope=self.granted_scope(False))

        deep = [f for lay in layers[-2:] for f in lay]
        n_criteria = max(1, min(len(deep), round(math.sqrt(n_facts) / 1.5)))
        criteria = [deep[int(i)] for i in sorted(rng.choice(len(deep), size=n_criteria, replace=False))]

        ordered = {name: self.tools[name] for name in sorted(self.tools)}
        doc: dict[str, Any] = {
            "name": name,
            "objective": f"Build {', '.join(criteria)} from {', '.join(initial)}",
            "initial": initial,
            "criteria": criteria,
            "scopes": list(GRANTED_SCOPES),
            "limits": {"max_parallel": int(rng.integers(3, 7)),
                       "max_tasks": n_facts + n_approval + max(6, n_facts // 2)},
        }
        if self.resources:
            doc["resources"] = dict(self.resources)
        doc["policy"] = {"write_requires_approval": self.approval}
        doc["tools"] = ordered
        assert len(ordered) == self.total, (len(ordered), self.total)
        return doc

    def add_producer(self, layers: list[list[str]], layer: int, fact: str, *, write: bool,
                     granted: bool) -> None:
        """A tool making ``fact`` (sometimes with a sibling fact of the same layer too)."""
        outputs = [fact]
        siblings = [f for f in layers[layer] if f != fact]
        if siblings and self.rng.random() < 0.2:
            outputs.append(siblings[int(self.rng.integers(len(siblings)))])
        if granted:
            scope = self.granted_scope(write)
        else:
            scope = DENIED_SCOPES[int(self.rng.integers(len(DENIED_SCOPES)))]
        verb = "load" if write else ("build" if layer > 1 else "ingest")
        tool, factor = self.tool_name(verb, fact)
        self.tools[tool] = self.spec(self.pick_inputs(layers, layer), outputs, factor, scope=scope,
                                     risk="write" if write else "read")


def reachable_facts(problem: Problem) -> set[str]:
    """Facts some chain of granted tools can make from the initial facts (a write the policy
    gates counts only when an approval tool is reachable too): the model's own fixed point."""
    return feasibility.reachable_facts(problem)[0]


def save_document(doc: dict[str, Any], path: str | Path) -> None:
    """Write ``doc`` as YAML (or JSON when the name ends in ``.json``), keys in their order."""
    target = Path(path)
    if target.suffix == ".json":
        text = document_text(doc, target)
    else:
        # the name is the user's text: escaped, so a newline in it cannot end the comment early
        text = (f"# Generated by: evolve generate (problem {printable(str(doc['name']))}).\n"
                "# Durations are milliseconds. Regenerate rather than edit by hand.\n"
                + yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100))
    write_text_file(target, text)
