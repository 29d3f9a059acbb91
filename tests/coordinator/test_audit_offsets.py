"""Offsets a client can see, from the audit against Kafka's source (issue 11, items 1, 3, 4, 5).

* OffsetDelete protects every topic of a non-Empty consumer group whose subscriptions are
  unknown, and refuses the empty group id.
* A commit still being written is never undone by a tombstone written after it (offset expiry,
  OffsetDelete, DeleteGroups).
* OffsetFetch with ``require_stable`` (KIP-447) waits for the group's writes in flight and then
  answers with what they wrote, as Kafka 4.x does.
"""

from __future__ import annotations

from coord_harness import DELAY, GROUP, Harness, Reply

from groupcoord.clock import ManualClock
from groupcoord.coordinator.records import CoordinatorRecord, OffsetCommitKey
from groupcoord.errors import ErrorCode
from groupcoord.formats.consumer_protocol import Subscription, encode_subscription
from groupcoord.protocol.group_messages import (
    DeleteGroupResult,
    DeleteGroupsResponse,
    OffsetCommitPartition,
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetDeletePartitionResponse,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteTopic,
    OffsetDeleteTopicResponse,
    OffsetFetchGroup,
    OffsetFetchGroupResponse,
    OffsetFetchPartitionResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    OffsetFetchTopicResponse,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator

NONE = ErrorCode.NONE
SUBSCRIBED = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC

#: Subscription bytes that do not parse as any ConsumerProtocol version (the topic count
#: runs past the end), like Kafka's test's "protocols" placeholder bytes.
UNPARSABLE = b"\x00\x00\x00\x00\x00\x07"


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


def _offset_delete(h: Harness, group: str, topics: dict[str, tuple[int, ...]]) -> Reply[OffsetDeleteResponse]:
    r: Reply[OffsetDeleteResponse] = Reply()
    h.c.offset_delete(
        OffsetDeleteRequest(
            group_id=group, topics=tuple(OffsetDeleteTopic(name=t, partitions=ps) for t, ps in topics.items())
        ),
        r,
    )
    return r


def _delete_response(errors: dict[str, tuple[tuple[int, ErrorCode], ...]]) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(
        error=NONE,
        topics=tuple(
            OffsetDeleteTopicResponse(
                name=t, partitions=tuple(OffsetDeletePartitionResponse(partition=p, error=e) for p, e in ps)
            )
            for t, ps in errors.items()
        ),
    )


def _stable_fetch(
    h: Harness, groups: dict[str, dict[str, tuple[int, ...]] | None]
) -> Reply[OffsetFetchResponse]:
    r: Reply[OffsetFetchResponse] = Reply()
    h.c.offset_fetch(
        OffsetFetchRequest(
            groups=tuple(
                OffsetFetchGroup(
                    group_id=g,
                    topics=None
                    if topics is None
                    else tuple(OffsetFetchTopic(name=t, partitions=ps) for t, ps in topics.items()),
                )
                for g, topics in groups.items()
            ),
            require_stable=True,
        ),
        r,
    )
    return r


def _fetched(group: str, topic: str, partition: int, offset: int) -> OffsetFetchGroupResponse:
    return OffsetFetchGroupResponse(
        group_id=group,
        error=NONE,
        topics=(
            OffsetFetchTopicResponse(
                name=topic,
                partitions=(
                    OffsetFetchPartitionResponse(
                        partition=partition, offset=offset, leader_epoch=None, metadata="", error=NONE
                    ),
                ),
            ),
        ),
    )


def _commit_async(
    h: Harness, offsets: dict[tuple[str, int], int], group: str = GROUP
) -> Reply[OffsetCommitResponse]:
    """An admin (generation -1) commit whose reply is captured, for use while writes are held."""
    by_topic: dict[str, list[OffsetCommitPartition]] = {}
    for (t, p), o in offsets.items():
        by_topic.setdefault(t, []).append(OffsetCommitPartition(partition=p, offset=o))
    r: Reply[OffsetCommitResponse] = Reply()
    h.c.offset_commit(
        OffsetCommitRequest(
            group_id=group,
            generation_id=-1,
            member_id="",
            group_instance_id=None,
            retention_time_ms=-1,
            topics=tuple(OffsetCommitTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
        ),
        r,
    )
    return r


def _commit_errors(r: Reply[OffsetCommitResponse]) -> dict[tuple[str, int], ErrorCode]:
    return {(t.name, p.partition): p.error for t in r.value.topics for p in t.partitions}


def _reload(h: Harness) -> GroupCoordinator:
    """A fresh coordinator that loads the group's partition from the writes that were durable."""
    fresh = GroupCoordinator(h.config, ManualClock(h.clock.now_ms()), record_sink=h.sink.__class__())
    p = fresh.partition_for(GROUP)
    fresh.unload_partition(p)
    fresh.begin_loading(p)
    for _, records in h.sink.appended:
        for rec in records:
            fresh.replay(rec)
    fresh.complete_loading(p)
    return fresh


def _tombstone(topic: str, partition: int, group: str = GROUP) -> CoordinatorRecord:
    return CoordinatorRecord(key=OffsetCommitKey(group=group, topic=topic, partition=partition), value=None)


# ------------------------------------------------------------------ item 1: unknown subscriptions
def test_offset_delete_on_a_stable_group_with_unparsable_subscriptions_protects_every_topic() -> None:
    """Kafka's ``testDeleteOffsetOfConsumerGroupWithUnparsableProtocol`` (GroupCoordinatorTest):
    the subscription cannot be parsed, so ``GroupMetadata.isSubscribedToTopic`` answers true
    (``case None => true``; 4.x ``ClassicGroup.isSubscribedToTopic``: ``orElse(usesConsumerGroupProtocol())``)
    and the offset is kept with GROUP_SUBSCRIBED_TO_TOPIC."""
    h = Harness()
    (a,), gen = h.stable_group(1, protocols=(("range", UNPARSABLE),))
    assert h.commit({("foo", 0): 37}, member_id=a, generation=gen) == {("foo", 0): NONE}
    written = len(h.sink.records)
    r = _offset_delete(h, GROUP, {"foo": (0,)})
    assert r.value == _delete_response({"foo": ((0, SUBSCRIBED),)})
    assert h.fetch(None) == {("foo", 0): (37, None, "", NONE)}
    assert len(h.sink.records) == written  # no tombstone


def test_offset_delete_during_the_first_rebalance_protects_every_topic() -> None:
    """Generation 0 in PreparingRebalance: no subscription was ever computed (Kafka's
    ``subscribedTopics`` starts as None / ``Optional.empty()``), so ``isSubscribedToTopic`` is
    true for a consumer group (GroupMetadata.scala, ClassicGroup.java) and nothing is deleted."""
    h = Harness()
    assert h.commit({("foo", 0): 5, ("bar", 1): 6}) == {("foo", 0): NONE, ("bar", 1): NONE}
    joining = h.join_new()
    assert not joining.done and h.state() == "PreparingRebalance"
    assert h.c.group(GROUP).generation == 0  # type: ignore[union-attr]
    r = _offset_delete(h, GROUP, {"foo": (0,), "bar": (1,)})
    assert r.value == _delete_response({"foo": ((0, SUBSCRIBED),), "bar": ((1, SUBSCRIBED),)})
    assert h.fetch(None) == {("bar", 1): (6, None, "", NONE), ("foo", 0): (5, None, "", NONE)}


def test_offset_delete_after_a_consumer_group_emptied_and_a_member_rejoins_deletes() -> None:
    """The other side of the rule: a consumer group that became Empty has a known, empty
    subscription (``computeSubscribedTopics``: ``members.isEmpty => Some(Set.empty)``), which
    stays until the next generation, so a rejoin does not protect its offsets.
    (Guard for the fix above: this passed before it too.)"""
    h = Harness()
    (a,), gen = h.stable_group(1, protocols=(("range", _sub("foo")),))
    h.commit({("foo", 0): 5}, member_id=a, generation=gen)
    h.leave((a, None))
    h.advance(1)  # the join phase completes with nobody: Empty, generation 2
    assert h.state() == "Empty"
    h.join_new(protocols=(("range", _sub("foo")),))
    assert h.state() == "PreparingRebalance"
    r = _offset_delete(h, GROUP, {"foo": (0,)})
    assert r.value == _delete_response({"foo": ((0, NONE),)})
    assert h.fetch(None) == {}


# ------------------------------------------------------------------ item 5: empty group id
def test_offset_delete_with_the_empty_group_id_is_invalid_group_id() -> None:
    """Kafka's ``GroupCoordinator.validateGroupStatus`` / ``isValidGroupId`` (only OffsetCommit,
    OffsetFetch, DescribeGroups and DeleteGroups accept ""), 4.x ``GroupCoordinatorService.deleteOffsets``
    (``isGroupIdNotEmpty``) and its test ``testDeleteOffsetsInvalidGroupId``: INVALID_GROUP_ID,
    even when offsets were committed under "" (which OffsetCommit allows)."""
    h = Harness()
    r = _offset_delete(h, "", {"t": (0,)})
    assert r.value == OffsetDeleteResponse(error=ErrorCode.INVALID_GROUP_ID, topics=())
    assert h.commit({("t", 0): 3}, group="") == {("t", 0): NONE}
    r = _offset_delete(h, "", {"t": (0,)})
    assert r.value == OffsetDeleteResponse(error=ErrorCode.INVALID_GROUP_ID, topics=())
    assert h.fetch(None, group="") == {("t", 0): (3, None, "", NONE)}


# ------------------------------------------------------------------ item 3: commits in flight
def test_expiry_skips_a_partition_whose_commit_is_in_flight() -> None:
    """``GroupMetadata.removeExpiredOffsets`` keeps a partition with a pending commit
    (``!pendingOffsetCommits.contains(topicPartition)``; 4.x ``OffsetMetadataManager.cleanupExpiredOffsets``
    does the same for pending transactional offsets): the tombstone never lands behind the commit,
    which is answered NONE and then read back."""
    h = Harness(offsets_retention_minutes=1, offsets_retention_check_interval_ms=1_000)
    assert h.commit({("t", 0): 5}) == {("t", 0): NONE}
    h.advance(59_500)
    h.sink.hold = True
    r = _commit_async(h, {("t", 0): 6})
    h.advance(1_000)  # the check at 60 s: offset 5 (committed 60 s ago) has expired
    assert not r.done
    h.sink.hold = False
    h.sink.release()
    assert _commit_errors(r) == {("t", 0): NONE}
    assert h.fetch(None) == {("t", 0): (6, None, "", NONE)}
    assert _tombstone("t", 0) not in h.sink.records
    assert h.state() == "Empty"
    # the new commit expires in its own time
    h.advance(59_000)
    assert h.fetch(None) == {("t", 0): (6, None, "", NONE)}
    h.advance(2_000)
    assert h.c.group(GROUP) is None


def test_offset_delete_also_deletes_a_partition_whose_first_commit_is_in_flight() -> None:
    """Kafka 3.x ``GroupMetadata.removeOffsets`` drops the pending commit too, and 4.x writes the
    tombstone because the commit is already in its (uncommitted) state
    (``OffsetMetadataManager.deleteOffsets``: "a tombstone is written if an offset is present ...
    or if a pending transactional offset exists"): a deletion answered NONE is never undone by the
    commit that was in flight."""
    h = Harness()
    assert h.commit({("t", 0): 1}) == {("t", 0): NONE}
    h.sink.hold = True
    c = _commit_async(h, {("t", 1): 7})
    r = _offset_delete(h, GROUP, {"t": (0, 1)})
    h.sink.hold = False
    h.sink.release()
    assert _commit_errors(c) == {("t", 1): NONE}
    assert r.value == _delete_response({"t": ((0, NONE), (1, NONE))})
    assert h.fetch({"t": (0, 1)}) == {("t", 0): (-1, None, "", NONE), ("t", 1): (-1, None, "", NONE)}
    reloaded = _reload(h).group(GROUP)
    assert reloaded is None or reloaded.offsets == {}


def test_delete_groups_with_a_commit_in_flight_leaves_no_offset_behind_in_the_log() -> None:
    """DeleteGroups removes every offset of the group, pending ones included (3.x
    ``removeAllOffsets``; 4.x ``deleteAllOffsets`` sees the in-flight commit in its state): after a
    restart the group must not come back with the commit that was in flight."""
    h = Harness()
    assert h.commit({("t", 0): 1}) == {("t", 0): NONE}
    h.sink.hold = True
    c = _commit_async(h, {("t", 1): 7})
    r: Reply[DeleteGroupsResponse] = Reply()
    h.c.delete_groups([GROUP], r)
    h.sink.hold = False
    h.sink.release()
    assert _commit_errors(c) == {("t", 1): NONE}
    assert r.value == DeleteGroupsResponse(results=(DeleteGroupResult(group_id=GROUP, error=NONE),))
    assert h.c.group(GROUP) is None
    assert _reload(h).group(GROUP) is None


# ------------------------------------------------------------------ item 4: require_stable
def test_require_stable_fetch_waits_for_the_commit_in_flight_and_returns_it() -> None:
    """Kafka 4.x ``GroupCoordinatorService.fetchOffsets``: with ``requireStable`` the fetch runs
    as a write operation, so it reads the latest state and ``GroupCoordinator`` holds its answer
    until the pending writes are committed ("the response waits until the pending offsets are
    committed"). A plain fetch answers at once with the last durable offset."""
    h = Harness()
    assert h.commit({("t", 0): 5}) == {("t", 0): NONE}
    h.sink.hold = True
    commit = _commit_async(h, {("t", 0): 6})
    stable = _stable_fetch(h, {GROUP: {"t": (0,)}})
    assert not stable.done and not commit.done
    assert h.fetch({"t": (0,)}) == {("t", 0): (5, None, "", NONE)}
    h.sink.hold = False
    h.sink.release()
    assert _commit_errors(commit) == {("t", 0): NONE}
    assert stable.value == OffsetFetchResponse(groups=(_fetched(GROUP, "t", 0, 6),))


def test_require_stable_fetch_answers_the_commit_before_the_fetch() -> None:
    """The commit's response leaves before the fetch that waited on it (4.x completes deferred
    events in log order)."""
    h = Harness()
    h.sink.hold = True
    order: list[str] = []
    h.c.offset_commit(
        OffsetCommitRequest(
            group_id=GROUP,
            generation_id=-1,
            member_id="",
            group_instance_id=None,
            retention_time_ms=-1,
            topics=(OffsetCommitTopic(name="t", partitions=(OffsetCommitPartition(partition=0, offset=9),)),),
        ),
        lambda _r: order.append("commit"),
    )
    h.c.offset_fetch(
        OffsetFetchRequest(
            groups=(OffsetFetchGroup(group_id=GROUP, topics=(OffsetFetchTopic(name="t", partitions=(0,)),)),),
            require_stable=True,
        ),
        lambda _r: order.append("fetch"),
    )
    assert order == []
    h.sink.hold = False
    h.sink.release()
    assert order == ["commit", "fetch"]


def test_require_stable_fetch_after_a_failed_commit_answers_the_groups_write_error() -> None:
    """When the write the fetch waits on fails, 4.x fails the fetch with it
    (``GroupCoordinator.failCurrentBatch`` completes the batch's deferred events exceptionally)
    and ``GroupCoordinatorService.handleOffsetFetchException`` answers the group NOT_COORDINATOR
    for a storage error; a retried fetch then sees the last durable offset."""
    h = Harness()
    assert h.commit({("t", 0): 5}) == {("t", 0): NONE}
    h.sink.hold = True
    commit = _commit_async(h, {("t", 0): 6})
    stable = _stable_fetch(h, {GROUP: {"t": (0,)}})
    h.sink.hold = False
    h.sink.release(ErrorCode.KAFKA_STORAGE_ERROR)
    assert _commit_errors(commit) == {("t", 0): ErrorCode.NOT_COORDINATOR}
    assert stable.value == OffsetFetchResponse(
        groups=(OffsetFetchGroupResponse(group_id=GROUP, error=ErrorCode.NOT_COORDINATOR, topics=()),)
    )
    again = _stable_fetch(h, {GROUP: {"t": (0,)}})
    assert again.value == OffsetFetchResponse(groups=(_fetched(GROUP, "t", 0, 5),))


def test_require_stable_fetch_waits_only_for_writes_in_flight_when_it_arrived() -> None:
    """4.x waits for the last offset written when the fetch arrives, not for later writes: a
    stream of commits cannot hold a stable fetch back forever."""
    h = Harness()
    h.sink.hold = True
    first = _commit_async(h, {("t", 0): 1})
    stable = _stable_fetch(h, {GROUP: None})
    second = _commit_async(h, {("t", 0): 2})
    (_, done_first), (_, done_second) = h.sink.held
    h.sink.held.clear()
    done_first(NONE)
    assert _commit_errors(first) == {("t", 0): NONE}
    assert stable.value == OffsetFetchResponse(groups=(_fetched(GROUP, "t", 0, 1),))
    assert not second.done
    done_second(NONE)
    assert _commit_errors(second) == {("t", 0): NONE}


def test_require_stable_fetch_of_several_groups_answers_once_all_are_stable() -> None:
    """OffsetFetch v8+ carries several groups; each reads its own offsets once its own pending
    writes are done, and the one response carries them all."""
    h = Harness()
    assert h.commit({("t", 0): 1}, group="quiet") == {("t", 0): NONE}
    h.sink.hold = True
    _commit_async(h, {("t", 0): 2}, group="busy")
    stable = _stable_fetch(h, {"quiet": {"t": (0,)}, "busy": {"t": (0,)}})
    assert not stable.done
    h.sink.hold = False
    h.sink.release()
    assert stable.value == OffsetFetchResponse(
        groups=(_fetched("quiet", "t", 0, 1), _fetched("busy", "t", 0, 2))
    )


def test_require_stable_fetch_with_nothing_in_flight_answers_at_once() -> None:
    """No pending write: the stable fetch is answered like a plain one (4.x completes an empty
    write at once when nothing is pending)."""
    h = Harness()
    (a,), gen = h.stable_group(1)
    h.commit({("t", 0): 4}, member_id=a, generation=gen)
    h.advance(DELAY)
    stable = _stable_fetch(h, {GROUP: {"t": (0,)}})
    assert stable.value == OffsetFetchResponse(groups=(_fetched(GROUP, "t", 0, 4),))
