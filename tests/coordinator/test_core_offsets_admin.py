"""OffsetCommit/OffsetFetch/DeleteGroups/OffsetDelete/DescribeGroups/ListGroups (reference §6, 62-72)."""

from __future__ import annotations

from coord_harness import DELAY, GROUP, Harness, Reply

from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
)
from groupcoord.errors import ErrorCode
from groupcoord.formats.consumer_protocol import Subscription, encode_subscription
from groupcoord.protocol.group_messages import (
    DeleteGroupResult,
    DeleteGroupsResponse,
    DescribedMember,
    DescribeGroupsResponse,
    ListedGroup,
    ListGroupsResponse,
    OffsetDeletePartitionResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteTopic,
    OffsetDeleteTopicResponse,
    OffsetFetchGroup,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
)

NONE = ErrorCode.NONE


def _sub(*topics: str) -> bytes:
    return encode_subscription(
        Subscription(
            version=0,
            topics=tuple(topics),
            user_data=None,
            owned_partitions=(),
            generation_id=-1,
            rack_id=None,
        )
    )


# 62
def test_simple_commit_creates_the_group_and_fetch_returns_offset_metadata_and_epoch() -> None:
    h = Harness()
    assert h.commit({("t", 0): 42}, metadata="md", leader_epoch=7) == {("t", 0): NONE}
    assert h.state() == "Empty"
    assert h.fetch({"t": (0,)}) == {("t", 0): (42, 7, "md", NONE)}
    (rec,) = h.sink.records
    assert rec == CoordinatorRecord(
        key=OffsetCommitKey(group=GROUP, topic="t", partition=0),
        value=OffsetCommitValue(
            offset=42, leader_epoch=7, metadata="md", commit_timestamp=h.clock.now_ms(), expire_timestamp=None
        ),
    )


# 63
def test_commit_with_a_generation_to_an_unknown_group_is_illegal_generation() -> None:
    h = Harness()
    assert h.commit({("t", 0): 1}, member_id="m", generation=3) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert h.commit({("t", 0): 1}, member_id="m", generation=3, version=9) == {
        ("t", 0): ErrorCode.GROUP_ID_NOT_FOUND
    }
    assert h.c.group(GROUP) is None


# 64
def test_commit_in_completing_rebalance_is_rebalance_in_progress() -> None:
    h = Harness()
    a = h.join_new()
    h.advance(DELAY)
    assert h.commit({("t", 0): 1}, member_id=a.member_id, generation=1) == {
        ("t", 0): ErrorCode.REBALANCE_IN_PROGRESS
    }


def test_commit_during_preparing_rebalance_with_the_previous_generation_is_accepted() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    h.join(a)
    assert h.commit({("t", 0): 5}, member_id=b, generation=gen) == {("t", 0): NONE}


# 65
def test_commit_with_wrong_generation_unknown_member_or_fenced_instance() -> None:
    h = Harness()
    (a, _), gen = h.stable_group(2)
    assert h.commit({("t", 0): 1}, member_id=a, generation=gen + 1) == {
        ("t", 0): ErrorCode.ILLEGAL_GENERATION
    }
    assert h.commit({("t", 0): 1}, member_id="ghost", generation=gen) == {
        ("t", 0): ErrorCode.UNKNOWN_MEMBER_ID
    }
    s = h.join(instance="S")
    assert h.commit({("t", 0): 1}, member_id="not-s", generation=gen, instance="S") == {
        ("t", 0): ErrorCode.FENCED_INSTANCE_ID
    }
    assert not s.done  # the new static member is parked in the rebalance it started


# 66
def test_admin_commit_to_non_empty_group_is_unknown_member_and_succeeds_once_empty() -> None:
    h = Harness()
    (a,), _ = h.stable_group(1)
    assert h.commit({("t", 0): 1}) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    h.leave((a, None))
    assert h.state() == "Empty"
    assert h.commit({("t", 0): 9}) == {("t", 0): NONE}
    assert h.fetch({"t": (0,)})[("t", 0)][0] == 9


