"""The shard returns results and never calls its caller; the runtime applies them.

Kafka 4.x's ``GroupCoordinatorShard`` methods return a ``CoordinatorResult`` (records plus the
response) and ``CoordinatorRuntime`` appends the records and completes the response once they
are committed (``CoordinatorRuntime.scheduleWriteOperation``). These tests drive
:class:`GroupCoordinatorShard` by hand, with no runtime, and the runtime with a sink that holds
writes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coord_harness import ListSink

from groupcoord.clock import ManualClock
from groupcoord.coordinator.config import GroupConfig
from groupcoord.coordinator.records import OffsetCommitKey
from groupcoord.coordinator.shard import GroupCoordinatorShard
from groupcoord.errors import ErrorCode
from groupcoord.protocol.group_messages import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator

CONFIG = GroupConfig(group_min_session_timeout_ms=10, group_initial_rebalance_delay_ms=0)


def _never(_response: Any) -> None:
    raise AssertionError("the shard called a reply itself")


def _commit(offset: int, group: str = "g") -> OffsetCommitRequest:
    return OffsetCommitRequest(
        group_id=group,
        generation_id=-1,
        member_id="",
        group_instance_id=None,
        retention_time_ms=-1,
        topics=(
            OffsetCommitTopic(name="t", partitions=(OffsetCommitPartition(partition=0, offset=offset),)),
        ),
    )


def _join(member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id="g",
        session_timeout_ms=500,
        rebalance_timeout_ms=500,
        member_id=member_id,
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(("range", b"md"),),
        client_id="c",
    )


def test_an_answer_that_needs_no_write_is_a_response_in_the_result() -> None:
    shard = GroupCoordinatorShard(CONFIG, ManualClock(1_000), member_id_factory=lambda p: f"{p}-1")
    result = shard.heartbeat(HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), _never)
    assert result.responses == [(_never, HeartbeatResponse(error=ErrorCode.UNKNOWN_MEMBER_ID))]
    assert result.writes == []

    first = shard.join_group(_join(), _never)
    ((reply, response),) = first.responses
    assert reply is _never
    assert isinstance(response, JoinGroupResponse)
    assert (response.error, response.member_id) == (ErrorCode.MEMBER_ID_REQUIRED, "c-1")
    # The group was created: its creation is an event of the same result.
    assert [(e.type, e.to_state) for e in first.events] == [("state_change", "Empty")]


def test_a_commit_is_answered_only_when_its_write_completes() -> None:
    """Kafka 4.x's write operation: the commit's records and its answer come back together
    (``CoordinatorResult(records, response)``); the answer is held with the write, and the
    offset is in the state only once the write is durable (the runtime hands the durable write
    to the shard's ``durable`` list, taken in at the shard's next call)."""
    shard = GroupCoordinatorShard(CONFIG, ManualClock(1_000))
    result = shard.offset_commit(_commit(42), _never)
    assert result.responses == []
    (write,) = result.writes
    assert write.partition == shard.partition_for("g")
    assert [r.key for r in write.records] == [OffsetCommitKey(group="g", topic="t", partition=0)]
    assert write.reply is _never
    response = write.response
    assert isinstance(response, OffsetCommitResponse)
    assert [p.error for t in response.topics for p in t.partitions] == [ErrorCode.NONE]
    group = shard.group("g")
    assert group is not None and group.offsets == {}  # not replayed before it is durable

    shard.durable.append(write)  # what the runtime does once the write is durable
    assert shard.group("g") is group
    assert group.offsets[("t", 0)].offset == 42
    assert shard.durable == []


def test_a_failed_commit_write_answers_the_mapped_error_and_changes_nothing() -> None:
    """``NOT_ENOUGH_REPLICAS`` -> ``COORDINATOR_NOT_AVAILABLE`` (Kafka's
    ``GroupMetadataManager.storeOffsets`` / ``CoordinatorOperationExceptionHelper``)."""
    shard = GroupCoordinatorShard(CONFIG, ManualClock(1_000))
    (write,) = shard.offset_commit(_commit(42), _never).writes
    done = shard.complete_write(write, ErrorCode.NOT_ENOUGH_REPLICAS)
    ((_, response),) = done.responses
    assert [p.error for t in response.topics for p in t.partitions] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    group = shard.group("g")
    assert group is not None and group.offsets == {}


def test_durable_commits_are_taken_in_in_order_and_a_failed_one_after_them_changes_nothing() -> None:
    """Two commits of one partition in flight: the runtime answers the first once durable (no
    call into the shard), the second's write fails and is answered the mapped error
    (KAFKA_STORAGE_ERROR -> NOT_COORDINATOR, Kafka's ``CoordinatorOperationExceptionHelper``);
    the shard's next call sees the first offset and not the second."""
    clock = ManualClock(1_000)
    sink = ListSink(hold=True)
    coordinator = GroupCoordinator(CONFIG, clock, record_sink=sink)
    answers: list[tuple[str, list[ErrorCode]]] = []

    def on(name: str) -> Any:
        return lambda r: answers.append((name, [p.error for t in r.topics for p in t.partitions]))

    coordinator.offset_commit(_commit(7), on("first"))
    coordinator.offset_commit(_commit(8), on("second"))
    assert answers == []
    ((_, first_done), (_, second_done)) = sink.held
    sink.held = []
    first_done(ErrorCode.NONE)
    assert answers == [("first", [ErrorCode.NONE])]
    second_done(ErrorCode.KAFKA_STORAGE_ERROR)
    assert answers == [("first", [ErrorCode.NONE]), ("second", [ErrorCode.NOT_COORDINATOR])]
    group = coordinator.group("g")
    assert group is not None and group.offsets[("t", 0)].offset == 7


def test_the_runtime_delivers_responses_in_order_when_a_reply_calls_back_in() -> None:
    """When one call answers several parked requests (the join phase ends), a reply callback
    that sends its connection's next request (as a client does) gets that answer after every
    answer of the same call."""
    clock = ManualClock(1_000)
    runtime = GroupCoordinator(CONFIG, clock, record_sink=ListSink())
    seen: list[str] = []

    def first_reply(response: Any) -> None:
        seen.append(f"join:{response.member_id}")
        runtime.heartbeat(
            HeartbeatRequest(
                group_id="g", generation_id=response.generation_id, member_id=response.member_id
            ),
            lambda r: seen.append(f"heartbeat:{r.error.name}"),
        )

    runtime.join_group(replace(_join(), version=3, client_id="a"), first_reply)
    runtime.join_group(
        replace(_join(), version=3, client_id="b"), lambda r: seen.append(f"join:{r.member_id}")
    )
    assert seen == []  # both parked in PreparingRebalance
    while (deadline := runtime.next_deadline()) is not None and deadline <= clock.now_ms():
        runtime.poll()
    a, b = (m.member_id for m in runtime.group("g").members.values())  # type: ignore[union-attr]
    assert seen == [f"join:{a}", f"join:{b}", "heartbeat:NONE"]
