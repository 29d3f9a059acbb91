"""Loading a ``__consumer_offsets`` partition ends in the state of replaying its records one by one.

The reference here is the plainest loader there is: every record of every batch decoded and
replayed in log order by the coordinator's own entry points, one at a time: a control batch's
marker with ``replay_end_transaction``, a transactional batch's records with
``replay_transactional`` (the batch's producer), a consumer group's record (KIP-848) with
``replay_consumer_record``, any other with ``replay``. Kafka 4.x loads a coordinator partition
exactly so (``CoordinatorLoaderImpl.load``: each record of each batch replayed in order, control
batches as end-transaction markers, transactional ones with their producer id).

The logs mix what a real ``__consumer_offsets`` holds: commits of every layout a broker writes
(v1 with metadata and an expire timestamp, v3 with metadata and a leader epoch, v3 without
either), the same keys committed again and again, offset tombstones, classic group records of
growing generations with members, group tombstones, consumer groups' epoch, member,
target-assignment, current-assignment and regular-expression records and their tombstones,
transactional offset commits of several producers with plain commits of the same keys between
them and their COMMIT or ABORT markers. The comparison covers every classic group and member
field, the offsets in dict order, the consumer groups, the pending transactional offsets, the
events and the next timer deadline.

The crash tests write the partition through the broker's own storage, copy the data directory
while the broker is open (an image of a process that died: no clean-shutdown marker), cut the
active segment inside its last batch (a torn write), and check that a broker started on the copy
recovers the log to the last whole batch and loads exactly the state the whole batches give.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest

from groupcoord.broker.state import Broker
from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.consumer import records as consumer_records
from groupcoord.coordinator.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupRecord,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
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
)
from groupcoord.formats.batch import (
    ATTR_TRANSACTIONAL,
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    build_batch,
    decode_record_tuples,
    parse_header,
)
from groupcoord.formats.consumer_protocol import Subscription, encode_subscription
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.runtime.group_runtime import OFFSETS_TOPIC, GroupRuntime
from groupcoord.runtime.loader import OffsetsLoader
from groupcoord.storage.control import ControlType, build_marker_batch, decode_marker

T0 = 1_700_000_000_000
Entry = tuple[bytes | None, bytes | None, tuple[()]]

CLASSIC = ["orders-app", "billing", "grüppe"]
CONSUMER = ["kip848-a", "kip848-b"]
TOPICS = ["orders", "payments", "päyments-eu"]
TOPIC_ID = uuid.UUID(int=7)
SUBSCRIPTION = encode_subscription(Subscription(topics=("orders",), version=1))


class _NoWrites:
    def append(self, partition: int, records: object, done: object) -> None:
        raise AssertionError("loading writes nothing")


def coordinator(clock: ManualClock, events: list[GroupEvent]) -> GroupCoordinator:
    return GroupCoordinator(
        GroupConfig(offsets_topic_num_partitions=1), clock, record_sink=_NoWrites(), event_sink=events.append
    )


# ---------------------------------------------------------------------------------- records
def commit(rng: random.Random, group: str, ts: int) -> Entry:
    key = OffsetCommitKey(group=group, topic=rng.choice(TOPICS), partition=rng.randrange(4))
    layout = rng.choice(["v3", "v3", "v3", "v3-epoch-metadata", "v1-expire"])
    value = OffsetCommitValue(
        offset=rng.randrange(0, 10**9),
        leader_epoch=rng.randrange(0, 40) if layout == "v3-epoch-metadata" else None,
        metadata=rng.choice(["", "ckpt-7", "ünïcode"]) if layout != "v3" else "",
        commit_timestamp=ts,
        expire_timestamp=ts + 86_400_000 if layout == "v1-expire" else None,
    )
    return encode_key(key), encode_value(value, 1 if layout == "v1-expire" else 3), ()


def group_record(rng: random.Random, group: str, generation: int, ts: int) -> Entry:
    members = tuple(
        MemberMetadataRecord(
            member_id=f"{group}-member-{i}",
            group_instance_id=rng.choice([None, f"instance-{i}"]),
            client_id=f"client-{i}",
            client_host="/127.0.0.1",
            rebalance_timeout=60_000,
            session_timeout=45_000,
            subscription=SUBSCRIPTION,
            assignment=bytes([i]),
        )
        for i in range(rng.randrange(1, 4))
    )
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=generation,
        protocol="range",
        leader=members[0].member_id,
        current_state_timestamp=ts,
        members=members,
    )
    return encode_key(GroupMetadataKey(group=group)), encode_value(value, 3), ()


def consumer_record(rng: random.Random, group: str, epoch: int, ts: int) -> Entry:
    member = f"{group}-m{rng.randrange(3)}"
    kind = rng.randrange(6)
    record: ConsumerGroupRecord
    if kind == 0:
        record = ConsumerGroupRecord(
            key=ConsumerGroupMetadataKey(group_id=group),
            value=ConsumerGroupMetadataValue(epoch=epoch, metadata_hash=rng.randrange(1, 10**6)),
        )
    elif kind == 1:
        record = ConsumerGroupRecord(
            key=ConsumerGroupMemberMetadataKey(group_id=group, member_id=member),
            value=ConsumerGroupMemberMetadataValue(
                instance_id=None,
                rack_id=None,
                client_id="rdkafka",
                client_host="/127.0.0.1",
                subscribed_topic_names=("orders",),
                subscribed_topic_regex=None,
                rebalance_timeout_ms=45_000,
                server_assignor="uniform",
            ),
        )
    elif kind == 2:
        record = ConsumerGroupRecord(
            key=ConsumerGroupTargetAssignmentMetadataKey(group_id=group),
            value=ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch),
        )
    elif kind == 3:
        record = ConsumerGroupRecord(
            key=ConsumerGroupCurrentMemberAssignmentKey(group_id=group, member_id=member),
            value=ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=epoch,
                previous_member_epoch=epoch - 1,
                state=0,
                assigned_partitions={TOPIC_ID: frozenset({rng.randrange(4)})},
                partitions_pending_revocation={},
            ),
        )
    elif kind == 4:
        record = ConsumerGroupRecord(
            key=ConsumerGroupRegularExpressionKey(group_id=group, regular_expression="ord.*"),
            value=ConsumerGroupRegularExpressionValue(topics=("orders",), version=epoch, timestamp=ts),
        )
    else:  # a tombstone of one of them
        record = ConsumerGroupRecord(
            key=rng.choice(
                [
                    ConsumerGroupCurrentMemberAssignmentKey(group_id=group, member_id=member),
                    ConsumerGroupMemberMetadataKey(group_id=group, member_id=member),
                    ConsumerGroupRegularExpressionKey(group_id=group, regular_expression="ord.*"),
                ]
            ),
            value=None,
        )
    key, value = consumer_records.encode_record(record)
    return key, value, ()


def random_partition(seed: int, n: int = 400) -> list[bytes]:
    """The batches of a random partition, in log order, each with its base offset."""
    rng = random.Random(seed)
    batches: list[bytes] = []
    offset = 0
    ts = T0
    generation = dict.fromkeys(CLASSIC, 0)
    epoch = dict.fromkeys(CONSUMER, 0)
    open_txn: dict[int, int] = {}  # producer id -> its epoch, while its transaction is open

    def add(batch: bytes, count: int) -> None:
        nonlocal offset
        batches.append(batch)
        offset += count

    while n > 0:
        r = rng.random()
        ts += rng.randrange(1, 50)
        if r < 0.12 and len(open_txn) < 3:  # a TxnOffsetCommit of a new or open transaction
            pid = rng.choice([1000, 1001, 1002])
            open_txn.setdefault(pid, rng.randrange(3))
            entries = [commit(rng, rng.choice(CLASSIC), ts) for _ in range(rng.randrange(1, 4))]
            add(
                build_batch(
                    entries,
                    base_offset=offset,
                    timestamp_ms=ts,
                    producer_id=pid,
                    producer_epoch=open_txn[pid],
                    base_sequence=0,
                    attributes=ATTR_TRANSACTIONAL,
                ),
                len(entries),
            )
            n -= len(entries)
            continue
        if r < 0.2 and open_txn:  # its COMMIT or ABORT marker
            pid = rng.choice(sorted(open_txn))
            marker = build_marker_batch(
                producer_id=pid,
                producer_epoch=open_txn.pop(pid),
                commit=rng.random() < 0.6,
                coordinator_epoch=0,
                timestamp_ms=ts,
            )
            add(_rebase(marker, offset), 1)
            continue
        entries = []
        for _ in range(rng.choice([1, 1, 3, 10, 40, 100])):
            kind = rng.random()
            group = rng.choice(CLASSIC)
            if kind < 0.7:
                entries.append(commit(rng, group, ts))
            elif kind < 0.77:  # offset tombstone
                key = OffsetCommitKey(group=group, topic=rng.choice(TOPICS), partition=rng.randrange(4))
                entries.append((encode_key(key), None, ()))
            elif kind < 0.84:
                generation[group] += 1
                entries.append(group_record(rng, group, generation[group], ts))
            elif kind < 0.87:  # group tombstone: the group is deleted
                entries.append((encode_key(GroupMetadataKey(group=group)), None, ()))
            else:
                cgroup = rng.choice(CONSUMER)
                epoch[cgroup] += 1
                entries.append(consumer_record(rng, cgroup, epoch[cgroup], ts))
        codec = COMPRESSION_LZ4 if rng.random() < 0.2 else COMPRESSION_NONE
        add(build_batch(entries, base_offset=offset, timestamp_ms=ts, compression=codec), len(entries))
        n -= len(entries)
    return batches


def _rebase(batch: bytes, base_offset: int) -> bytes:
    return base_offset.to_bytes(8, "big") + batch[8:]


# ---------------------------------------------------------------------------------- loading
def replay_one_by_one(c: GroupCoordinator, batches: list[bytes], partition: int = 0) -> None:
    for batch in batches:
        header, rows = decode_record_tuples(batch)
        for _offset, _ts, key, value, _headers, _attrs in rows:
            if header.is_control:
                commit = decode_marker(key, value).type is ControlType.COMMIT
                c.replay_end_transaction(partition, header.producer_id, commit)
                continue
            assert key is not None
            try:
                consumer = consumer_records.decode_record(key, value)
                record = decode_record(key, value) if consumer is None else None
            except ValueError:
                continue  # an undecodable record is logged and skipped
            if consumer is not None:
                c.replay_consumer_record(consumer)
                continue
            assert record is not None
            if header.is_transactional:
                c.replay_transactional(record, header.producer_id)
            else:
                c.replay(record)


def bulk_load(c: GroupCoordinator, batches: list[bytes], partition: int = 0) -> int:
    loader = OffsetsLoader(c, OFFSETS_TOPIC, partition)
    for batch in batches:
        loader.feed(parse_header(batch), batch)
    return loader.finish()


def state(c: GroupCoordinator) -> list[Any]:
    """Everything loading decides, in the coordinator's own order."""
    out: list[Any] = []
    for g in c.groups():
        out.append(
            (
                g.group_id,
                g.state,
                g.state_timestamp,
                g.generation,
                g.protocol_type,
                g.protocol_name,
                g.leader_id,
                [
                    (m.member_id, m.group_instance_id, m.client_id, m.protocols, m.assignment)
                    for m in g.members.values()
                ],
                dict(g.static_members),
                list(g.offsets.items()),  # dict order included
                c.pending_transactional_offsets(g.group_id),
            )
        )
    for gid in CONSUMER:
        cg = c.consumer_group(gid)
        if cg is None:
            out.append((gid, None))
            continue
        out.append(
            (
                gid,
                cg.group_epoch,
                cg.assignment_epoch,
                cg.metadata_hash,
                dict(cg.members),
                dict(cg.target_assignment),
                dict(cg.resolved_regexes),
                dict(cg.subscribed_names),
            )
        )
    out.append(("next deadline", c.next_deadline()))
    return out


