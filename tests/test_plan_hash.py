"""plan_hash joins each task's memoized text; it must equal the digest of the whole plan's
canonical JSON (its definition), and the memo must stay out of equality, pickles and checkpoints."""

from __future__ import annotations

import hashlib
import json
import pickle
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.model.plan import TASK_TEXT, Plan, Task, plan_hash, task_text
from evolve.run.state_codec import decode, encode

TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
VALUES: st.SearchStrategy[Any] = st.one_of(
    TEXT, st.integers(-5, 5), st.floats(allow_nan=False), st.booleans(), st.none(),
    st.lists(TEXT, max_size=3), st.dictionaries(TEXT, st.integers(0, 9), max_size=3))


@st.composite
def tasks(draw: st.DrawFn) -> Task:
    return Task(
        id=draw(TEXT), tool=draw(TEXT), deps=tuple(draw(st.lists(TEXT, max_size=3))),
        inputs=draw(st.dictionaries(TEXT, VALUES, max_size=3)),
        outputs=tuple(draw(st.lists(TEXT, max_size=3))),
        when=draw(st.none() | TEXT), idempotency_key=draw(st.none() | TEXT), name=draw(st.none() | TEXT),
        assumes=tuple(draw(st.lists(TEXT, max_size=2))), retries=draw(st.integers(0, 4)),
        timeout=draw(st.none() | st.floats(0.5, 9.0)))


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    body = tuple(draw(st.lists(tasks(), max_size=5)))
    priority = draw(st.none() | st.lists(TEXT, max_size=4).map(tuple))
    return Plan(tasks=body, priority=priority)


def whole_text_digest(plan: Plan) -> str:
    text = json.dumps(plan.to_dict(), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@settings(max_examples=300, deadline=None)
@given(plans())
def test_the_hash_is_the_digest_of_the_whole_plans_canonical_text(plan: Plan) -> None:
    assert plan_hash(plan) == whole_text_digest(plan)
    assert plan_hash(plan) == whole_text_digest(plan)  # again, from the memo


@settings(max_examples=100, deadline=None)
@given(plans(), plans())
def test_equal_hashes_for_equal_plans_only(a: Plan, b: Plan) -> None:
    assert (plan_hash(a) == plan_hash(b)) == (a.to_dict() == b.to_dict())


def test_the_memo_stays_out_of_equality_pickles_and_checkpoints() -> None:
    task = Task(id="t1", tool="fetch", inputs={"order": "$order_id"}, outputs=("order",))
    fresh = Task(id="t1", tool="fetch", inputs={"order": "$order_id"}, outputs=("order",))
    before = pickle.dumps(task)
    encoded_before = encode(task)
    assert task_text(task) == json.dumps(task.to_dict(), sort_keys=True, separators=(",", ":"))
    assert TASK_TEXT in task.__dict__
    assert task == fresh and hash(task) == hash(fresh)
    assert pickle.dumps(task) == before
    assert encode(task) == encoded_before
    assert TASK_TEXT not in pickle.loads(pickle.dumps(task)).__dict__
    assert TASK_TEXT not in decode(encode(task)).__dict__
