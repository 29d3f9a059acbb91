"""KeyedTimer: one timer per key, replaced on reschedule, stale firings ignored."""

from __future__ import annotations

import gc
import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord import timer as timer_mod
from groupcoord.timer import KeyedTimer


def drain(timer: KeyedTimer[str, str], now: int) -> list[tuple[str, str]]:
    return list(timer.expire(now))


def test_timer_fires_at_its_deadline_not_before() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("hb:m1", 100, "expire m1")
    assert drain(t, 99) == []
    assert drain(t, 100) == [("hb:m1", "expire m1")]
    assert len(t) == 0
    assert drain(t, 1000) == []


def test_reschedule_replaces_the_previous_timer_of_the_key() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("hb:m1", 100, "first")
    t.schedule("hb:m1", 300, "second")
    assert len(t) == 1
    assert t.deadline("hb:m1") == 300
    assert t.payload("hb:m1") == "second"
    # The old deadline passes: its heap entry is stale and must not fire.
    assert drain(t, 200) == []
    assert drain(t, 300) == [("hb:m1", "second")]


def test_reschedule_to_an_earlier_deadline_fires_once_at_the_earlier_time() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("k", 500, "late")
    t.schedule("k", 50, "early")
    assert drain(t, 60) == [("k", "early")]
    assert drain(t, 1000) == []


def test_cancel_disarms_the_key_and_reports_whether_it_was_armed() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("join:g", 100, "complete join")
    assert "join:g" in t
    assert t.cancel("join:g") is True
    assert "join:g" not in t
    assert t.cancel("join:g") is False
    assert t.deadline("join:g") is None
    assert t.payload("join:g") is None
    assert drain(t, 1000) == []
    assert t.next_deadline() is None


def test_cancel_then_schedule_again_fires_only_the_new_timer() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("k", 100, "old")
    t.cancel("k")
    t.schedule("k", 200, "new")
    assert drain(t, 150) == []
    assert drain(t, 250) == [("k", "new")]


def test_due_timers_fire_in_deadline_order_with_ties_in_scheduling_order() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("c", 30, "c")
    t.schedule("a", 10, "a")
    t.schedule("b2", 20, "b2")
    t.schedule("b1", 20, "b1")
    t.schedule("d", 40, "d")
    assert [k for k, _ in t.expire(35)] == ["a", "b2", "b1", "c"]
    assert t.next_deadline() == 40


def test_next_deadline_skips_stale_and_cancelled_entries() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("a", 10, "a")
    t.schedule("b", 20, "b")
    t.schedule("c", 30, "c")
    assert t.next_deadline() == 10
    t.schedule("a", 50, "a")  # the entry at 10 is now stale
    assert t.next_deadline() == 20
    t.cancel("b")
    assert t.next_deadline() == 30
    t.cancel("c")
    assert t.next_deadline() == 50
    t.cancel("a")
    assert t.next_deadline() is None


def test_key_fired_is_disarmed_before_it_is_yielded_so_it_can_be_rescheduled() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("hb", 100, "1")
    fired = []
    for key, payload in t.expire(100):
        assert key not in t
        fired.append(payload)
        t.schedule(key, 200, "2")  # completeAndScheduleNextHeartbeatExpiration
    assert fired == ["1"]
    assert t.deadline("hb") == 200
    assert drain(t, 200) == [("hb", "2")]


def test_timer_scheduled_during_expire_and_already_due_fires_in_the_same_pass() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("a", 10, "a")
    t.schedule("c", 30, "c")
    order = []
    for key, _ in t.expire(50):
        order.append(key)
        if key == "a":
            t.schedule("b", 20, "b")  # due now, later than "a"
    assert order == ["a", "b", "c"]


def test_timer_scheduled_during_expire_for_the_future_waits() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("a", 10, "a")
    got = []
    for key, _ in t.expire(10):
        got.append(key)
        t.schedule("later", 11, "later")
    assert got == ["a"]
    assert t.next_deadline() == 11


def test_cancel_during_expire_suppresses_a_due_timer() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("a", 10, "a")
    t.schedule("b", 20, "b")
    got = []
    for key, _ in t.expire(30):
        got.append(key)
        t.cancel("b")
    assert got == ["a"]
    assert len(t) == 0


def test_reschedule_of_another_due_key_during_expire_moves_it_out() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    t.schedule("a", 10, "a")
    t.schedule("b", 20, "b")
    got = []
    for key, _ in t.expire(30):
        got.append(key)
        if key == "a":
            t.schedule("b", 100, "b-later")
    assert got == ["a"]
    assert t.payload("b") == "b-later"


def test_compaction_during_expire_does_not_lose_a_timer_that_is_already_due() -> None:
    # 1000 due keys plus 3001 entries of a far-future key (3000 superseded): the heap holds
    # 4001 entries for 1001 live timers, just under the compaction trigger (more than four
    # entries per live timer). Once a few due keys have fired, the next schedule compacts
    # the heap mid-expire.
    t: KeyedTimer[str, str] = KeyedTimer()
    for i in range(1000):
        t.schedule(f"due{i:04d}", 5, "due")
    for _ in range(3001):
        t.schedule("far", 10_000, "far")
    fired = []
    for key, _ in t.expire(10):
        fired.append(key)
        if len(fired) == 10:
            t.schedule("late1", 8, "late")  # this push compacts the heap
        if len(fired) == 11:
            t.schedule("late2", 9, "late")  # scheduled after the compaction, due now
    assert len(fired) == 1002
    assert fired[-2:] == ["late1", "late2"]
    assert set(fired[:-2]) == {f"due{i:04d}" for i in range(1000)}
    assert len(t) == 1
    assert t.next_deadline() == 10_000


