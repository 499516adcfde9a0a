"""The ReadyQueue and the RetryPolicy on their own: no journal, no dispatcher, no clock."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evolve.execute.options import ExecuteOptions
from evolve.execute.queue import Demand, ReadyQueue
from evolve.execute.retry import RetryPolicy
from evolve.model.plan import Task
from evolve.scheduling.base import EPS

ONE_SLOT: Demand = (1.0, 0.0)
WITH_ARM: Demand = (1.0, 1.0)


def always(tid: str) -> bool:
    return True


def test_ready_tasks_start_longest_remaining_path_first_then_in_plan_order() -> None:
    queue = ReadyQueue((3.0, 1.0))
    queue.push("short", tail=1.0, topo=0)
    queue.push("long", tail=9.0, topo=2)
    queue.push("tie", tail=1.0, topo=1)
    taken, over = queue.take(0, 10, always, lambda tid: ONE_SLOT)
    assert taken == ["long", "short", "tie"] and over is None
    assert queue.held == [3.0, 0.0]


def test_take_fills_free_slots_only_and_keeps_the_rest_queued() -> None:
    queue = ReadyQueue((2.0, 1.0))
    for i, tid in enumerate(("a", "b", "c")):
        queue.push(tid, tail=0.0, topo=i)
    taken, _ = queue.take(1, 10, always, lambda tid: ONE_SLOT)  # one call already running
    assert taken == ["a"]
    assert queue.is_queued("b") and queue.is_queued("c") and not queue.is_queued("a")


def test_a_task_whose_resource_is_held_waits_and_a_later_one_may_pass_it() -> None:
    queue = ReadyQueue((3.0, 1.0))
    demands = {"arm1": WITH_ARM, "arm2": WITH_ARM, "free": ONE_SLOT}
    for i, tid in enumerate(demands):
        queue.push(tid, tail=0.0, topo=i)
    taken, _ = queue.take(0, 10, always, demands.__getitem__)
    assert taken == ["arm1", "free"] and queue.is_queued("arm2")
    assert queue.take(0, 10, always, demands.__getitem__) == ([], None)  # the arm is still held
    queue.release("arm1")
    assert queue.held == [1.0, 0.0]
    assert queue.take(0, 10, always, demands.__getitem__) == (["arm2"], None)


def test_the_step_budget_stops_take_and_names_the_task_it_stopped() -> None:
    queue = ReadyQueue((5.0, 1.0))
    for i, tid in enumerate(("a", "b", "c")):
        queue.push(tid, tail=0.0, topo=i)
    taken, over = queue.take(0, 2, always, lambda tid: ONE_SLOT)
    assert taken == ["a", "b"] and over == "c" and queue.is_queued("c")


def test_a_task_no_longer_pending_is_dropped() -> None:
    queue = ReadyQueue((5.0, 1.0))
    queue.push("gone", tail=5.0, topo=0)
    queue.push("here", tail=1.0, topo=1)
    taken, _ = queue.take(0, 10, lambda tid: tid != "gone", lambda tid: ONE_SLOT)
    assert taken == ["here"] and not queue.is_queued("gone")


def test_timers_run_out_in_time_order_and_only_when_due() -> None:
    queue = ReadyQueue((1.0, 1.0))
    queue.delay("late", 5.0)
    queue.delay("early", 2.0)
    assert queue.is_waiting("late") and queue.next_timer() == 2.0
    assert queue.due(1.0) == []
    assert queue.due(2.0) == ["early"]
    assert not queue.is_waiting("early") and queue.is_waiting("late")
    assert queue.due(10.0) == ["late"] and queue.next_timer() is None


def test_clear_ready_keeps_the_timers() -> None:
    queue = ReadyQueue((1.0, 1.0))
    queue.push("a", tail=0.0, topo=0)
    queue.delay("b", 3.0)
    queue.clear_ready()
    assert not queue.is_queued("a") and queue.take(0, 5, always, lambda t: ONE_SLOT) == ([], None)
    assert queue.is_waiting("b")


def test_next_wake_is_a_timer_still_ahead() -> None:
    queue = ReadyQueue((1.0, 1.0))
    assert queue.next_wake(0.0, stopping=False) is None  # no timer: wait for the running calls
    queue.delay("t", 4.0)
    assert queue.next_wake(1.0, stopping=False) == 4.0


@pytest.mark.parametrize(
    ("now", "stopping"),
    [
        (4.0, True),  # a stopping run dispatches nothing: waking at the timer does nothing
        (4.0, False),  # the timer is due but its task could not start (its way is held)
        (6.0, False),  # ... or long overdue
    ],
)
def test_next_wake_never_wakes_for_a_timer_that_cannot_move_the_run(now: float, stopping: bool) -> None:
    """The hang of de52f31: a run waiting for a running call with a due retry timer woke at
    once, found nothing to do and waited again, forever, without the clock moving. Played here
    as the loop plays it: the due timer's task cannot start while the running call holds the
    only slot, so the wait must be for the call (``None``), not for the timer."""
    queue = ReadyQueue((1.0, 1.0))
    queue.push("running", tail=0.0, topo=0)
    assert queue.take(0, 10, always, lambda t: ONE_SLOT) == (["running"], None)
    queue.delay("retry", 4.0)
    if not stopping:
        for tid in queue.due(now):
            queue.push(tid, tail=0.0, topo=1)
        assert queue.take(1, 10, always, lambda t: ONE_SLOT) == ([], None)  # the slot is held
    assert queue.next_wake(now, stopping=stopping) is None


# -- the retry policy -----------------------------------------------------------------------


def test_backoff_doubles_and_is_capped() -> None:
    policy = RetryPolicy(retries=5, initial=1.0, cap=3.0, window=100.0)
    assert [policy.delay(n) for n in range(1, 6)] == [1.0, 2.0, 3.0, 3.0, 3.0]
    assert policy.attempts == 6


def test_retry_at_until_the_retries_run_out() -> None:
    policy = RetryPolicy(retries=2, initial=0.5, cap=30.0, window=300.0)
    assert policy.retry_at(failures=1, first=10.0, finished=10.0, retryable=True) == 10.5
    assert policy.retry_at(failures=2, first=10.0, finished=11.0, retryable=True) == 12.0
    assert policy.retry_at(failures=3, first=10.0, finished=13.0, retryable=True) is None
    assert policy.spent(failures=3, retryable=True)


def test_no_retry_outside_the_window_or_for_a_final_error() -> None:
    policy = RetryPolicy(retries=9, initial=4.0, cap=4.0, window=10.0)
    assert policy.retry_at(failures=2, first=0.0, finished=6.0, retryable=True) == 10.0  # at the edge
    assert policy.retry_at(failures=3, first=0.0, finished=6.5, retryable=True) is None
    assert policy.retry_at(failures=1, first=0.0, finished=0.0, retryable=False) is None
    assert not policy.spent(failures=1, retryable=False)


def test_no_retries_means_a_first_failure_is_final_and_not_called_spent() -> None:
    policy = RetryPolicy(retries=0, initial=1.0, cap=1.0, window=10.0)
    assert policy.retry_at(failures=1, first=0.0, finished=0.0, retryable=True) is None
    assert not policy.spent(failures=1, retryable=True)


def test_the_policy_of_a_task_reads_its_retries_and_the_run_options() -> None:
    options = ExecuteOptions(backoff=2.0, backoff_cap=7.0, retry_window=60.0)
    policy = RetryPolicy.of(Task(id="t", tool="x", retries=3), options)
    assert policy == RetryPolicy(retries=3, initial=2.0, cap=7.0, window=60.0)


def test_a_policy_with_negative_numbers_is_refused() -> None:
    with pytest.raises(ValueError, match="retry policy"):
        RetryPolicy(retries=-1, initial=1.0, cap=1.0, window=1.0)


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 4),
    st.lists(st.floats(0.5, 3.0), max_size=2),
    st.lists(
        st.tuples(st.floats(0.0, 5.0), st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=2, max_size=2))
    ),
    st.integers(0, 10),
)
def test_take_never_exceeds_a_capacity_and_release_gives_it_all_back(
    slots: int, resources: list[float], tasks: list[tuple[float, list[float]]], steps_left: int
) -> None:
    limits = (float(slots), *resources)
    queue = ReadyQueue(limits)
    demands = {}
    for i, (tail, need) in enumerate(tasks):
        demands[f"t{i}"] = (1.0, *need[: len(resources)])
        queue.push(f"t{i}", tail=tail, topo=i)
    taken, over = queue.take(0, steps_left, always, demands.__getitem__)
    assert len(taken) <= min(steps_left, slots) and len(set(taken)) == len(taken)
    assert all(h <= cap + EPS for h, cap in zip(queue.held, limits))
    assert over is None or len(taken) == steps_left
    assert {t for t in demands if queue.is_queued(t)} == set(demands) - set(taken)
    if not resources:  # nothing but slots: the longest remaining paths go first
        tails = sorted((tail for tail, _ in tasks), reverse=True)
        assert [tasks[int(t[1:])][0] for t in taken] == tails[: len(taken)]
    for tid in taken:
        queue.release(tid)
    assert all(abs(h) <= EPS for h in queue.held)
