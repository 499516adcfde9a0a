"""Which way to ask a model: write a patch, or pick from a menu.

``patch`` suits strong models; ``menu`` suits small ones, which do narrow
choices well and whole plan patches badly. ``auto`` starts in menu mode for a
model whose name gives its size and says it is small (``smollm2-135m``,
``qwen2.5-1.5b``), and otherwise starts with patches and measures: after
:data:`evolve.defaults.LLM_AUTO_PROBE` judged replies, it switches to the menu
for good if fewer than :data:`evolve.defaults.LLM_AUTO_MIN_ACCEPTED` of them
became children. The switch is decided between generations from counts that a
rerun replays from the cache, so it is as reproducible as everything else.
"""

from __future__ import annotations

import re
from typing import Literal

from evolve import defaults

Mode = Literal["patch", "menu", "auto"]
MODES: tuple[Mode, ...] = ("patch", "menu", "auto")
ResponseFormat = Literal["json_schema", "json_object", "json_object_schema", "none"]
RESPONSE_FORMATS: tuple[ResponseFormat, ...] = (
    "json_schema", "json_object", "json_object_schema", "none")
"""How JSON is asked for (here, not in :mod:`evolve.llm.operator`, so that the command line
names the choices without importing the HTTP client). ``json_schema``: OpenAI, vLLM, Ollama,
llama.cpp's own server; ``json_object``: plain JSON mode, the most widely supported;
``json_object_schema``: JSON mode with a ``schema`` key, as llama-cpp-python's server takes it;
``none``: no JSON mode at all."""

TokenParam = Literal["max_tokens", "max_completion_tokens"]
TOKEN_PARAMS: tuple[TokenParam, ...] = ("max_tokens", "max_completion_tokens")

SMALL_FAMILIES = ("smollm", "tinyllama", "tinystories")
"""Families whose every model is small, even when the name gives no size."""
SIZE = re.compile(r"(?<![a-wyz0-9.])(\d+(?:\.\d+)?)\s*([mb])(?![a-z])", re.IGNORECASE)


def model_params(name: str) -> float | None:
    """The parameter count a model's name states (``135m`` -> 1.35e8, ``1.5B`` -> 1.5e9), or
    ``None``. Of several sizes (``8x7b``), the largest is taken."""
    sizes = [float(number) * (1e6 if unit.lower() == "m" else 1e9)
             for number, unit in SIZE.findall(name.replace("_", "-"))]
    return max(sizes) if sizes else None


def known_small(name: str) -> bool:
    """Whether the name marks a model as small: a small family, or a stated size below
    :data:`evolve.defaults.LLM_SMALL_MODEL_PARAMS`."""
    lowered = name.lower()
    if any(family in lowered for family in SMALL_FAMILIES):
        return True
    params = model_params(lowered)
    return params is not None and params < defaults.LLM_SMALL_MODEL_PARAMS


def starting_mode(requested: Mode, model: str) -> Literal["patch", "menu"]:
    """The mode of a run's first calls."""
    if requested == "auto":
        return "menu" if known_small(model) else "patch"
    return requested


def measured_small(accepted: int, judged: int) -> bool:
    """Whether ``auto`` should give up on patches, given the patch replies judged so far."""
    return judged >= defaults.LLM_AUTO_PROBE and accepted < defaults.LLM_AUTO_MIN_ACCEPTED * judged
