"""``evolve validate-domain`` and the HTN options of ``evolve run``."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import click

from evolve import defaults
from evolve.cli.common import friendly
from evolve.cli.htn_options import limit_options
from evolve.model.documents import document_text, read_document, write_text_file
from evolve.model.errors import InputError
from evolve.model.problem import Problem
from evolve.problems.htn import (
    HtnProblem,
    domain_from_dict,
    htn_problem_from_dict,
    is_htn_document,
    validate_domain,
)
from evolve.problems.htn.hddl import read_hddl
from evolve.problems.htn.inputs import parse_inputs, seeded
from evolve.problems.htn.pihtn import from_pihtn, is_pihtn_document
from evolve.problems.htn.problem import htn_problem

if TYPE_CHECKING:
    from evolve.llm.htn import LLMDecomposer

def hddl_document(domain_file: str, problem_file: str, max_depth: int | None,
                  max_nodes: int | None) -> dict[str, Any]:
    """The grounded HTN document of an HDDL domain and problem, with its search limits."""
    document = read_hddl(domain_file, problem_file)
    document["htn"]["max_depth"] = max_depth or defaults.HDDL_MAX_DEPTH
    document["htn"]["max_nodes"] = max_nodes or defaults.HDDL_MAX_NODES
    return document


def run_problem(problem: Problem | None, hddl_problem: str | None, source: str, max_depth: int | None,
                max_nodes: int | None) -> Problem:
    """What ``evolve run`` searches: ``problem``, or the HDDL pair ``source`` + ``hddl_problem``
    grounded; an HTN domain's limits replaced by the options given."""
    if hddl_problem is not None:
        return htn_problem_from_dict(hddl_document(source, hddl_problem, max_depth, max_nodes),
                                     hddl_problem)
    assert problem is not None
    if not isinstance(problem, HtnProblem) or (max_depth is None and max_nodes is None):
        if max_depth is not None or max_nodes is not None:
            raise click.UsageError("--max-depth and --max-nodes are for HTN domains")
        return problem
    domain = problem.htn()
    limited = replace(domain, max_depth=max_depth or domain.max_depth,
                      max_nodes=max_nodes or domain.max_nodes)
    return htn_problem(limited, problem)


def seed_inputs(problem: Problem, input_items: tuple[str, ...],
                input_file: str | None) -> tuple[Problem, set[str]]:
    """``problem`` with its HTN world state seeded by ``--input-file`` then ``--input`` (typed
    values; a key the domain does not use is named), and the keys given."""
    if not (input_items or input_file):
        return problem, set()
    if not isinstance(problem, HtnProblem):
        raise click.UsageError("--input and --input-file seed the world state of an HTN domain")
    domain = problem.htn()
    given: set[str] = set()
    if input_file is not None:
        from_file = read_document(input_file)
        if not isinstance(from_file, dict):
            raise InputError(input_file, "", "expected a mapping of world-state keys to values")
        domain = seeded(domain, from_file, input_file)
        given.update(from_file)
    items = parse_inputs(input_items)
    domain = seeded(domain, items, "--input")
    given.update(items)
    return htn_problem(domain, problem), given


def htn_fallback_for(problem: Problem, operator: str, fallback: str, *, base_url: str | None,
                     model: str | None, max_calls: int | None, timeout: float | None,
                     response_format: str | None, cache_dir: str | None, seed: int) -> LLMDecomposer | None:
    """The fallback ``evolve run`` asks, or None. On an HTN domain ``--operator llm`` means the
    fallback too (the plan-patch operator does not apply to decompositions)."""
    htn = isinstance(problem, HtnProblem)
    if fallback == "llm" and not htn:
        raise click.UsageError("--htn-fallback llm is for HTN domains (files with an htn section)")
    if not htn or "llm" not in (operator, fallback):
        return None
    if not base_url or not model:
        raise click.UsageError("the LLM fallback needs --llm-base-url and --llm-model")
    from evolve.llm.htn import make_htn_fallback  # the LLM client's import is slow: only when asked

    settings: dict[str, Any] = {"max_calls": max_calls, "timeout": timeout, "cache_dir": cache_dir,
                                "response_format": response_format}
    return make_htn_fallback(base_url, model, seed=seed,
                             **{k: v for k, v in settings.items() if v is not None})


@click.command(name="validate-domain")
@click.argument("domain_file", type=click.Path(dir_okay=False))
@click.option("--max-states", type=click.IntRange(min=1), default=defaults.HTN_VALIDATE_STATES,
              show_default=True, help="Synthetic states to try; more combinations are sampled.")
@click.option("--seed", type=click.IntRange(min=0), default=defaults.SEED, show_default=True,
              help="Seed of the sample (when there are more combinations than --max-states).")
@click.option("--json", "as_json", is_flag=True)
@friendly
def validate_domain_cmd(domain_file: str, max_states: int, seed: int, as_json: bool) -> None:
    """Check an HTN domain: for every world state its guards tell apart (or a seeded sample), a
    plan exists and reaches the goal. Exit 0 when all do, 1 when some do not, 2 when unreadable."""
    doc = read_document(domain_file)
    if is_pihtn_document(doc):
        doc = from_pihtn(doc, domain_file)
    if not is_htn_document(doc):
        raise InputError(domain_file, "htn", "missing: not an HTN domain (no htn section)")
    domain, _ = domain_from_dict(doc, domain_file)
    report = validate_domain(domain, max_states=max_states, seed=seed)
    failures = report.failures
    if as_json:
        click.echo(json.dumps({
            "valid": not failures, "states": len(report.results), "combinations": report.combinations,
            "exhaustive": report.exhaustive, "keys": list(report.keys),
            "failures": [{"state": r.state, "blocked": r.blocked} for r in failures]}, indent=2))
    else:
        for r in failures:
            click.echo(f"no plan in state {json.dumps(r.state, sort_keys=True)}: {r.blocked}")
        scope = "every combination" if report.exhaustive else f"a sample of {report.combinations}"
        click.echo(f"{domain_file}: {len(report.results) - len(failures)} of {len(report.results)} "
                   f"states have a plan ({scope} of {', '.join(report.keys) or 'no guard keys'})")
    sys.exit(1 if failures else 0)


@click.command(name="hddl")
@click.argument("domain_file", type=click.Path(dir_okay=False, exists=True))
@click.argument("problem_file", type=click.Path(dir_okay=False, exists=True))
@click.option("--out", "out_file", type=click.Path(dir_okay=False), required=True,
              help="The HTN domain file to write (JSON for a .json name, else YAML), for evolve "
                   "run, validate and validate-domain.")
@limit_options
@friendly
def hddl_cmd(domain_file: str, problem_file: str, out_file: str, max_depth: int | None,
             max_nodes: int | None) -> None:
    """Ground an HDDL domain and problem into an HTN domain file (see docs/hddl.md)."""
    document = hddl_document(domain_file, problem_file, max_depth, max_nodes)
    htn_problem_from_dict(document, problem_file)  # checked like any domain file
    write_text_file(out_file, document_text(document, out_file))
    click.echo(f"wrote {out_file} ({len(document['htn']['operators'])} ground operators, "
               f"{len(document['htn']['methods'])} ground methods)", err=True)


COMMANDS = (validate_domain_cmd, hddl_cmd)
