"""The group runtime's write tick: the partition logs it keeps, and its split of a tick's writes.

The runtime looks a ``__consumer_offsets`` (or ``__group_events``) partition's log up at its
first write and keeps it; these check that a deleted partition is never written through the kept
log (its writes fail UNKNOWN_TOPIC_OR_PARTITION, its events are dropped) and that a recreated one
is written at its new log, and that a tick whose writes together pass ``max.message.bytes``
still writes one batch per write, a write too large alone failing alone with MESSAGE_TOO_LARGE.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from groupcoord.broker.state import Broker
from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.constants import GROUP_EVENTS_TOPIC
from groupcoord.coordinator.events import EventReason, GroupEvent
from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import decode_records
from groupcoord.runtime.group_runtime import OFFSETS_TOPIC, GroupRuntime
from groupcoord.storage.log import PartitionLog

OFFSETS_CONFIGS = {"cleanup.policy": "compact", "compression.type": "producer"}


class Raw:
    """A record that writes its own key and value bytes (the runtime's SelfEncodingRecord)."""

    def __init__(self, key: bytes, value: bytes) -> None:
        self.key, self.value = key, value

    def encode(self) -> tuple[bytes, bytes | None]:
        return self.key, self.value


def run(tmp_path: Path, body: Callable[[Broker, GroupRuntime], Awaitable[None]]) -> None:
    async def main() -> None:
        config = BrokerConfig.load(None, ["offsets.topic.num.partitions=1"])
        broker = Broker.open(config, tmp_path, ManualClock())
        groups = GroupRuntime(broker)
        groups.start()
        try:
            await asyncio.wait_for(groups.loaded.wait(), 30)
            await body(broker, groups)
        finally:
            await groups.close()
            await broker.close()

    asyncio.run(main())


async def write(groups: GroupRuntime, *records: list[Raw]) -> list[ErrorCode]:
    """Queue one write per list of records in the same tick; their completions' codes."""
    codes: list[ErrorCode | None] = [None] * len(records)
    for i, recs in enumerate(records):
        groups.append(0, recs, lambda code, i=i: codes.__setitem__(i, code))
    for _ in range(3000):
        if all(c is not None for c in codes):
            break
        await asyncio.sleep(0.01)
    assert all(c is not None for c in codes)
    return [c for c in codes if c is not None]


def batches(plog: PartitionLog) -> list[list[bytes | None]]:
    return [[r.key for r in decode_records(data)] for _h, data in plog.iter_batches_from(0)]


def event(group: str) -> GroupEvent:
    return GroupEvent(
        time_ms=1,
        group_id=group,
        generation=0,
        type="state_change",
        from_state="Empty",
        to_state="PreparingRebalance",
        reason=EventReason.NEW_MEMBER_JOINED,
        member_id=None,
        group_instance_id=None,
        client_id=None,
        client_host=None,
        client_reason=None,
        protocol_type="consumer",
        protocol_name=None,
        member_count=0,
    )


async def published(broker: Broker) -> list[bytes | None]:
    for _ in range(3000):
        await asyncio.sleep(0)  # the events are published at the end of the loop tick
        try:
            plog = broker.logs.partition(GROUP_EVENTS_TOPIC, 0)
        except KeyError:
            return []
        keys = [k for b in batches(plog) for k in b]
        if keys:
            return keys
    return []


def test_a_deleted_partition_fails_its_writes_and_a_recreated_one_is_written_at_its_new_log(
    tmp_path: Path,
) -> None:
    async def body(broker: Broker, groups: GroupRuntime) -> None:
        assert await write(groups, [Raw(b"before", b"1")]) == [ErrorCode.NONE]
        groups._on_event(event("g-before"))  # the coordinator's event sink
        assert await published(broker) == [b"g-before"]
        old_offsets = broker.logs.partition(OFFSETS_TOPIC, 0)
        old_events = broker.logs.partition(GROUP_EVENTS_TOPIC, 0)
        assert batches(old_offsets) == [[b"before"]]

        broker.logs.delete_topic(OFFSETS_TOPIC)
        broker.logs.delete_topic(GROUP_EVENTS_TOPIC)
        assert await write(groups, [Raw(b"deleted", b"2")]) == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
        groups._on_event(event("g-deleted"))  # dropped: no partition to publish it to
        assert await published(broker) == []
        assert old_offsets.closed and old_events.closed

        broker.logs.create_topic(OFFSETS_TOPIC, 1, OFFSETS_CONFIGS, internal=True)
        broker.logs.create_topic(GROUP_EVENTS_TOPIC, 1, {"cleanup.policy": "delete"}, internal=True)
        assert await write(groups, [Raw(b"after", b"3")]) == [ErrorCode.NONE]
        assert batches(broker.logs.partition(OFFSETS_TOPIC, 0)) == [[b"after"]]
        groups._on_event(event("g-after"))
        assert await published(broker) == [b"g-after"]

    run(tmp_path, body)


def test_a_tick_past_max_message_bytes_writes_one_batch_per_write(tmp_path: Path) -> None:
    async def body(broker: Broker, groups: GroupRuntime) -> None:
        broker.logs.alter_topic_configs(OFFSETS_TOPIC, {**OFFSETS_CONFIGS, "max.message.bytes": "400"})
        plog = broker.logs.partition(OFFSETS_TOPIC, 0)
        # together under the limit: one batch holding both writes' records, in order
        codes = await write(groups, [Raw(b"a1", b"x" * 50), Raw(b"a2", b"x" * 50)], [Raw(b"b1", b"x" * 50)])
        assert codes == [ErrorCode.NONE, ErrorCode.NONE]
        assert batches(plog) == [[b"a1", b"a2", b"b1"]]
        # together over it: a batch per write; the one too large alone fails alone
        codes = await write(
            groups, [Raw(b"c1", b"x" * 200)], [Raw(b"d1", b"x" * 500)], [Raw(b"e1", b"x" * 200)]
        )
        assert codes == [ErrorCode.NONE, ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.NONE]
        assert batches(plog) == [[b"a1", b"a2", b"b1"], [b"c1"], [b"e1"]]
        assert plog.log_end_offset == 5

    run(tmp_path, body)