def test_heap_stays_bounded_under_constant_rescheduling() -> None:
    t: KeyedTimer[int, int] = KeyedTimer()
    largest = 0
    for i in range(100_000):
        key = i % 100
        t.schedule(key, i + 1000, i)  # every heartbeat pushes its member's expiry forward
        largest = max(largest, len(t._heap))
    assert len(t) == 100
    # Only live timers survive compaction; garbage never exceeds the compaction threshold.
    assert largest <= 1025
    assert {k: t.payload(k) for k in range(100)} == {k: 99_900 + k for k in range(100)}
    assert t.next_deadline() == 99_900 + 1000


def test_compaction_keeps_exactly_the_live_timers() -> None:
    t: KeyedTimer[int, int] = KeyedTimer()
    for i in range(5000):
        t.schedule(i % 10, i, i)
    t.cancel(3)
    fired = dict(t.expire(10**9))
    assert fired == {k: 4990 + k for k in range(10) if k != 3}
    assert len(t) == 0
    assert t.next_deadline() is None


def test_schedule_if_absent_keeps_an_armed_timer() -> None:
    t: KeyedTimer[str, str] = KeyedTimer()
    assert t.schedule_if_absent("k", 100, "first") is True
    assert t.schedule_if_absent("k", 50, "second") is False
    assert t.deadline("k") == 100
    assert drain(t, 100) == [("k", "first")]
    assert t.schedule_if_absent("k", 200, "third") is True


# --------------------------------------------------------------------------- model-based

ops = st.lists(
    st.one_of(
        st.tuples(st.just("schedule"), st.integers(0, 7), st.integers(0, 200)),
        st.tuples(st.just("cancel"), st.integers(0, 7), st.just(0)),
        st.tuples(st.just("expire"), st.just(0), st.integers(0, 200)),
    ),
    max_size=80,
)


@given(ops)
@settings(deadline=None, max_examples=300)
def test_timer_behaves_like_a_dict_of_deadlines(program: list[tuple[str, int, int]]) -> None:
    t: KeyedTimer[int, int] = KeyedTimer()
    model: dict[int, tuple[int, int, int]] = {}  # key -> (deadline, seq, payload)
    seq = 0
    for op, key, arg in program:
        if op == "schedule":
            seq += 1
            t.schedule(key, arg, seq)
            model[key] = (arg, seq, seq)
        elif op == "cancel":
            assert t.cancel(key) == (key in model)
            model.pop(key, None)
        else:
            due = sorted((d, s, k) for k, (d, s, _) in model.items() if d <= arg)
            assert list(t.expire(arg)) == [(k, model[k][2]) for _, _, k in due]
            for _, _, k in due:
                del model[k]
        assert len(t) == len(model)
        assert t.next_deadline() == (min(d for d, _, _ in model.values()) if model else None)


def test_sequence_numbers_that_run_out_are_renumbered_keeping_order_and_deadlines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(timer_mod, "_SEQ_MASK", 7)  # renumber after 7 schedules instead of 2**40
    t: KeyedTimer[str, int] = KeyedTimer()
    for i in range(40):
        t.schedule(f"k{i % 5}", 100 - i, i)  # later schedules get earlier deadlines
    t.schedule("tie-a", 50, -1)
    t.schedule("tie-b", 50, -2)
    assert len(t) == 7
    assert {f"k{j}": t.deadline(f"k{j}") for j in range(5)} == {f"k{j}": 100 - (35 + j) for j in range(5)}
    fired = list(t.expire(100))
    # earliest deadline first; equal deadlines in the order they were scheduled
    assert fired == [("tie-a", -1), ("tie-b", -2), ("k4", 39), ("k3", 38), ("k2", 37), ("k1", 36), ("k0", 35)]
    assert len(t) == 0 and t.next_deadline() is None


def _tracked_reachable_from(root: object) -> int:
    """How many objects the cyclic collector tracks among those reachable from ``root``.

    Counting only what the timer holds (not ``gc.get_objects()``) keeps other threads of the test
    process out of the figure."""
    seen: set[int] = set()
    stack = [root]
    tracked = 0
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (type, types.ModuleType, types.FunctionType)):
            continue  # the timer's class leads to its module and the whole process: not its data
        if gc.is_tracked(obj):
            tracked += 1
            stack.extend(gc.get_referents(obj))
    return tracked


def test_rescheduling_creates_no_object_for_the_cyclic_collector() -> None:
    t: KeyedTimer[tuple[str, str], None] = KeyedTimer()
    keys = [("heartbeat", f"member-{i}") for i in range(2000)]
    for k in keys:
        t.schedule(k, 30_000, None)
    gc.collect()
    # Count what the collector would have to walk at its next run (CPython untracks tuples of
    # atoms only when a collection examines them, so none may run in between).
    gc.disable()
    try:
        before = _tracked_reachable_from(t)
        for round_ in range(1, 4):  # three heartbeats of every member, each pushing its expiry out
            for k in keys:
                t.schedule(k, 30_000 + round_ * 10_000, None)
        assert _tracked_reachable_from(t) - before < 10
    finally:
        gc.enable()
    assert t.next_deadline() == 60_000 and len(t) == 2000