def load_both(
    batches: list[bytes],
) -> tuple[GroupCoordinator, GroupCoordinator, list[GroupEvent], list[GroupEvent]]:
    clock = ManualClock(T0 + 10_000_000)
    ev_bulk: list[GroupEvent] = []
    ev_ref: list[GroupEvent] = []
    bulk = coordinator(clock, ev_bulk)
    ref = coordinator(clock, ev_ref)
    bulk.begin_loading(0)
    ref.begin_loading(0)
    bulk_load(bulk, batches)
    replay_one_by_one(ref, batches)
    bulk.complete_loading(0)
    ref.complete_loading(0)
    return bulk, ref, ev_bulk, ev_ref


@pytest.mark.parametrize("seed", range(30))
def test_loading_a_partition_equals_replaying_every_record_one_by_one(seed: int) -> None:
    bulk, ref, ev_bulk, ev_ref = load_both(random_partition(seed))
    assert state(bulk) == state(ref)
    assert ev_bulk == ev_ref


def test_the_random_partitions_hold_every_kind_of_record_the_comparison_claims() -> None:
    """The generator is not vacuous: across the seeds the loaded states have offsets with
    metadata, leader epochs and expire timestamps, deleted groups (a tombstone leaves only the
    group's offsets, as Kafka's loader does), members, consumer groups,
    and pending transactional offsets (transactions left open at the log's end)."""
    seen: set[str] = set()
    for seed in range(30):
        bulk, _ref, _e1, _e2 = load_both(random_partition(seed))
        groups = {g.group_id: g for g in bulk.groups()}
        for g in groups.values():
            for o in g.offsets.values():
                seen |= {"metadata"} if o.metadata else set()
                seen |= {"leader epoch"} if o.leader_epoch is not None else set()
                seen |= {"expire"} if o.expire_timestamp is not None else set()
            seen |= {"members"} if g.members else set()
            # every group had group records: generation 0 means its last one was a tombstone
            seen |= {"deleted group"} if g.generation == 0 else set()
            seen |= {"pending txn"} if bulk.pending_transactional_offsets(g.group_id) else set()
        seen |= {"consumer group"} if any(bulk.consumer_group(c) is not None for c in CONSUMER) else set()
    assert seen == {
        "metadata",
        "leader epoch",
        "expire",
        "members",
        "pending txn",
        "deleted group",
        "consumer group",
    }


