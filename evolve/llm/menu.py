"""Menu mode: the engine drafts the edits, the model only picks one.

A small model cannot write a sound plan patch (SmolLM2-135M had 0 of 8
accepted), but choosing one line of a short list is the narrow, classify-like
work such models do well. So for each child the engine draws ``size`` distinct
edits of the parent from the run's own mutation operators, scores every one
with the run's evaluator (through the search's cache, so nothing is scored
twice), and shows them one line each with what the edit does to the scores.
The reply is ``{"choice": <index>, "reason": "<one sentence>"}``.

The menu is shown in a shuffled order, not best first: a model that always
answers ``0`` must not look clever because the engine sorted for it. The same
stream also draws a uniformly random pick of the same menu, recorded beside the
model's, so every run carries its own baseline: did the model's pick beat a
coin on the very same options?
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evolve import defaults
from evolve.fitness.evaluation import Evaluation
from evolve.llm.reply import Rejected, extract_json
from evolve.model.patch import diff_plans
from evolve.model.plan import Plan, plan_hash
from evolve.model.problem import Problem
from evolve.search.algorithm import Candidate
from evolve.search.loop import Offspring, ProposalContext, choose
from evolve.search.operators import operator_name
from evolve.search.ranking import Ranking

CHOICE_KEYS = ("choice", "index", "option", "pick", "answer", "edit")
"""Keys a tolerant reading accepts for the picked index (the schema asks for ``choice``)."""
CHOICE_IN_TEXT = re.compile(r'(?i)"?\b(?:choice|index|option|pick|answer|edit)\b"?\s*[:=#]?\s*"?(-?\d+)')
LEADING_NUMBER = re.compile(r"^\s*[#\[(]?\s*(-?\d+)\b")
REASON_IN_TEXT = re.compile(r'"reason"\s*:\s*"([^"]*)')


@dataclass(frozen=True)
class Option:
    """One drafted edit of the parent, already scored."""

    plan: Plan
    hash: str
    operator: str
    evaluation: Evaluation
    line: str


@dataclass(frozen=True)
class Menu:
    """A child's menu: its parent, the options in the order shown, and the coin's pick."""

    parent: Candidate
    options: tuple[Option, ...]
    random_choice: int

    def best_choice(self, ranking: Ranking) -> int:
        """The option the ranking puts first (the lowest index among equals)."""
        keys = [ranking.key(o.evaluation) for o in self.options]
        return keys.index(min(keys))

    def text(self) -> str:
        return "\n".join(f"{i}. {o.line}" for i, o in enumerate(self.options))


def pick_parent(parents: Sequence[Candidate], rng: np.random.Generator) -> Candidate:
    """A parent drawn rank-weighted (the best most often), as the random operators draw theirs."""
    weights = np.arange(len(parents), 0, -1, dtype=float)
    return parents[int(rng.choice(len(parents), p=weights / weights.sum()))]


def draft_menu(problem: Problem, parent: Candidate, context: ProposalContext,
               rng: np.random.Generator, size: int = defaults.LLM_MENU_SIZE) -> Menu | None:
    """Up to ``size`` distinct edits of ``parent``, scored and shuffled; ``None`` when no
    operator changes the parent at all (the engine then breeds the child as usual)."""
    drafts: list[tuple[Plan, str, str]] = []
    seen = {parent.hash}
    mutations = context.operators.mutations
    for _ in range(size * defaults.LLM_MENU_ATTEMPTS):
        if len(drafts) >= size or not mutations:
            break
        mutate = choose(mutations, rng)
        plan = mutate(problem, parent.plan, rng)
        if plan is None:
            continue
        digest = plan_hash(plan)
        if digest in seen:
            continue
        seen.add(digest)
        drafts.append((plan, digest, operator_name(mutate)))
    if not drafts:
        return None
    evaluations = context.evaluate([plan for plan, _, _ in drafts])
    options = [Option(plan, digest, name, ev, f"{describe_edit(parent.plan, plan)}: "
                      f"{describe_effect(parent.evaluation, ev, context.ranking)}")
               for (plan, digest, name), ev in zip(drafts, evaluations)]
    order = [int(i) for i in rng.permutation(len(options))]
    return Menu(parent, tuple(options[i] for i in order), int(rng.integers(len(options))))


def num(value: float) -> str:
    return f"{value:g}"


def describe_edit(parent: Plan, child: Plan, limit: int = 3) -> str:
    """What an edit does, in a few words: "swap t4 policy.search -> policy.fetch_all"."""
    patch = diff_plans(parent, child)
    before = parent.by_id()
    parts = [f"remove {tid} ({before[tid].tool})" for tid in patch.get("remove", [])]
    parts += [f"add {task['id']} {task['tool']}" for task in patch.get("add", [])]
    for change in patch.get("update", []):
        tid = change["id"]
        old = before[tid]
        if "tool" in change:
            parts.append(f"swap {tid} {old.tool} -> {change['tool']}")
        elif "inputs" in change:
            moved = [f"{k} {old.inputs.get(k, '-')} -> {v}" for k, v in change["inputs"].items()
                     if old.inputs.get(k) != v]
            parts.append(f"rewire {tid} {', '.join(moved) or 'inputs'}")
        elif "deps" in change:
            new = set(change["deps"] or ())
            gained, lost = sorted(new - set(old.deps)), sorted(set(old.deps) - new)
            words = ([f"{tid} waits for {', '.join(gained)}"] if gained else []) + (
                [f"{tid} no longer waits for {', '.join(lost)}"] if lost else [])
            parts.append("; ".join(words) or f"change {tid} deps")
        else:
            parts.append(f"change {tid} {', '.join(sorted(k for k in change if k != 'id'))}")
    if "priority" in patch and not parts:
        parts.append("reorder the scheduling priority")
    if not parts:
        parts.append("reorder tasks")
    shown = parts[:limit]
    if len(parts) > limit:
        shown.append(f"{len(parts) - limit} more changes")
    return "; ".join(shown)


def describe_effect(before: Evaluation, after: Evaluation, ranking: Ranking) -> str:
    """What an edit does to the scores the run ranks by, and whether the ranking calls that
    better: "makespan 1750 -> 1600 (better)". The verdict is the engine's, so even a model that
    cannot compare numbers can read which lines improve the plan."""
    if after.failed is not None:
        return "evaluation fails"
    if before.failed is not None:
        return ", ".join(f"{k} {num(v)}" for k, v in after.values.items())
    changes = [f"{name} {num(before.values[name])} -> {num(after.values[name])}"
               for name in ranking.objectives
               if name in before.values and name in after.values
               and before.values[name] != after.values[name]]
    if before.feasible != after.feasible:
        changes.insert(0, "becomes feasible" if after.feasible else "becomes NOT feasible")
    mine, theirs = ranking.key(after), ranking.key(before)
    verdict = "better" if mine < theirs else "worse" if mine > theirs else "same rank"
    return f"{', '.join(changes) or 'scores unchanged'} ({verdict})"


def menu_schema(count: int) -> dict[str, Any]:
    """The reply's JSON schema: the index as an ``enum`` of the menu, and a bounded reason, so a
    grammar-constrained model can neither name an edit that is not there nor ramble."""
    return {
        "type": "object",
        "properties": {
            "choice": {"type": "integer", "enum": list(range(count))},
            "reason": {"type": "string", "maxLength": defaults.LLM_MENU_REASON_CHARS},
        },
        "required": ["choice", "reason"],
        "additionalProperties": False,
    }


def as_index(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        return int(value)
    return None


def choice_from_reply(text: str, count: int) -> tuple[int, str]:
    """The picked index and the reason, read tolerantly: the schema's object, any of
    :data:`CHOICE_KEYS`, a bare number or ``[2]``, an object cut short after its index (a
    reply that hit ``max_tokens``), or "Option 2" in prose. Raises :class:`Rejected`:
    ``empty``, ``parse`` (no index found) or ``choice-range`` (an index not on the menu)."""
    if not text.strip():
        raise Rejected("empty", "the reply is empty")
    index: int | None = None
    reason = ""
    try:
        doc = extract_json(text)
    except Rejected:
        doc = None
    if isinstance(doc, list) and len(doc) == 1:
        doc = doc[0]
    if isinstance(doc, Mapping):
        for key in CHOICE_KEYS:
            if key in doc:
                index = as_index(doc[key])
                break
        if isinstance(doc.get("reason"), str):
            reason = doc["reason"]
    elif doc is not None:
        index = as_index(doc)
    if index is None:
        found = CHOICE_IN_TEXT.search(text) or LEADING_NUMBER.match(text)
        if found is not None:
            index = int(found.group(1))
        cut = REASON_IN_TEXT.search(text)
        if cut is not None and not reason:
            reason = cut.group(1)
    if index is None:
        preview = text.strip()[:60].replace("\n", " ")
        raise Rejected("parse", f"no choice in the reply (starts {preview!r})")
    if not 0 <= index < count:
        raise Rejected("choice-range", f"choice {index} is not on the menu (0-{count - 1})")
    return index, reason.strip()[:200]


def menu_offspring(menu: Menu, choice: int, meta: Mapping[str, Any], operator: str) -> Offspring:
    """The child a pick makes: the chosen option, its event's ``llm`` record saying which edit
    it was, the coin's pick and the menu's best beside it."""
    option = menu.options[choice]
    record = {**meta, "choice": choice, "options": len(menu.options),
              "random_choice": menu.random_choice, "edit": option.operator, "line": option.line}
    return Offspring(option.plan, parents=(menu.parent.id,), operator=operator,
                     meta={"llm": record})


class MenuPicks:
    """How the picks of a run compare, call by call, with the coin's pick and the menu's best.

    Counted from the pre-scores, so it costs no evaluation and needs no second run:
    ``improved`` (the pick ranks above its parent), ``random_improved`` (the coin's
    would have), ``best_improved`` (some option would have), ``beat_random`` /
    ``tied_random`` / ``lost_to_random``, and ``picked_best``.
    """

    FIELDS = ("picks", "improved", "random_improved", "best_improved", "picked_best",
              "beat_random", "tied_random", "lost_to_random")

    @staticmethod
    def outcome(menu: Menu, choice: int, ranking: Ranking) -> dict[str, int]:
        key = [ranking.key(o.evaluation) for o in menu.options]
        parent = ranking.key(menu.parent.evaluation)
        mine, coin = key[choice], key[menu.random_choice]
        return {
            "picks": 1,
            "improved": int(mine < parent),
            "random_improved": int(coin < parent),
            "best_improved": int(min(key) < parent),
            "picked_best": int(mine == min(key)),
            "beat_random": int(mine < coin),
            "tied_random": int(mine == coin),
            "lost_to_random": int(mine > coin),
        }


class RandomPick:
    """The baseline proposer: the very menus the LLM operator would draft (same parents, same
    stream), picked by the coin the operator records, with no call at all. With ``greedy``
    it takes the menu's best pre-score instead: the engine alone, for the other yardstick.
    ``max_picks`` plays ``max_calls``'s part, so a baseline run makes as many menu children."""

    def __init__(self, *, size: int = defaults.LLM_MENU_SIZE, max_picks: int | None = None,
                 greedy: bool = False) -> None:
        self.size = size
        self.max_picks = max_picks
        self.greedy = greedy
        self.name = "menu-greedy" if greedy else "menu-random"
        self.made = 0
        self.counts: dict[str, int] = dict.fromkeys(MenuPicks.FIELDS, 0)

    def checkpoint_state(self) -> dict[str, Any]:
        return {"made": self.made, "counts": dict(self.counts)}

    def restore_checkpoint(self, state: dict[str, Any]) -> None:
        self.made = int(state["made"])
        self.counts = {k: int(v) for k, v in state["counts"].items()}

    def usage_summary(self) -> dict[str, Any]:
        return {"mode": self.name, "picks_made": self.made, "menu": dict(self.counts)}

    def propose(self, problem: Problem, parents: Sequence[Candidate], indices: Sequence[int],
                generation: int, seed: int, context: ProposalContext) -> list[Offspring]:
        out: list[Offspring] = []
        for index in indices:
            if not parents or (self.max_picks is not None and self.made >= self.max_picks):
                out.append(Offspring(None))
                continue
            self.made += 1
            rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(generation, index)))
            menu = draft_menu(problem, pick_parent(parents, rng), context, rng, self.size)
            if menu is None:
                out.append(Offspring(None))
                continue
            choice = menu.best_choice(context.ranking) if self.greedy else menu.random_choice
            for key, value in MenuPicks.outcome(menu, choice, context.ranking).items():
                self.counts[key] += value
            out.append(menu_offspring(menu, choice, {"mode": self.name, "accepted": True},
                                      self.name))
        return out
