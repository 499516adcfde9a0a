"""Small helpers for writing SVG by string: escaping, number formatting and axis ticks.

The report is one file with no dependencies, so its charts are SVG written here
rather than drawn by a library in the browser; these helpers keep that code short.
"""

from __future__ import annotations

import math
from html import escape


def esc(value: object) -> str:
    """Text or attribute value, escaped for HTML and SVG alike."""
    return escape(str(value), quote=True)


def num(value: float) -> str:
    """A number for people: no trailing ``.0``, at most four significant decimals."""
    if math.isinf(value):
        return "∞"
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def coord(value: float) -> str:
    """A coordinate for SVG attributes: short but exact enough for the eye."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def nice_ticks(low: float, high: float, count: int = 6) -> list[float]:
    """Round tick values covering ``[low, high]``: steps of 1, 2 or 5 times a power of ten."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return [0.0]
    if high <= low:
        high = low + 1.0
    raw = (high - low) / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks = []
    value = first
    while value <= high + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    if ticks[-1] < high:
        ticks.append(round(value, 10))
    return ticks


def padded_range(values: list[float]) -> tuple[float, float]:
    """A y-range for ``values`` that never collapses: a flat series gets room around it."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return 0.0, 1.0
    low, high = min(finite), max(finite)
    if high == low:
        pad = abs(low) * 0.1 or 1.0
        return low - pad, high + pad
    pad = (high - low) * 0.05
    return low - pad, high + pad


def header_html(title: str, subtitle: str, cards: list[tuple[str, str, str]], tail: str) -> str:
    """A report's header: its title, a subtitle when there is one, a row of cards
    ``(label, value, css class)`` and ``tail`` (trusted HTML) below them. Both reports use it."""
    return (
        f"<header><h1>{esc(title)}</h1>"
        + (f'<p class="objective">{esc(subtitle)}</p>' if subtitle else "")
        + '<div class="cards">'
        + "".join(f'<div class="card"><div class="k">{esc(k)}</div><div class="v {c}">{esc(v)}</div></div>'
                  for k, v, c in cards)
        + f"</div>{tail}</header>"
    )

