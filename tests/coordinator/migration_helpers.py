"""Helpers of the KIP-848 migration tests: a shard with one four-partition topic ``t``, classic
members speaking the consumer embedded protocol, and consumer-protocol members."""

from __future__ import annotations

import uuid
from typing import Any

from coord_harness import Harness, ListSink, Reply

from groupcoord.coordinator.consumer.api import ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse
from groupcoord.coordinator.consumer.metadata import TopicMetadata, TopicsImage
from groupcoord.coordinator.consumer.records import ConsumerGroupRecord, decode_record
from groupcoord.coordinator.records import decode_record as decode_classic_record
from groupcoord.coordinator.records import encode_record
from groupcoord.errors import ErrorCode
from groupcoord.formats.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.group_messages import JoinGroupResponse, SyncGroupResponse
from groupcoord.runtime.group_coordinator import GroupCoordinator

TOPIC_ID = uuid.UUID(int=0xB7)
GROUP = "group"
PARTITIONS = 4


def image() -> TopicsImage:
    return TopicsImage([TopicMetadata(topic_id=TOPIC_ID, name="t", num_partitions=PARTITIONS)], version=1)


def harness(sink: ListSink | None = None, **config: Any) -> Harness:
    # These tests follow the Kafka 4.1 order (a target per epoch bump): they run with assignment
    # batching off, as Kafka 4.3 runs its request tests (KAFKA-20291); batching has its own tests.
    config.setdefault("group_consumer_assignment_interval_ms", 0)
    h = Harness(sink=sink, **config)
    h.c.on_metadata_update(image())
    return h


def sub(owned: tuple[int, ...] = (), *, version: int = 3, topics: tuple[str, ...] = ("t",)) -> bytes:
    """A ConsumerProtocolSubscription (JoinGroup metadata) owning ``owned`` of ``t``."""
    return encode_subscription(
        Subscription(
            topics=topics, owned_partitions=(("t", owned),) if owned and version >= 1 else (), version=version
        )
    )


def asg(parts: tuple[int, ...], *, version: int = 3, user_data: bytes | None = None) -> bytes:
    """A ConsumerProtocolAssignment (SyncGroup) of ``parts`` of ``t``."""
    return encode_assignment(
        Assignment(partitions=(("t", parts),) if parts else (), user_data=user_data, version=version)
    )


def protocols(owned: tuple[int, ...] = (), *, version: int = 3) -> tuple[tuple[str, bytes], ...]:
    return (("range", sub(owned, version=version)), ("roundrobin", sub(owned, version=version)))


def partitions_of(response: SyncGroupResponse) -> tuple[int, ...]:
    assert response.error is ErrorCode.NONE, response
    decoded = decode_assignment(response.assignment)
    return tuple(sorted(p for topic, parts in decoded.partitions if topic == "t" for p in parts))


def stable_classic_group(h: Harness, assignment: tuple[tuple[int, ...], ...]) -> list[str]:
    """Classic members joined together (generation 1), the first the leader; the leader syncs
    ``assignment`` (one tuple per member) and everyone has it. Returns the member ids."""
    joins = [h.join_new(protocols=protocols()) for _ in assignment]
    h.advance(200)  # the initial rebalance delay, extended by each joiner
    ids = [j.member_id for j in joins]
    assert all(j.error is ErrorCode.NONE and j.generation_id == 1 for j in joins)
    leader = joins[0].leader
    assignments = tuple((mid, asg(parts)) for mid, parts in zip(ids, assignment, strict=True))
    replies = [h.sync(mid, 1, assignments if mid == leader else ()) for mid in ids]
    assert all(partitions_of(r.value) == parts for r, parts in zip(replies, assignment, strict=True))
    return ids


def heartbeat(
    h: Harness, member_id: str, epoch: int, owned: tuple[int, ...] | None = (), **kw: Any
) -> Reply[ConsumerGroupHeartbeatResponse]:
    """A consumer-protocol member's heartbeat (full at epoch 0)."""
    r: Reply[ConsumerGroupHeartbeatResponse] = Reply()
    h.c.consumer_group_heartbeat(
        ConsumerGroupHeartbeatRequest(
            group_id=kw.get("group", GROUP),
            member_id=member_id,
            member_epoch=epoch,
            instance_id=kw.get("instance"),
            rebalance_timeout_ms=5000 if epoch == 0 else -1,
            subscribed_topic_names=("t",) if epoch == 0 else None,
            topic_partitions=None if owned is None else (((TOPIC_ID, owned),) if owned else ()),
            client_id=member_id,
            client_host="/127.0.0.1",
        ),
        r,
    )
    return r


def assigned(r: Reply[ConsumerGroupHeartbeatResponse]) -> tuple[int, ...]:
    assert r.value.error_code == 0, r.value
    assert r.value.assignment is not None
    return tuple(sorted(r.value.assignment.get(TOPIC_ID, ())))


def classic_rejoin(
    h: Harness, member_id: str, owned: tuple[int, ...]
) -> tuple[Reply[JoinGroupResponse], Reply[SyncGroupResponse]]:
    """A classic member's JoinGroup (reporting ``owned``) and SyncGroup at the generation it got."""
    join = h.join(member_id, protocols=protocols(owned))
    assert join.error is ErrorCode.NONE, join.value
    return join, h.sync(member_id, join.generation_id, protocol_name=join.protocol_name)


def reload(h: Harness) -> GroupCoordinator:
    """A fresh coordinator that loads the log ``h`` wrote, through the bytes of each record."""
    fresh = GroupCoordinator(h.config, h.clock, record_sink=ListSink(), owned_partitions=())
    fresh.on_metadata_update(image())
    p = fresh.partition_for(GROUP)
    fresh.begin_loading(p)
    for rec in h.sink.records:
        key, value = encode_record(rec)
        if int.from_bytes(key[:2], "big") >= 3:
            decoded = decode_record(key, value)
            assert isinstance(decoded, ConsumerGroupRecord)
            fresh.replay_consumer_record(decoded)
        else:
            classic = decode_classic_record(key, value)
            assert classic is not None
            fresh.replay(classic)
    fresh.complete_loading(p)
    return fresh
