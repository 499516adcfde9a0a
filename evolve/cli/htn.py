"""``evolve validate-domain`` and the HTN options of ``evolve run``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import yaml

from evolve import defaults
from evolve.cli.author import author
from evolve.cli.common import friendly
from evolve.llm.htn import LLMDecomposer, make_htn_fallback
from evolve.model.errors import InputError
from evolve.model.files import read_document
from evolve.model.problem import Problem
from evolve.problems.htn import (
    HtnProblem,
    domain_from_dict,
    htn_problem_from_dict,
    is_htn_document,
    validate_domain,
)
from evolve.problems.htn.hddl import read_hddl
from evolve.problems.htn.pihtn import from_pihtn, is_pihtn_document

FALLBACKS = ("none", "llm")
FALLBACK_HELP = ("HTN domains: who decomposes a compound task no method applies to: nobody, or an LLM "
                 "(ChatHTN; needs --llm-base-url and --llm-model, as does --operator llm on a domain).")


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
              help="The HTN domain file to write (YAML), for evolve run and validate-domain.")
@friendly
def hddl_cmd(domain_file: str, problem_file: str, out_file: str) -> None:
    """Ground an HDDL domain and problem into an HTN domain file (needs evolve[htn])."""
    document = read_hddl(domain_file, problem_file)
    htn_problem_from_dict(document, problem_file)  # checked like any domain file
    Path(out_file).write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    click.echo(f"wrote {out_file} ({len(document['htn']['operators'])} ground operators, "
               f"{len(document['htn']['methods'])} ground methods)", err=True)


COMMANDS = (validate_domain_cmd, hddl_cmd, author)  # author: evolve.cli.author
