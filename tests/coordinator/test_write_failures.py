"""A write that fails leaves memory as the log has it: nothing is dropped before it is durable.

Kafka 4.x's runtime replays a handler's records at once and, when their append fails, reverts
the shard's state to the last committed offset (``GroupCoordinator``: ``SnapshotRegistry
.revertToSnapshot`` on a failed write), so memory never holds what the log lacks, nor lacks
what the log holds. These tests reload the group from the writes that were durable and compare.
"""

from __future__ import annotations

from coord_harness import GROUP, Harness, ListSink

from groupcoord.clock import ManualClock
from groupcoord.errors import ErrorCode

NONE = ErrorCode.NONE


def _reload(h: Harness) -> object:
    """A fresh coordinator that loads the group's partition from the writes that were durable."""
    fresh = type(h.coordinator)(h.config, ManualClock(h.clock.now_ms()), record_sink=ListSink())
    p = fresh.partition_for(GROUP)
    fresh.unload_partition(p)
    fresh.begin_loading(p)
    for _, records in h.sink.appended:
        for rec in records:
            fresh.replay(rec)
    fresh.complete_loading(p)
    return fresh


def _expiring_harness() -> Harness:
    return Harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1_000)


def test_failed_expiry_of_a_simple_groups_last_offsets_keeps_the_group() -> None:
    """Offset expiry (Kafka's ``cleanupGroupMetadata``) removes an Empty group whose last
    offsets expire; when the tombstones cannot be written, the group and its offsets stay, as
    the log still has them (before: the group was gone from memory yet came back on reload)."""
    h = _expiring_harness()
    assert h.commit({("t", 0): 5}) == {("t", 0): NONE}
    h.sink.fail = ErrorCode.KAFKA_STORAGE_ERROR
    h.advance(60_000)

    assert h.state() == "Empty"
    assert h.fetch({"t": (0,)}) == {("t", 0): (5, None, "", NONE)}
    reloaded = _reload(h)
    group = reloaded.group(GROUP)  # type: ignore[attr-defined]
    assert group is not None and group.offsets[("t", 0)].offset == 5


def test_failed_expiry_of_a_consumer_groups_last_offsets_keeps_the_group_then_retries() -> None:
    """The same for a consumer group past generation 0 (its own tombstone is part of the write):
    the group stays Empty with its offset, and the next retention check removes it for good."""
    h = _expiring_harness()
    (a,), gen = h.stable_group(1)
    assert h.commit({("t", 0): 7}, member_id=a, generation=gen) == {("t", 0): NONE}
    h.leave((a, None))
    assert h.state() == "Empty"
    h.sink.fail = ErrorCode.NOT_ENOUGH_REPLICAS
    h.advance(61_000)  # a retention check ran at least 60 s after the group became Empty

    assert h.state() == "Empty"
    assert h.fetch({"t": (0,)}) == {("t", 0): (7, None, "", NONE)}
    group = _reload(h).group(GROUP)  # type: ignore[attr-defined]
    assert group is not None and group.offsets[("t", 0)].offset == 7

    h.sink.fail = None
    h.advance(1_000)
    assert h.state() == "Dead"
    assert h.fetch({"t": (0,)}) == {("t", 0): (-1, None, "", NONE)}
    assert _reload(h).group(GROUP) is None  # type: ignore[attr-defined]
