"""The bulk loader of ``__consumer_offsets`` ends in exactly the state of a full replay.

The reference is the general path: every record of every non-control batch decoded with
``records.decode_record`` and handed to ``GroupCoordinator.replay`` in log order (undecodable
and unknown records skipped). The logs mix every OffsetCommitValue version (0-4) under key
versions 0 and 1, offset tombstones, GroupMetadataValue of every version (0-4) with members,
group tombstones, superseded commits, unknown record types, records with null keys, commits
carrying record headers, malformed commit values (including one that supersedes a good commit
of the same key), every compression codec and control batches. The comparison covers the
group order, every group field, every member field, the offsets in dict order, the events the
load emits, the next timer deadline and the number of records loaded.
"""

from __future__ import annotations

import asyncio
import random
from pathlib import Path
from typing import Any

import pytest

from groupcoord.broker.state import Broker
from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.events import GroupEvent
from groupcoord.coordinator.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
    encode_key,
    encode_value,
    partition_for,
)
from groupcoord.formats.batch import (
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    COMPRESSION_GZIP,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    COMPRESSION_SNAPPY,
    COMPRESSION_ZSTD,
    build_batch,
    decode_record_tuples,
    parse_header,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.runtime.group_runtime import OFFSETS_TOPIC, GroupRuntime
from groupcoord.runtime.loader import OffsetsLoader

T0 = 1_700_000_000_000
Entry = tuple[bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]

GROUPS = ["g-a", "g-b", "g-c", "grüppe-d", "", "g-f"]
TOPICS = ["orders", "päyments"]


class _NoWrites:
    def append(self, partition: int, records: object, done: object) -> None:
        raise AssertionError("loading writes nothing")


def commit_entry(rng: random.Random, group: str, *, ts: int) -> Entry:
    key = encode_key(OffsetCommitKey(group=group, topic=rng.choice(TOPICS), partition=rng.randrange(3)))
    if rng.random() < 0.3:
        key = b"\x00\x00" + key[2:]  # key version 0: same layout
    version = rng.choice([0, 1, 1, 2, 3, 3, 3, 3, 4])
    metadata = rng.choice(["", "", "", "ckpt-7", "ünïcode"])
    value = OffsetCommitValue(
        offset=rng.randrange(-1, 10**12),
        leader_epoch=rng.choice([None, 0, 5]) if version >= 3 else None,
        metadata=metadata,
        commit_timestamp=ts,
        expire_timestamp=rng.choice([None, ts + 60_000]) if version == 1 else None,
    )
    encoded = encode_value(value, version)
    headers: tuple[tuple[str, bytes | None], ...] = ()
    if rng.random() < 0.03:
        headers = (("trace", b"x"),)
    return key, encoded, headers


def group_entry(rng: random.Random, group: str, *, ts: int) -> Entry:
    version = rng.randrange(5)
    members = []
    for i in range(rng.randrange(4)):
        session = rng.choice([10_000, 45_000])
        members.append(
            MemberMetadataRecord(
                member_id=f"{group}-m{i}-{rng.randrange(100)}",
                group_instance_id=rng.choice([None, f"inst-{i}"]) if version >= 3 else None,
                client_id=f"client-{i}",
                client_host="/127.0.0.1",
                rebalance_timeout=session if version == 0 else rng.choice([session, 60_000]),
                session_timeout=session,
                subscription=rng.choice([b"", b"\x00\x01\x00\x00\x00\x01\x00\x06orders\xff\xff\xff\xff"]),
                assignment=bytes(rng.randrange(256) for _ in range(rng.randrange(6))),
            )
        )
    value = GroupMetadataValue(
        protocol_type=rng.choice(["consumer", "connect", ""]),
        generation=rng.randrange(1, 20),
        protocol=rng.choice(["range", None]),
        leader=members[0].member_id if members and rng.random() < 0.8 else None,
        current_state_timestamp=rng.choice([None, ts]) if version >= 2 else None,
        members=tuple(members),
    )
    return encode_key(GroupMetadataKey(group=group)), encode_value(value, version), ()


def random_entry(rng: random.Random, groups: list[str], ts: int) -> Entry:
    group = rng.choice(groups)
    r = rng.random()
    if r < 0.62:
        return commit_entry(rng, group, ts=ts)
    if r < 0.72:  # offset tombstone
        key = encode_key(OffsetCommitKey(group=group, topic=rng.choice(TOPICS), partition=rng.randrange(3)))
        return key, None, ()
    if r < 0.82:
        return group_entry(rng, group, ts=ts)
    if r < 0.88:  # group tombstone
        return encode_key(GroupMetadataKey(group=group)), None, ()
    if r < 0.91:  # a record type a classic coordinator does not know (KIP-848 key version 5)
        return b"\x00\x05" + bytes(rng.randrange(256) for _ in range(6)), b"\x00\x00\x01", ()
    if r < 0.95:  # a malformed commit: truncated value, or a bad key
        ckey, value, _h = commit_entry(rng, group, ts=ts)
        assert ckey is not None and value is not None
        if rng.random() < 0.5:
            return ckey, value[: rng.randrange(len(value))], ()
        if rng.random() < 0.5:
            return ckey, value + b"\x00", ()  # trailing bytes
        return ckey[:-1], value, ()
    if r < 0.97:  # a record with a null key
        return None, b"ignored", ()
    return b"\x00\x01\x00", b"\x00\x03", ()  # key too short to be a commit key


def random_log(seed: int, *, groups: list[str] | None = None, n: int = 300) -> list[tuple[bytes, bool]]:
    """Batches (bytes, is_control) of a random ``__consumer_offsets`` partition."""
    rng = random.Random(seed)
    groups = groups if groups is not None else GROUPS
    out: list[tuple[bytes, bool]] = []
    offset = 0
    ts = T0
    while n > 0:
        if rng.random() < 0.05:
            control = build_batch(
                [(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00", ())],
                base_offset=offset,
                timestamp_ms=ts,
                attributes=ATTR_CONTROL | ATTR_TRANSACTIONAL,
            )
            out.append((control, True))
            offset += 1
            continue
        size = rng.choice([1, 1, 2, 5, 20, 90])
        entries = [random_entry(rng, groups, ts + i) for i in range(size)]
        codec = rng.choice(
            [COMPRESSION_NONE] * 4 + [COMPRESSION_GZIP, COMPRESSION_SNAPPY, COMPRESSION_LZ4, COMPRESSION_ZSTD]
        )
        out.append((build_batch(entries, base_offset=offset, timestamp_ms=ts, compression=codec), False))
        offset += size
        ts += size
        n -= size
    return out


def snapshot(c: GroupCoordinator) -> list[Any]:
    out: list[Any] = []
    for g in c.groups():
        out.append(
            (
                g.group_id,
                g.state,
                g.previous_state,
                g.state_timestamp,
                g.generation,
                g.protocol_type,
                g.protocol_name,
                g.leader_id,
                [
                    (
                        m.member_id,
                        m.group_instance_id,
                        m.client_id,
                        m.client_host,
                        m.rebalance_timeout_ms,
                        m.session_timeout_ms,
                        m.protocol_type,
                        m.protocols,
                        m.assignment,
                        m.is_new,
                    )
                    for m in g.members.values()
                ],
                dict(g.pending_members),
                sorted(g.pending_sync),
                list(g.static_members.items()),
                dict(g.protocol_counts),
                g.subscribed_topics,
                list(g.offsets.items()),  # dict order included
            )
        )
    out.append(("next deadline", c.next_deadline()))
    return out


def coordinator(clock: ManualClock, partitions: int, events: list[GroupEvent]) -> GroupCoordinator:
    return GroupCoordinator(
        GroupConfig(offsets_topic_num_partitions=partitions),
        clock,
        record_sink=_NoWrites(),
        event_sink=events.append,
        owned_partitions=(),
    )


def full_replay(c: GroupCoordinator, batches: list[tuple[bytes, bool]]) -> int:
    """The general path, record by record; the number of records replayed."""
    count = 0
    for batch, is_control in batches:
        if is_control:
            continue
        for _offset, _ts, key, value, _headers, _attrs in decode_record_tuples(batch)[1]:
            if key is None:
                continue
            try:
                record = decode_record(key, value)
            except ValueError:
                continue
            if record is None:
                continue
            c.replay(record)
            count += 1
    return count


def bulk_load(c: GroupCoordinator, batches: list[tuple[bytes, bool]], partition: int = 0) -> int:
    loader = OffsetsLoader(c, OFFSETS_TOPIC, partition)
    for batch, _is_control in batches:
        loader.feed(parse_header(batch), batch)
    return loader.finish()


@pytest.mark.parametrize("seed", range(40))
def test_bulk_load_of_a_random_partition_equals_a_full_replay(seed: int) -> None:
    batches = random_log(seed)
    clock = ManualClock(T0 + 10_000)
    ev_fast: list[GroupEvent] = []
    ev_ref: list[GroupEvent] = []
    fast = coordinator(clock, 1, ev_fast)
    ref = coordinator(clock, 1, ev_ref)
    fast.begin_loading(0)
    ref.begin_loading(0)
    n_fast = bulk_load(fast, batches)
    n_ref = full_replay(ref, batches)
    fast.complete_loading(0)
    ref.complete_loading(0)

    assert snapshot(fast) == snapshot(ref)
    assert ev_fast == ev_ref
    # superseded commits count as loaded records; undecodable ones never do
    assert n_fast >= n_ref


def _commit(group: str, partition: int, offset: int, *, version: int = 3, metadata: str = "") -> Entry:
    key = encode_key(OffsetCommitKey(group=group, topic="orders", partition=partition))
    value = OffsetCommitValue(
        offset=offset,
        leader_epoch=None,
        metadata=metadata,
        commit_timestamp=T0 + offset,
        expire_timestamp=T0 + 99 if version == 1 else None,
    )
    return key, encode_value(value, version), ()


def test_a_malformed_commit_does_not_erase_the_earlier_commit_of_its_key() -> None:
    good = _commit("g", 0, 5)
    later = _commit("g", 0, 6)
    assert later[1] is not None
    batches = [
        (build_batch([good, _commit("g", 1, 1), (later[0], later[1][:-3], ())], timestamp_ms=T0), False),
    ]
    clock = ManualClock(T0)
    c = coordinator(clock, 1, [])
    c.begin_loading(0)
    loaded = bulk_load(c, batches)
    c.complete_loading(0)

    group = c.group("g")
    assert group is not None
    assert [(tp, o.offset, o.commit_timestamp) for tp, o in group.offsets.items()] == [
        (("orders", 0), 5, T0 + 5),
        (("orders", 1), 1, T0 + 1),
    ]
    assert loaded == 2


def test_superseded_commits_are_counted_and_the_survivor_keeps_the_first_place() -> None:
    batches = [
        (build_batch([_commit("g", 0, 1), _commit("g", 1, 2), _commit("g", 0, 3)], timestamp_ms=T0), False),
        (
            build_batch([_commit("g", 2, 4, version=1, metadata="m"), _commit("g", 1, 5)], timestamp_ms=T0),
            False,
        ),
    ]
    c = coordinator(ManualClock(T0), 1, [])
    c.begin_loading(0)
    assert bulk_load(c, batches) == 5
    group = c.group("g")
    assert group is not None
    assert [(tp[1], o.offset, o.metadata, o.expire_timestamp) for tp, o in group.offsets.items()] == [
        (0, 3, "", None),
        (1, 5, "", None),
        (2, 4, "m", T0 + 99),
    ]


def test_broker_start_loads_every_partition_into_the_state_of_a_full_replay(tmp_path: Path) -> None:
    """Real segment files, three partitions, records routed by group as the broker writes them."""
    nparts = 3
    groups = [f"group-{i}" for i in range(12)]
    by_partition: dict[int, list[str]] = {}
    for g in groups:
        by_partition.setdefault(partition_for(g, nparts), []).append(g)
    logs = {p: random_log(500 + p, groups=gs, n=400) for p, gs in by_partition.items()}
    clock = ManualClock(T0 + 10_000)
    config = BrokerConfig.load(None, [f"offsets.topic.num.partitions={nparts}"])

    async def load() -> GroupCoordinator:
        broker = Broker.open(config, tmp_path, clock)
        runtime = GroupRuntime(broker)
        runtime.ensure_topics()
        for p, batches in logs.items():
            plog = broker.logs.partition(OFFSETS_TOPIC, p)
            for batch, _control in batches:
                plog.append(batch)
        runtime.start()
        await asyncio.wait_for(runtime.loaded.wait(), 30)
        await runtime.close()
        await broker.close()
        return runtime.coordinator

    loaded = asyncio.run(load())

    ref = coordinator(clock, nparts, [])
    for p in range(nparts):
        ref.begin_loading(p)
    for p in range(nparts):
        full_replay(ref, logs.get(p, []))
        ref.complete_loading(p)
    assert [g.group_id for g in loaded.groups()] == [g.group_id for g in ref.groups()]
    assert snapshot(loaded) == snapshot(ref)
    assert len(loaded.groups()) > 0
