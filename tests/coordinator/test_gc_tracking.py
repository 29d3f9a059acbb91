"""Long-lived coordinator state stays out of the cyclic collector only while it cannot form a cycle."""

from __future__ import annotations

import gc
import sys
import weakref

import pytest
from coord_harness import GROUP, Harness

from groupcoord.errors import ErrorCode
from groupcoord.gcutil import track, untrack

pytestmark = pytest.mark.skipif(sys.implementation.name != "cpython", reason="CPython's collector")


class _Slots:
    __slots__ = ("__weakref__", "ref")

    def __init__(self) -> None:
        self.ref: object = None


def test_untrack_and_track_toggle_the_collector_flag() -> None:
    obj = _Slots()
    assert gc.is_tracked(obj)
    assert untrack(obj) is obj
    assert not gc.is_tracked(obj)
    untrack(obj)  # twice is harmless
    assert not gc.is_tracked(obj)
    assert track(obj) is obj
    assert gc.is_tracked(obj)
    track(obj)  # twice is harmless (CPython aborts on a double PyObject_GC_Track)
    assert gc.is_tracked(obj)


def test_track_leaves_objects_without_a_collector_header_alone() -> None:
    value = 12345678901234567890
    assert track(value) == value
    assert not gc.is_tracked(value)


def test_an_untracked_acyclic_object_is_freed_by_reference_counting() -> None:
    obj = untrack(_Slots())
    obj.ref = ("a", b"b", 1)
    dead = weakref.ref(obj)
    del obj
    assert dead() is None


def test_an_untracked_referrer_keeps_its_referents_alive_through_a_collection() -> None:
    holder = untrack(_Slots())
    inner = _Slots()
    inner.ref = inner  # a cycle reachable only through the untracked holder
    holder.ref = inner
    alive = weakref.ref(inner)
    del inner
    gc.collect()
    assert alive() is not None and holder.ref is alive()


def test_members_are_untracked_between_rebalances_and_tracked_while_a_reply_is_parked() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    group = h.c.group(GROUP)
    assert group is not None
    ma, mb = group.members[a], group.members[b]
    assert not gc.is_tracked(ma) and not gc.is_tracked(mb)
    # a rejoins: its JoinGroup is parked (a reply callback stored in the member) until b rejoins
    parked = h.join(a)
    assert not parked.done
    assert ma.awaiting_join is not None and gc.is_tracked(ma)
    assert not gc.is_tracked(mb)
    rejoined = h.join(b)
    assert parked.done and rejoined.done
    assert ma.awaiting_join is None and mb.awaiting_join is None
    assert not gc.is_tracked(ma) and not gc.is_tracked(mb)
    # the follower's SyncGroup parks until the leader's arrives
    gen2 = parked.generation_id
    follower = b if parked.leader == a else a
    leader = a if follower == b else b
    fs = h.sync(follower, gen2)
    assert not fs.done
    assert gc.is_tracked(group.members[follower])
    assert h.sync(leader, gen2, ((a, b"x"), (b, b"y"))).error is ErrorCode.NONE
    assert fs.done
    assert not gc.is_tracked(group.members[follower]) and not gc.is_tracked(group.members[leader])
    assert gen2 == gen + 1


def test_group_bookkeeping_and_committed_offsets_are_untracked() -> None:
    h = Harness()
    (a, _b), gen = h.stable_group(2)
    group = h.c.group(GROUP)
    assert group is not None
    assert h.commit({("t", 0): 42}, member_id=a, generation=gen) == {("t", 0): ErrorCode.NONE}
    # the durable commit is in the state from the shard's next call on (here, the query)
    assert h.c.group(GROUP) is group
    committed = group.offsets[("t", 0)]
    assert committed.offset == 42
    assert not gc.is_tracked(committed)
    assert not gc.is_tracked(group.pending_sync)
    assert not gc.is_tracked(group.protocol_counts)
    assert group.protocol_counts == {"range": 2, "roundrobin": 2}