# 67
def test_metadata_over_the_limit_fails_only_that_partition() -> None:
    h = Harness(offset_metadata_max_bytes=4)
    res = h.commit({("t", 0): 1, ("t", 1): 2}, metadata="12345")
    assert res == {
        ("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE,
        ("t", 1): ErrorCode.OFFSET_METADATA_TOO_LARGE,
    }
    assert h.commit({("t", 0): 1}, metadata="1234") == {("t", 0): NONE}
    # the limit counts UTF-16 code units, as Java's String.length(): an astral char counts twice
    assert h.commit({("t", 0): 1}, metadata="12\U0001f600") == {("t", 0): NONE}
    assert h.commit({("t", 0): 1}, metadata="123\U0001f600") == {
        ("t", 0): ErrorCode.OFFSET_METADATA_TOO_LARGE
    }


def test_commit_write_failure_maps_storage_errors_per_partition() -> None:
    h = Harness()
    for stored, expected in [
        (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_COMMIT_OFFSET_SIZE),
    ]:
        h.sink.fail = stored
        assert h.commit({("t", 0): 1}) == {("t", 0): expected}
    h.sink.fail = None
    assert h.fetch({"t": (0,)}) == {("t", 0): (-1, None, "", NONE)}


def test_commit_v2_to_v4_with_retention_time_writes_an_expire_timestamp() -> None:
    h = Harness()
    assert h.commit({("t", 0): 1}, retention=60_000, version=2) == {("t", 0): NONE}
    value = h.sink.records[-1].value
    assert isinstance(value, OffsetCommitValue)
    assert value.expire_timestamp == h.clock.now_ms() + 60_000
    h.commit({("t", 0): 1}, retention=60_000, version=5)  # v5+ has no retention field
    value = h.sink.records[-1].value
    assert isinstance(value, OffsetCommitValue) and value.expire_timestamp is None


# 68
def test_fetch_of_never_committed_partition_and_fetch_of_all_offsets() -> None:
    h = Harness()
    h.commit({("b", 1): 11, ("a", 0): 10, ("b", 0): 12})
    assert h.fetch({"zzz": (3,)}) == {("zzz", 3): (-1, None, "", NONE)}
    assert h.fetch(None) == {
        ("a", 0): (10, None, "", NONE),
        ("b", 0): (12, None, "", NONE),
        ("b", 1): (11, None, "", NONE),
    }
    assert h.fetch({"t": (0,)}, group="never-seen") == {("t", 0): (-1, None, "", NONE)}


def test_fetch_serves_several_groups_at_once() -> None:
    h = Harness()
    h.commit({("t", 0): 1}, group="g1")
    h.commit({("t", 0): 2}, group="g2")
    r: Reply[OffsetFetchResponse] = Reply()
    topics = (OffsetFetchTopic(name="t", partitions=(0,)),)
    h.c.offset_fetch(
        OffsetFetchRequest(
            groups=(
                OffsetFetchGroup(group_id="g1", topics=topics),
                OffsetFetchGroup(group_id="g2", topics=topics),
            )
        ),
        r,
    )
    assert [(g.group_id, g.topics[0].partitions[0].offset) for g in r.value.groups] == [("g1", 1), ("g2", 2)]


# 69
def test_delete_groups_non_empty_empty_and_unknown() -> None:
    h = Harness()
    h.stable_group(1)
    h.commit({("t", 0): 1}, group="empty")
    r: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([GROUP, "empty", "unknown"], r)
    assert r.value == DeleteGroupsResponse(
        results=(
            DeleteGroupResult(group_id=GROUP, error=ErrorCode.NON_EMPTY_GROUP),
            DeleteGroupResult(group_id="empty", error=NONE),
            DeleteGroupResult(group_id="unknown", error=ErrorCode.GROUP_ID_NOT_FOUND),
        )
    )
    assert h.c.group("empty") is None
    assert h.fetch({"t": (0,)}, group="empty") == {("t", 0): (-1, None, "", NONE)}
    assert h.sink.records[-2:] == [
        CoordinatorRecord(key=OffsetCommitKey(group="empty", topic="t", partition=0), value=None),
        CoordinatorRecord(key=GroupMetadataKey(group="empty"), value=None),
    ]
    assert [e.reason.value for e in h.events if e.group_id == "empty"] == ["group_created", "group_deleted"]


def test_delete_groups_reply_waits_for_the_tombstones_to_be_durable() -> None:
    h = Harness()
    h.commit({("t", 0): 1})
    h.sink.hold = True
    r: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([GROUP], r)
    assert not r.done
    h.sink.release()
    assert r.value.results == (DeleteGroupResult(group_id=GROUP, error=NONE),)


# 70
def test_offset_delete_on_a_stable_consumer_group_spares_subscribed_topics() -> None:
    h = Harness()
    (a, _b), gen = h.stable_group(2, protocols=(("range", _sub("sub")),))
    h.commit({("sub", 0): 1, ("other", 0): 2}, member_id=a, generation=gen)
    r: Reply[OffsetDeleteResponse] = Reply()
    h.c.offset_delete(
        OffsetDeleteRequest(
            group_id=GROUP,
            topics=(
                OffsetDeleteTopic(name="sub", partitions=(0,)),
                OffsetDeleteTopic(name="other", partitions=(0,)),
            ),
        ),
        r,
    )
    assert r.value == OffsetDeleteResponse(
        error=NONE,
        topics=(
            OffsetDeleteTopicResponse(
                name="sub",
                partitions=(
                    OffsetDeletePartitionResponse(partition=0, error=ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),
                ),
            ),
            OffsetDeleteTopicResponse(
                name="other", partitions=(OffsetDeletePartitionResponse(partition=0, error=NONE),)
            ),
        ),
    )
    assert h.fetch(None) == {("sub", 0): (1, None, "", NONE)}


def test_offset_delete_on_non_empty_non_consumer_group_is_non_empty_group() -> None:
    h = Harness()
    h.stable_group(1, protocol_type="connect")
    r: Reply[OffsetDeleteResponse] = Reply()
    h.c.offset_delete(
        OffsetDeleteRequest(group_id=GROUP, topics=(OffsetDeleteTopic(name="t", partitions=(0,)),)), r
    )
    assert r.value == OffsetDeleteResponse(error=ErrorCode.NON_EMPTY_GROUP, topics=())


def test_offset_delete_on_unknown_group_is_group_id_not_found() -> None:
    h = Harness()
    r: Reply[OffsetDeleteResponse] = Reply()
    h.c.offset_delete(OffsetDeleteRequest(group_id="nope", topics=()), r)
    assert r.value.error is ErrorCode.GROUP_ID_NOT_FOUND


# 71
def test_describe_unknown_stable_and_rebalancing_groups() -> None:
    h = Harness()
    (a, b), _gen = h.stable_group(2)
    r: Reply[DescribeGroupsResponse] = Reply()
    h.c.describe_groups(["unknown", GROUP], r)
    unknown, stable = r.value.groups
    assert (unknown.error, unknown.state, unknown.members) == (NONE, "Dead", ())
    assert (stable.state, stable.protocol_type, stable.protocol_data) == ("Stable", "consumer", "range")
    assert stable.members == (
        DescribedMember(
            member_id=a,
            group_instance_id=None,
            client_id="client",
            client_host="/127.0.0.1",
            metadata=b"range-md",
            assignment=b"assignment-0",
        ),
        DescribedMember(
            member_id=b,
            group_instance_id=None,
            client_id="client",
            client_host="/127.0.0.1",
            metadata=b"range-md",
            assignment=b"assignment-1",
        ),
    )
    h.join(a)
    r2: Reply[DescribeGroupsResponse] = Reply()
    h.c.describe_groups([GROUP], r2)
    (reb,) = r2.value.groups
    assert (reb.state, reb.protocol_data) == ("PreparingRebalance", "")
    assert [(m.member_id, m.metadata, m.assignment) for m in reb.members] == [(a, b"", b""), (b, b"", b"")]


# 72
def test_list_groups_with_and_without_a_case_insensitive_state_filter() -> None:
    h = Harness()
    h.stable_group(1, group="s")
    h.join_new(group="p")
    r: Reply[ListGroupsResponse] = Reply()
    h.c.list_groups(None, r)
    assert sorted(r.value.groups, key=lambda g: g.group_id) == [
        ListedGroup(group_id="p", protocol_type="consumer", group_state="PreparingRebalance"),
        ListedGroup(group_id="s", protocol_type="consumer", group_state="Stable"),
    ]
    r2: Reply[ListGroupsResponse] = Reply()
    h.c.list_groups(["stable"], r2)
    assert r2.value == ListGroupsResponse(
        error=NONE, groups=(ListedGroup(group_id="s", protocol_type="consumer", group_state="Stable"),)
    )


# ------------------------------------------------------------------ retention
def test_empty_group_offsets_expire_and_the_group_dies() -> None:
    h = Harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1_000)
    (a,), gen = h.stable_group(1)
    h.commit({("t", 0): 1}, member_id=a, generation=gen)
    h.leave((a, None))  # Empty now
    h.advance(59_000)
    assert h.fetch(None) == {("t", 0): (1, None, "", NONE)}
    h.advance(2_000)  # 60 s after the group became Empty, at the next check
    assert h.c.group(GROUP) is None
    assert h.fetch(None) == {}
    assert h.sink.records[-2:] == [
        CoordinatorRecord(key=OffsetCommitKey(group=GROUP, topic="t", partition=0), value=None),
        CoordinatorRecord(key=GroupMetadataKey(group=GROUP), value=None),
    ]
    assert [e.reason.value for e in h.events][-1] == "offsets_expired"


def test_stable_consumer_group_expires_only_unsubscribed_topics() -> None:
    h = Harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1_000)
    (a,), gen = h.stable_group(1, protocols=(("range", _sub("sub")),), session=10_000)
    h.commit({("sub", 0): 1, ("old", 0): 2}, member_id=a, generation=gen)
    for _ in range(61):
        h.advance(1_000)
        assert h.heartbeat(a, gen) is NONE
    assert h.fetch(None) == {("sub", 0): (1, None, "", NONE)}


def test_simple_group_offsets_expire_per_commit_time_and_explicit_expire_timestamp_wins() -> None:
    h = Harness(offsets_retention_minutes=10, offsets_retention_check_interval_ms=1_000)
    h.commit({("t", 0): 1}, retention=5_000, version=2)
    h.commit({("t", 1): 1})
    h.advance(5_000)
    assert h.fetch(None) == {("t", 1): (1, None, "", NONE)}
    h.advance(600_000)
    assert h.c.group(GROUP) is None
