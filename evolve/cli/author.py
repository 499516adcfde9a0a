"""``evolve author``: an HTN domain from the trace of one successful session, by evolution.

Exit status 0 when a candidate passes every synthetic state (it is written to ``--out``), 1 when
none does (nothing is written; the best candidate's failures are printed), 2 for bad input.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from evolve import defaults
from evolve.cli.common import EXIT_NO, EXIT_OK, FiniteFloatRange, friendly, runs_root
from evolve.llm.author import Author, Candidate, evolve_domain
from evolve.llm.cache import ReplyCache, default_cache_dir
from evolve.llm.client import ChatClient
from evolve.llm.factory import API_KEY_ENV, api_key_from_env
from evolve.llm.trace import read_trace
from evolve.model.documents import document_text, write_text_file
from evolve.problems.htn.writer import domain_to_dict
from evolve.run.location import make_folder, new_run_dir


@click.command(name="author")
@click.argument("trace_file", type=click.Path(dir_okay=False))
@click.option("--out", "out_file", type=click.Path(dir_okay=False), required=True,
              help="The domain file to write (evolve's HTN format), only if a candidate passes.")
@click.option("--n", "n", type=click.IntRange(min=1), default=defaults.AUTHOR_CANDIDATES, show_default=True,
              help="Candidates asked for at first, and mutations of the best each generation.")
@click.option("--generations", type=click.IntRange(min=0), default=defaults.AUTHOR_GENERATIONS,
              show_default=True, help="Generations of LLM mutation while no candidate passes.")
@click.option("--name", default=None, help="The domain's name (default: the --out file's stem).")
@click.option("--run-dir", type=click.Path(file_okay=False), default=None,
              help="Where the prompts, candidates and scores go (default: a new folder under runs/).")
@click.option("--max-states", type=click.IntRange(min=1), default=defaults.HTN_VALIDATE_STATES,
              show_default=True, help="Synthetic world states each candidate is checked on.")
@click.option("--seed", type=int, default=defaults.SEED, show_default=True,
              help="Seeds the calls (one seed each) and the state sample.")
@click.option("--llm-base-url", required=True, help="An OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1.")
@click.option("--llm-model", required=True, help="The model name the endpoint serves.")
@click.option("--llm-timeout", type=FiniteFloatRange(min=0, min_open=True), default=defaults.LLM_TIMEOUT,
              show_default=True, help="Seconds a whole call may take.")
@click.option("--llm-max-calls", type=click.IntRange(min=0), default=None, help="Calls the run may make.")
@click.option("--llm-cache-dir", type=click.Path(file_okay=False), default=None,
              help="Where replies are cached (default ~/.cache/evolve/llm).")
@click.option("--llm-temperature", type=FiniteFloatRange(min=0), default=defaults.AUTHOR_TEMPERATURE,
              show_default=True, help="Sampling temperature (above 0, so candidates differ).")
@click.option("--llm-max-tokens", type=click.IntRange(min=1), default=defaults.AUTHOR_MAX_TOKENS,
              show_default=True)
@friendly
def author(trace_file: str, out_file: str, n: int, generations: int, name: str | None, run_dir: str | None,
           max_states: int, seed: int, llm_base_url: str, llm_model: str, llm_timeout: float,
           llm_max_calls: int | None, llm_cache_dir: str | None, llm_temperature: float,
           llm_max_tokens: int) -> None:
    """Author an HTN domain from TRACE, the tool-call log of one successful session (JSON lines
    {"tool", "args", "result"}, or an OpenAI-style messages file with tool calls).

    The model generalises the trace into N candidate domains; each is read (pi-htn's format or
    evolve's) and checked by validate-domain on every synthetic world state (no operator runs);
    score = 1000 x states with a plan - failures + richness. While none passes, the model mends
    the best with the validator's failures, for the given generations. Only a domain that passes
    every state is written."""
    calls = read_trace(trace_file)
    folder = Path(run_dir) if run_dir is not None else new_run_dir(runs_root())
    make_folder(folder)
    client = ChatClient(llm_base_url, llm_model, api_key=api_key_from_env(API_KEY_ENV), timeout=llm_timeout,
                        max_retries=defaults.LLM_MAX_RETRIES, backoff=defaults.LLM_BACKOFF)
    cache = ReplyCache(llm_cache_dir if llm_cache_dir is not None else default_cache_dir())

    def show(c: Candidate) -> None:
        v = c.verdict
        what = (f"passes {v.planned} of {v.states} states" if v.valid else
                f"{v.planned} of {v.states} states, {len(v.failures)} failures" if v.domain is not None
                else v.failures[0][:160])
        click.echo(f"{c.id:<6} score {c.score:>10.2f}  {what}", err=True)

    with Author(client, cache=cache, temperature=llm_temperature, max_tokens=llm_max_tokens,
                max_calls=llm_max_calls) as model:
        done = evolve_domain(calls, model, folder, name=name or Path(out_file).stem, n=n,
                             generations=generations, max_states=max_states, seed=seed, on_candidate=show)
        usage = model.usage.summary()
    summary = {"trace": trace_file, "calls_in_trace": len(calls), "candidates": len(done.candidates),
               "best": done.best.record(), "written": None, "llm": {"model": llm_model, **usage}}
    passer = done.passer
    if passer is None or passer.verdict.domain is None:
        (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        click.echo(f"no candidate passes every state; nothing written. The best, {done.best.id} "
                   f"(score {done.best.score:.2f}), fails:")
        for failure in done.best.verdict.failures:
            click.echo(f"  {failure}")
        click.echo(f"run folder: {folder}/ (prompt.json, candidates/, candidates.jsonl, summary.json)")
        sys.exit(EXIT_NO)
    write_text_file(out_file, document_text(domain_to_dict(passer.verdict.domain), out_file))
    summary["written"] = {"file": out_file, "candidate": passer.id}
    (folder / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    click.echo(f"wrote {out_file}: {passer.id} (generation {passer.generation}) passes "
               f"{passer.verdict.planned} of {passer.verdict.states} states, score {passer.score:.2f}; "
               f"{usage['calls']} calls, {usage['cache_hits']} from cache")
    click.echo(f"run folder: {folder}/ (prompt.json, candidates/, candidates.jsonl, summary.json)")
    sys.exit(EXIT_OK)


COMMANDS = (author,)


COMMANDS = (author,)
"""What the command line adds (see ``evolve.cli.main.SUBCOMMANDS``)."""