def _v3(group: str, partition: int, offset: int, *, epoch: int | None = None, metadata: str = "") -> Entry:
    key = encode_key(OffsetCommitKey(group=group, topic="orders", partition=partition))
    value = OffsetCommitValue(
        offset=offset,
        leader_epoch=epoch,
        metadata=metadata,
        commit_timestamp=T0 + offset,
        expire_timestamp=None,
    )
    return key, encode_value(value, 3), ()


def test_committed_and_aborted_transactional_offsets_and_tombstones_load_as_kafka_applies_them() -> None:
    """Exact outcomes of a hand-written partition (Kafka's ``OffsetMetadataManager.replay`` and
    ``replayEndTransactionMarker``: a committed transaction's offsets replace the plain ones, an
    aborted one's are dropped; a group tombstone deletes the group with its offsets; an offset
    tombstone deletes one offset)."""

    def txn(pid: int, entries: list[Entry], base: int) -> bytes:
        return build_batch(
            entries,
            base_offset=base,
            timestamp_ms=T0,
            producer_id=pid,
            producer_epoch=0,
            base_sequence=0,
            attributes=ATTR_TRANSACTIONAL,
        )

    def marker(pid: int, commit: bool, base: int) -> bytes:
        batch = build_marker_batch(
            producer_id=pid, producer_epoch=0, commit=commit, coordinator_epoch=0, timestamp_ms=T0
        )
        return _rebase(batch, base)

    def offset_tombstone(group: str, partition: int) -> Entry:
        return encode_key(OffsetCommitKey(group=group, topic="orders", partition=partition)), None, ()

    group_tombstone: Entry = (encode_key(GroupMetadataKey(group="gone")), None, ())
    with_members = group_record(random.Random(1), "gone", 5, T0)
    batches = [
        build_batch(
            [_v3("g", 0, 10, epoch=3, metadata="m"), _v3("g", 1, 20), _v3("g", 2, 30)], timestamp_ms=T0
        ),
        txn(7, [_v3("g", 0, 11, epoch=4)], 3),
        txn(8, [_v3("g", 1, 21)], 4),
        build_batch(
            [with_members, _v3("gone", 0, 1), _v3("g", 2, 31), offset_tombstone("g", 2)],
            base_offset=5,
            timestamp_ms=T0,
        ),
        marker(7, True, 9),
        marker(8, False, 10),
        build_batch([offset_tombstone("gone", 0), group_tombstone], base_offset=11, timestamp_ms=T0),
        txn(9, [_v3("g", 3, 40)], 13),
    ]
    bulk, ref, _e1, _e2 = load_both(batches)
    assert state(bulk) == state(ref)
    assert bulk.group("gone") is None
    g = bulk.group("g")
    assert g is not None
    assert [(tp[1], o.offset, o.leader_epoch, o.metadata) for tp, o in g.offsets.items()] == [
        (0, 11, 4, ""),
        (1, 20, None, ""),
    ]
    assert bulk.pending_transactional_offsets("g") == {9: {("orders", 3): 40}}


