"""Loading ``__consumer_offsets`` at start gives the state a plain replay of every record gives.

The runtime's loader skips offset commits that a later commit of the same key overwrites (as
compaction would); this checks that shortcut against the coordinator replaying every record in
log order, on a log that mixes commits, offset tombstones, group records and a group tombstone.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from groupcoord.broker.state import Broker
from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_record,
)
from groupcoord.formats.batch import build_batch
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.runtime.group_runtime import OFFSETS_TOPIC, GroupRuntime

T0 = 1_700_000_000_000


def commit(group: str, partition: int, offset: int, ts: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        key=OffsetCommitKey(group=group, topic="orders", partition=partition),
        value=OffsetCommitValue(
            offset=offset,
            leader_epoch=None,
            metadata=f"m{offset}",
            commit_timestamp=ts,
            expire_timestamp=None,
        ),
    )


def offset_tombstone(group: str, partition: int) -> CoordinatorRecord:
    key = OffsetCommitKey(group=group, topic="orders", partition=partition)
    return CoordinatorRecord(key=key, value=None)


def empty_group(group: str, generation: int, ts: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        key=GroupMetadataKey(group=group),
        value=GroupMetadataValue(
            protocol_type="consumer",
            generation=generation,
            protocol=None,
            leader=None,
            current_state_timestamp=ts,
            members=(),
        ),
    )


LOG: list[list[CoordinatorRecord]] = [
    [empty_group("g1", 3, T0), commit("g1", 0, 5, T0 + 1), commit("g1", 1, 2, T0 + 2)],
    [commit("g1", 0, 7, T0 + 3), offset_tombstone("g1", 1)],
    [commit("g2", 0, 1, T0 + 4), commit("g3", 0, 11, T0 + 5)],
    # g2 is deleted, then used again as a simple group: only the commit after the tombstone counts
    [CoordinatorRecord(key=GroupMetadataKey(group="g2"), value=None), offset_tombstone("g2", 0)],
    [commit("g2", 0, 4, T0 + 6), commit("g1", 1, 3, T0 + 7), commit("g1", 0, 9, T0 + 8)],
    [offset_tombstone("g3", 0)],
]


GroupState = tuple[str, int, dict[tuple[str, int], tuple[int, str, int]]]


def state(coordinator: GroupCoordinator) -> dict[str, GroupState]:
    return {
        g.group_id: (
            g.state.value,
            g.generation,
            {tp: (o.offset, o.metadata, o.commit_timestamp) for tp, o in sorted(g.offsets.items())},
        )
        for g in coordinator.groups()
    }


def test_loading_skips_superseded_commits_yet_ends_in_the_state_of_a_full_replay(tmp_path: Path) -> None:
    clock = ManualClock(T0 + 10)
    config = BrokerConfig.load(None, ["offsets.topic.num.partitions=1"])

    async def load() -> GroupCoordinator:
        broker = Broker.open(config, tmp_path, clock)
        runtime = GroupRuntime(broker)
        runtime.ensure_topics()
        plog = broker.logs.partition(OFFSETS_TOPIC, 0)
        for batch in LOG:
            plog.append(build_batch([(*encode_record(r), ()) for r in batch], timestamp_ms=T0))
        runtime.start()
        await asyncio.wait_for(runtime.loaded.wait(), 10)
        await runtime.close()
        await broker.close()
        return runtime.coordinator

    loaded = asyncio.run(load())

    class Sink:
        def append(self, partition: int, records: object, done: object) -> None:
            raise AssertionError("replaying writes nothing")

    reference = GroupCoordinator(
        GroupConfig.from_broker(config), clock, record_sink=Sink(), owned_partitions=()
    )
    reference.begin_loading(0)
    for batch in LOG:
        for record in batch:
            reference.replay(record)
    reference.complete_loading(0)

    assert state(loaded) == state(reference)
    assert state(loaded) == {
        "g1": ("Empty", 3, {("orders", 0): (9, "m9", T0 + 8), ("orders", 1): (3, "m3", T0 + 7)}),
        "g2": ("Empty", 0, {("orders", 0): (4, "m4", T0 + 6)}),
        "g3": ("Empty", 0, {}),
    }
