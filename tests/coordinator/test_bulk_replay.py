"""``replay_offsets``: replaying a run of commits in bulk is replaying each commit record."""

from __future__ import annotations

from groupcoord.clock import ManualClock
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.group import CommittedOffset
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)
from groupcoord.coordinator.state import GroupState
from groupcoord.runtime.group_coordinator import GroupCoordinator

T0 = 1_700_000_000_000


class _NoWrites:
    def append(self, partition: int, records: object, done: object) -> None:
        raise AssertionError("loading writes nothing")


def _coordinator() -> GroupCoordinator:
    c = GroupCoordinator(
        GroupConfig(offsets_topic_num_partitions=1),
        ManualClock(T0),
        record_sink=_NoWrites(),
        owned_partitions=(),
    )
    c.begin_loading(0)
    return c


def _commit(group: str, partition: int, offset: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        key=OffsetCommitKey(group=group, topic="t", partition=partition),
        value=OffsetCommitValue(
            offset=offset, leader_epoch=None, metadata="", commit_timestamp=T0 + offset, expire_timestamp=None
        ),
    )


def _offset(offset: int) -> CommittedOffset:
    return CommittedOffset(
        offset=offset, leader_epoch=None, metadata="", commit_timestamp=T0 + offset, expire_timestamp=None
    )


def test_replay_offsets_creates_the_offsets_only_group_a_replayed_commit_creates() -> None:
    bulk, ref = _coordinator(), _coordinator()
    ref.replay(_commit("a", 0, 1))
    ref.replay(_commit("b", 0, 2))
    ref.replay(_commit("a", 1, 3))
    bulk.replay_offsets("a", [(("t", 0), _offset(1)), (("t", 1), _offset(3))])
    bulk.replay_offsets("b", [(("t", 0), _offset(2))])
    for c in (bulk, ref):
        c.complete_loading(0)

    assert [g.group_id for g in bulk.groups()] == [g.group_id for g in ref.groups()] == ["a", "b"]
    for gid in ("a", "b"):
        b, r = bulk.group(gid), ref.group(gid)
        assert b is not None and r is not None
        assert list(b.offsets.items()) == list(r.offsets.items())
        assert (b.state, b.state_timestamp, b.generation, b.protocol_type) == (
            GroupState.EMPTY,
            None,
            0,
            None,
        )
        assert (r.state, r.state_timestamp, r.generation, r.protocol_type) == (
            GroupState.EMPTY,
            None,
            0,
            None,
        )


def test_replay_offsets_into_a_group_loaded_from_its_record_keeps_that_group() -> None:
    c = _coordinator()
    c.replay(
        CoordinatorRecord(
            key=GroupMetadataKey(group="g"),
            value=GroupMetadataValue(
                protocol_type="consumer",
                generation=4,
                protocol=None,
                leader=None,
                current_state_timestamp=T0,
                members=(),
            ),
        )
    )
    group = c.group("g")
    assert group is not None
    c.replay_offsets("g", [(("t", 7), _offset(9))])
    c.complete_loading(0)
    loaded = c.group("g")
    assert loaded is group
    assert (loaded.generation, loaded.state_timestamp, dict(loaded.offsets)) == (
        4,
        T0,
        {("t", 7): _offset(9)},
    )