# ---------------------------------------------------------------------------------- crashes
def _write_partition(data_dir: Path, batches: list[bytes]) -> tuple[Broker, Path]:
    config = BrokerConfig.load(None, ["offsets.topic.num.partitions=1"])
    broker = Broker.open(config, data_dir, ManualClock(T0))
    GroupRuntime(broker).ensure_topics()
    plog = broker.logs.partition(OFFSETS_TOPIC, 0)
    for batch in batches:
        plog.append(batch)
    plog.flush()
    return broker, data_dir / f"{OFFSETS_TOPIC}-0"


async def _start_and_load(data_dir: Path) -> tuple[GroupCoordinator, Broker]:
    config = BrokerConfig.load(None, ["offsets.topic.num.partitions=1"])
    broker = Broker.open(config, data_dir, ManualClock(T0 + 10_000_000))
    runtime = GroupRuntime(broker)
    runtime.start()
    await asyncio.wait_for(runtime.loaded.wait(), 60)
    await runtime.close()
    return runtime.coordinator, broker


def _reference(batches: list[bytes]) -> GroupCoordinator:
    ref = coordinator(ManualClock(T0 + 10_000_000), [])
    ref.begin_loading(0)
    replay_one_by_one(ref, batches)
    ref.complete_loading(0)
    return ref


