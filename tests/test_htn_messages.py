"""A no-plan message stays a line a person reads: the path of the task where the deepest attempt
failed is shortened once it is long (a recursion hundreds of decompositions deep made messages
of tens of kilobytes: AssemblyHierarchical depth19)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from evolve.problems.htn.decomposition import NoPlan
from evolve.problems.htn.nodes import SHORT_PATH, short_path
from evolve.problems.htn.planner import Planner
from evolve.problems.htn.reader import domain_from_dict

segment = st.text(alphabet="abcm#()0123456789,", min_size=1, max_size=12)


@given(st.lists(segment, min_size=1, max_size=400))
def test_a_long_path_keeps_its_ends_and_says_how_much_is_left_out(parts: list[str]) -> None:
    path = "/".join(parts)
    shown = short_path(path)
    if len(parts) <= SHORT_PATH:
        assert shown == path
    else:
        assert shown == "/".join((*parts[:2], f"... {len(parts) - 5} more ...", *parts[-3:]))


def test_a_deep_recursion_that_fails_says_so_in_a_short_line() -> None:
    """``climb0`` decomposes 300 levels deep, a step on each rung, then the top needs a fact
    nothing makes."""
    height = 300
    operators = {f"step{i}": {"duration": 1, "effects": {"set": {f"at{i}": True}}} for i in range(height)}
    operators["top"] = {"duration": 1, "pre": [{"has": "key"}]}
    methods = {f"up{i}": {"task": f"climb{i}", "subtasks": [f"step{i}", f"climb{i + 1}"]}
               for i in range(height)}
    methods["last"] = {"task": f"climb{height}", "subtasks": ["top"]}
    domain, _ = domain_from_dict({"name": "ladder", "htn": {
        "state": {}, "goal": "climb0", "max_depth": 2 * height, "operators": operators,
        "methods": methods}})
    outcome = Planner(domain).plan(max_nodes=10_000)
    assert isinstance(outcome, NoPlan)
    text = str(outcome)
    shortened = f"climb0/up0#1/... {height - 4} more .../up297#1/up298#1/up299#1)"
    assert "{has: key}" in text and shortened in text, text
    assert len(text) < 300, text