@pytest.mark.parametrize("seed", range(3))
def test_a_crash_with_a_torn_last_batch_loads_the_state_of_the_whole_batches(
    seed: int, tmp_path: Path
) -> None:
    """No clean-shutdown marker and the active segment cut inside its last batch (a process that
    died mid-write): recovery truncates to the last whole batch (Kafka's ``LogLoader``, recovery of
    the segments after the recovery point) and the coordinator loads the state those give."""
    batches = random_partition(100 + seed, n=300)
    live = tmp_path / "live"
    broker, _pdir = _write_partition(live, batches)
    crashed = tmp_path / "crashed"
    shutil.copytree(live, crashed)  # while open: no .clean_shutdown in the copy
    asyncio.run(broker.close())
    pdir = crashed / f"{OFFSETS_TOPIC}-0"
    assert not (pdir / ".clean_shutdown").exists()
    (segment,) = sorted(pdir.glob("*.log"))
    last = batches[-1]
    with open(segment, "r+b") as f:
        f.truncate(segment.stat().st_size - len(last) // 2)

    loaded, broker2 = asyncio.run(_start_and_load(crashed))
    report = broker2.logs.recovery_reports[(OFFSETS_TOPIC, 0)]
    asyncio.run(broker2.close())
    assert not report.clean_shutdown
    assert report.truncated_bytes == len(last) - len(last) // 2
    assert state(loaded) == state(_reference(batches[:-1]))


def test_a_clean_restart_and_a_crash_without_damage_load_the_same_state(tmp_path: Path) -> None:
    """After a clean close (the marker trusted, the indexes loaded, no rescan) and after a crash
    image of the same files (the active segment read and checked completely), the loaded state is
    the one-by-one replay of every batch."""
    batches = random_partition(7, n=300)
    live = tmp_path / "live"
    broker, _pdir = _write_partition(live, batches)
    crashed = tmp_path / "crashed"
    shutil.copytree(live, crashed)
    asyncio.run(broker.close())
    assert (live / f"{OFFSETS_TOPIC}-0" / ".clean_shutdown").exists()
    expected = state(_reference(batches))
    for data_dir, clean in ((live, True), (crashed, False)):
        loaded, b = asyncio.run(_start_and_load(data_dir))
        report = b.logs.recovery_reports[(OFFSETS_TOPIC, 0)]
        asyncio.run(b.close())
        assert report.clean_shutdown is clean
        assert report.truncated_bytes == 0
        assert state(loaded) == expected


def _commit_v(
    group: str, topic: str, partition: int, offset: int, *, key_version: int, epoch: int | None
) -> Entry:
    key = encode_key(OffsetCommitKey(group=group, topic=topic, partition=partition))
    if key_version == 0:
        key = b"\x00\x00" + key[2:]
    value = OffsetCommitValue(
        offset=offset, leader_epoch=epoch, metadata="", commit_timestamp=T0 + offset, expire_timestamp=None
    )
    return key, encode_value(value, 3), ()


@pytest.mark.parametrize("seed", range(12))
def test_long_runs_of_one_groups_commits_load_as_replayed_one_by_one(seed: int) -> None:
    """Batches as OffsetCommit writes them: hundreds of commits of one group in a row (record
    lengths and offset-delta widths change along the batch), interrupted by what a run must stop
    at: another group, a topic of another length, a value with metadata, a key or topic that does
    not decode, a tombstone, a commit of key version 0."""
    rng = random.Random(seed)
    batches: list[bytes] = []
    offset = 0
    for _ in range(6):
        group = rng.choice(["run-group", "run-group-2", "ü"])
        entries: list[Entry] = []
        for i in range(rng.choice([50, 64, 65, 130, 300])):
            topic = rng.choice(["orders", "orders", "orders", "pay", "päyments-eu"])
            entry = _commit_v(
                group,
                topic,
                rng.randrange(100),
                offset + i,
                key_version=0 if rng.random() < 0.05 else 1,
                epoch=rng.choice([None, None, 3, 2**31 - 1]),
            )
            r = rng.random()
            if r < 0.02:
                entry = commit(rng, "other-group", T0)
            elif r < 0.03:
                key, value, _h = entry
                assert value is not None
                entry = key, value[:-1] + b"\x00\x01", ()  # a longer value: not the run's layout
            elif r < 0.04:
                key, value, _h = entry
                entry = key[:-6] + b"\x00\x02\xff\xfe" + key[-4:], value, ()  # topic not UTF-8
            elif r < 0.05:
                entry = entry[0], None, ()
            entries.append(entry)
        batches.append(build_batch(entries, base_offset=offset, timestamp_ms=T0))
        offset += len(entries)
    bulk, ref, ev_bulk, ev_ref = load_both(batches)
    assert state(bulk) == state(ref)
    assert ev_bulk == ev_ref
    assert sum(len(g.offsets) for g in bulk.groups()) > 100
