"""TxnOffsetCommit in the group coordinator (KIP-98, KIP-447), under the manual clock.

Offsets committed inside a transaction are written as a transactional batch of the producer,
held pending per producer id, invisible to OffsetFetch, and put in place (COMMIT marker) or
dropped (ABORT marker); loading rebuilds the same from transactional batches and markers.
Kafka: ``OffsetMetadataManager.commitTransactionalOffset`` / ``replay`` /
``replayEndTransactionMarker`` (4.x), ``GroupMetadata.pendingTransactionalOffsetCommits`` (3.x).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pytest
from coord_harness import DELAY, GROUP, Harness, ListSink, Reply

from groupcoord.clock import ManualClock
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_record,
)
from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import ATTR_TRANSACTIONAL, build_batch, parse_header
from groupcoord.protocol.group_messages import (
    OffsetCommitPartition,
    OffsetCommitResponse,
    OffsetCommitTopic,
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteTopic,
    OffsetFetchGroup,
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchTopic,
    TxnOffsetCommitRequest,
)
from groupcoord.runtime.group_coordinator import GroupCoordinator
from groupcoord.runtime.loader import OffsetsLoader
from groupcoord.storage.control import build_marker_batch

PID, EPOCH = 4000, 3
OTHER_PID = 4001


@dataclass
class TxnSink(ListSink):
    """A list sink that also records which writes were transactional, and of which producer."""

    transactional: list[tuple[int, int, int, list[CoordinatorRecord]]] = field(default_factory=list)

    def append_transactional(
        self,
        partition: int,
        records: Sequence[CoordinatorRecord],
        producer_id: int,
        producer_epoch: int,
        done: Callable[[ErrorCode], None],
    ) -> None:
        self.transactional.append((partition, producer_id, producer_epoch, list(records)))
        self.append(partition, records, done)


def harness() -> Harness:
    return Harness(sink=TxnSink())  # a sink with the transactional method


def txn_commit(
    h: Harness,
    offsets: dict[tuple[str, int], int],
    *,
    producer_id: int = PID,
    member_id: str = "",
    generation: int = -1,
    instance: str | None = None,
    group: str = GROUP,
) -> Reply[OffsetCommitResponse]:
    by_topic: dict[str, list[OffsetCommitPartition]] = {}
    for (t, p), o in offsets.items():
        by_topic.setdefault(t, []).append(OffsetCommitPartition(partition=p, offset=o, metadata="m"))
    r: Reply[OffsetCommitResponse] = Reply()
    h.c.txn_offset_commit(
        TxnOffsetCommitRequest(
            transactional_id="tid",
            group_id=group,
            producer_id=producer_id,
            producer_epoch=EPOCH,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance,
            topics=tuple(OffsetCommitTopic(name=t, partitions=tuple(ps)) for t, ps in by_topic.items()),
        ),
        r,
    )
    return r


def codes(r: Reply[OffsetCommitResponse]) -> dict[tuple[str, int], ErrorCode]:
    return {(t.name, p.partition): p.error for t in r.value.topics for p in t.partitions}


def offsets(h: Harness, group: str = GROUP) -> dict[tuple[str, int], int]:
    return {k: v[0] for k, v in h.fetch(None, group=group).items()}


def stable_fetch(h: Harness, partitions: tuple[int, ...]) -> dict[int, tuple[int, ErrorCode]]:
    r: Reply[OffsetFetchResponse] = Reply()
    h.c.offset_fetch(
        OffsetFetchRequest(
            groups=(
                OffsetFetchGroup(group_id=GROUP, topics=(OffsetFetchTopic(name="t", partitions=partitions),)),
            ),
            require_stable=True,
        ),
        r,
    )
    (g,) = r.value.groups
    return {p.partition: (p.offset, p.error) for t in g.topics for p in t.partitions}


def end(h: Harness, commit: bool, producer_id: int = PID, group: str = GROUP) -> None:
    h.c.complete_transaction(h.c.partition_for(group), producer_id, commit)


# ------------------------------------------------------------------ commit / abort


def test_txn_offsets_are_written_as_a_transactional_batch_of_the_producer() -> None:
    """OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommit: the records are the
    plain offset-commit records (no expire timestamp); Kafka appends them as a transactional
    batch with the request's producer id and epoch (``GroupMetadataManager.storeOffsets``)."""
    h = harness()
    r = txn_commit(h, {("t", 0): 10})
    assert codes(r) == {("t", 0): ErrorCode.NONE}
    sink = h.sink
    assert isinstance(sink, TxnSink)
    ((partition, pid, epoch, records),) = sink.transactional
    assert (partition, pid, epoch) == (h.c.partition_for(GROUP), PID, EPOCH)
    (rec,) = records
    assert rec.key == OffsetCommitKey(group=GROUP, topic="t", partition=0)
    assert isinstance(rec.value, OffsetCommitValue)
    assert (rec.value.offset, rec.value.metadata, rec.value.expire_timestamp) == (10, "m", None)


def test_txn_offsets_become_visible_only_after_the_commit_marker() -> None:
    """GroupCoordinatorTest.testCommitAndAbortTransactionalOffsets (commit half): nothing is
    fetched while the transaction is open; the COMMIT marker puts the offsets in place."""
    h = harness()
    h.commit({("t", 0): 5})
    txn_commit(h, {("t", 0): 10, ("t", 1): 20})
    assert offsets(h) == {("t", 0): 5}
    assert h.c.pending_transactional_offsets(GROUP) == {PID: {("t", 0): 10, ("t", 1): 20}}
    end(h, commit=True)
    assert offsets(h) == {("t", 0): 10, ("t", 1): 20}
    assert h.c.pending_transactional_offsets(GROUP) == {}


def test_abort_marker_drops_the_pending_txn_offsets() -> None:
    """GroupCoordinatorTest.testFetchTxnOffsetsWithAbort."""
    h = harness()
    h.commit({("t", 0): 5})
    txn_commit(h, {("t", 0): 10})
    end(h, commit=False)
    assert offsets(h) == {("t", 0): 5}
    assert h.c.pending_transactional_offsets(GROUP) == {}


def test_markers_of_one_producer_leave_another_producers_offsets_pending() -> None:
    """GroupMetadataManagerTest.testLoadTransactionalOffsetCommitsFromMultipleProducers (live
    path): each producer's offsets wait for its own marker."""
    h = harness()
    txn_commit(h, {("t", 0): 10}, producer_id=PID)
    txn_commit(h, {("t", 1): 20}, producer_id=OTHER_PID)
    end(h, commit=True, producer_id=PID)
    assert offsets(h) == {("t", 0): 10}
    assert h.c.pending_transactional_offsets(GROUP) == {OTHER_PID: {("t", 1): 20}}
    end(h, commit=False, producer_id=OTHER_PID)
    assert offsets(h) == {("t", 0): 10}


def test_a_plain_commit_written_after_the_txn_commit_wins_at_the_marker() -> None:
    """GroupMetadataManagerTest.testGroupLoadWithConsumerAndTransactionalOffsetCommitsConsumerWins:
    the later record in the log wins (Kafka compares record offsets); here the plain commit is
    written after the transactional one, so the COMMIT marker leaves it in place."""
    h = harness()
    txn_commit(h, {("t", 0): 10})
    h.commit({("t", 0): 7})
    end(h, commit=True)
    assert offsets(h) == {("t", 0): 7}


def test_a_txn_commit_written_after_a_plain_commit_wins_at_the_marker() -> None:
    """GroupMetadataManagerTest.testGroupLoadWithConsumerAndTransactionalOffsetCommitsTransactionWins."""
    h = harness()
    h.commit({("t", 0): 7})
    txn_commit(h, {("t", 0): 10})
    end(h, commit=True)
    assert offsets(h) == {("t", 0): 10}


def test_require_stable_fetch_answers_unstable_offset_commit_for_pending_partitions() -> None:
    """OffsetMetadataManagerTest.testFetchOffsetsWithPendingTransactionalOffsets: a partition
    with a pending transactional offset answers UNSTABLE_OFFSET_COMMIT (offset -1); others,
    and every partition once the transaction ended, answer their committed offset."""
    h = harness()
    h.commit({("t", 0): 5, ("t", 1): 6})
    txn_commit(h, {("t", 0): 10})
    assert stable_fetch(h, (0, 1)) == {0: (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT), 1: (6, ErrorCode.NONE)}
    # without require_stable the committed offset is answered
    assert h.fetch({"t": (0,)})[("t", 0)][0] == 5
    end(h, commit=True)
    assert stable_fetch(h, (0, 1)) == {0: (10, ErrorCode.NONE), 1: (6, ErrorCode.NONE)}


def test_a_marker_of_a_producer_with_nothing_pending_changes_nothing() -> None:
    """GroupCoordinatorTest.testFetchTxnOffsetsIgnoreSpuriousCommit."""
    h = harness()
    h.commit({("t", 0): 5})
    end(h, commit=True)
    assert offsets(h) == {("t", 0): 5}
    txn_commit(h, {("t", 0): 10})
    end(h, commit=False)
    end(h, commit=True)  # a spurious COMMIT after the ABORT
    assert offsets(h) == {("t", 0): 5}


def test_a_failed_txn_offset_write_is_answered_with_the_mapped_error_and_leaves_nothing_pending() -> None:
    """A failed append answers as a failed OffsetCommit does (NOT_LEADER_OR_FOLLOWER ->
    NOT_COORDINATOR) and an older producer epoch as the log says (INVALID_PRODUCER_EPOCH)."""
    h = harness()
    h.sink.fail = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert codes(txn_commit(h, {("t", 0): 10})) == {("t", 0): ErrorCode.NOT_COORDINATOR}
    h.sink.fail = ErrorCode.INVALID_PRODUCER_EPOCH
    assert codes(txn_commit(h, {("t", 0): 10})) == {("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}
    assert h.c.pending_transactional_offsets(GROUP) == {}


# ------------------------------------------------------------------ validation


def test_txn_commit_from_a_member_of_the_current_generation_is_accepted() -> None:
    """GroupCoordinatorTest.testTxnCommitOffsetWithKnownMemberId (v3+ member fields)."""
    h = harness()
    (_, m2), gen = h.stable_group(2)
    assert codes(txn_commit(h, {("t", 0): 1}, member_id=m2, generation=gen)) == {("t", 0): ErrorCode.NONE}


@pytest.mark.parametrize(
    ("member", "generation", "expected"),
    [
        ("unknown-member", None, ErrorCode.UNKNOWN_MEMBER_ID),  # testTxnCommitOffsetWithUnknownMemberId
        (
            None,
            99,
            ErrorCode.ILLEGAL_GENERATION,
        ),  # testGenericGroupTransactionalOffsetCommitWithIllegalGenerationId
    ],
)
def test_txn_commit_with_a_stale_member_or_generation_is_rejected(
    member: str | None, generation: int | None, expected: ErrorCode
) -> None:
    """OffsetMetadataManagerTest / GroupCoordinatorTest: v3+ TxnOffsetCommit naming a member is
    checked as an OffsetCommit is (``ClassicGroup.validateOffsetCommit``)."""
    h = harness()
    (m1, _), gen = h.stable_group(2)
    r = txn_commit(
        h, {("t", 0): 1}, member_id=member or m1, generation=gen if generation is None else generation
    )
    assert codes(r) == {("t", 0): expected}
    assert h.c.pending_transactional_offsets(GROUP) == {}


def test_txn_commit_without_member_fields_is_accepted_in_a_stable_group() -> None:
    """``ClassicGroup.validateOffsetCommit`` with isTransactional: generation -1 and no member id
    (TxnOffsetCommit v0-2, or aiokafka) is accepted in any state, unlike a plain commit, which
    gets UNKNOWN_MEMBER_ID in a non-empty group."""
    h = harness()
    h.stable_group(1)
    assert h.commit({("t", 0): 1}) == {("t", 0): ErrorCode.UNKNOWN_MEMBER_ID}
    assert codes(txn_commit(h, {("t", 0): 1})) == {("t", 0): ErrorCode.NONE}


def test_txn_commit_with_a_fenced_instance_id_is_rejected() -> None:
    """GroupCoordinatorTest.testTxnCommitOffsetWithFencedInstanceId: a static member's old
    member id (replaced by a restart with the same instance id) is FENCED_INSTANCE_ID."""
    h = harness()
    lead = h.join(instance="L")
    fol = h.join(instance="F")
    h.advance(2 * DELAY)
    gen, l_id, f_id = lead.generation_id, lead.member_id, fol.member_id
    assert h.sync(l_id, gen, ((l_id, b"L"), (f_id, b"F"))).error is ErrorCode.NONE
    assert h.sync(f_id, gen).error is ErrorCode.NONE
    again = h.join(instance="F")  # F restarts: a new member id replaces f_id, same generation
    assert again.error is ErrorCode.NONE and again.member_id != f_id
    r = txn_commit(h, {("t", 0): 1}, member_id=f_id, generation=gen, instance="F")
    assert codes(r) == {("t", 0): ErrorCode.FENCED_INSTANCE_ID}


def test_txn_commit_to_an_unknown_group_with_a_generation_is_illegal_generation() -> None:
    """OffsetMetadataManagerTest.testGenericGroupTransactionalOffsetCommitWithUnknownGroupId;
    with generation -1 a simple group is created and the commit accepted."""
    h = harness()
    r = txn_commit(h, {("t", 0): 1}, member_id="member", generation=10, group="nobody")
    assert codes(r) == {("t", 0): ErrorCode.ILLEGAL_GENERATION}
    assert h.c.group("nobody") is None
    assert codes(txn_commit(h, {("t", 0): 1}, group="simple")) == {("t", 0): ErrorCode.NONE}


def test_txn_commit_with_an_empty_group_id_is_invalid_group_id() -> None:
    """Kafka 4.x ``GroupCoordinatorService.commitTransactionalOffsets``: ``isGroupIdNotEmpty``."""
    h = harness()
    assert codes(txn_commit(h, {("t", 0): 1}, group="")) == {("t", 0): ErrorCode.INVALID_GROUP_ID}
    assert h.c.group("") is None


def test_txn_commit_during_completing_rebalance_is_rebalance_in_progress() -> None:
    """``ClassicGroup.validateOffsetCommit``: a member of the new generation committing before
    the assignment is durable gets REBALANCE_IN_PROGRESS."""
    h = harness()
    j = h.join_new()
    h.advance(50)
    assert h.state() == "CompletingRebalance"
    r = txn_commit(h, {("t", 0): 1}, member_id=j.member_id, generation=j.generation_id)
    assert codes(r) == {("t", 0): ErrorCode.REBALANCE_IN_PROGRESS}


# ------------------------------------------------------------------ retention and deletion


def test_offsets_with_a_pending_txn_commit_do_not_expire_and_keep_the_group() -> None:
    """Kafka 4.x ``OffsetMetadataManager.cleanupExpiredOffsets``: an offset with a pending
    transactional commit is not expired, and the group is not removed while a transaction
    of it is open."""
    h = harness()
    h.commit({("t", 0): 5, ("t", 1): 6})
    txn_commit(h, {("t", 0): 10})
    h.advance(h.config.offsets_retention_ms + h.config.offsets_retention_check_interval_ms)
    assert offsets(h) == {("t", 0): 5}
    end(h, commit=True)
    assert offsets(h) == {("t", 0): 10}


def test_deleting_the_group_tombstones_pending_txn_offsets_too() -> None:
    """Kafka 4.x ``OffsetMetadataManager.deleteAllOffsets``: pending transactional offsets get
    a tombstone with the rest, so a later COMMIT marker puts nothing back."""
    h = harness()
    h.commit({("t", 0): 5})
    txn_commit(h, {("t", 1): 10})
    r: Reply[object] = Reply()
    h.c.delete_groups([GROUP], r)
    tombstones = {
        (rec.key.topic, rec.key.partition)
        for rec in h.sink.records
        if isinstance(rec.key, OffsetCommitKey) and rec.value is None
    }
    assert tombstones == {("t", 0), ("t", 1)}
    end(h, commit=True)
    assert h.c.group(GROUP) is None


def test_offset_delete_tombstones_a_pending_txn_offset_so_the_commit_marker_puts_nothing_back() -> None:
    """Kafka 4.x ``OffsetMetadataManager.deleteOffsets``: "A tombstone is written if an offset is
    present in the main storage or if a pending transactional offset exists"; the tombstone's
    replay drops the pending offset."""
    h = harness()
    txn_commit(h, {("t", 0): 10})
    r: Reply[OffsetDeleteResponse] = Reply()
    h.c.offset_delete(
        OffsetDeleteRequest(group_id=GROUP, topics=(OffsetDeleteTopic(name="t", partitions=(0,)),)), r
    )
    assert r.value.topics[0].partitions[0].error is ErrorCode.NONE
    assert h.sink.records[-1].key == OffsetCommitKey(group=GROUP, topic="t", partition=0)
    assert h.sink.records[-1].value is None
    end(h, commit=True)
    assert offsets(h) == {}


# ------------------------------------------------------------------ loading


def _commit_record(topic: str, partition: int, offset: int) -> tuple[bytes | None, bytes | None, tuple[()]]:
    key, value = encode_record(
        CoordinatorRecord(
            key=OffsetCommitKey(group=GROUP, topic=topic, partition=partition),
            value=OffsetCommitValue(
                offset=offset, leader_epoch=None, metadata="", commit_timestamp=1, expire_timestamp=None
            ),
        )
    )
    return key, value, ()


def _plain(*commits: tuple[str, int, int]) -> bytes:
    return build_batch([_commit_record(*c) for c in commits], timestamp_ms=1)


def _txn(pid: int, *commits: tuple[str, int, int]) -> bytes:
    return build_batch(
        [_commit_record(*c) for c in commits],
        timestamp_ms=1,
        producer_id=pid,
        producer_epoch=EPOCH,
        base_sequence=0,
        attributes=ATTR_TRANSACTIONAL,
    )


def _marker(pid: int, commit: bool) -> bytes:
    return build_marker_batch(
        producer_id=pid, producer_epoch=EPOCH, commit=commit, coordinator_epoch=0, timestamp_ms=1
    )


def _load(batches: list[bytes]) -> Harness:
    h = Harness()
    fresh = GroupCoordinator(h.config, ManualClock(h.clock.now_ms()), record_sink=ListSink())
    h.coordinator = fresh
    partition = fresh.partition_for(GROUP)
    fresh.begin_loading(partition)
    loader = OffsetsLoader(fresh, "__consumer_offsets", partition)
    for b in batches:
        loader.feed(parse_header(b), b)
    loader.finish()
    fresh.complete_loading(partition)
    return h


def test_load_with_committed_and_aborted_transactional_offset_commits() -> None:
    """GroupMetadataManagerTest.testLoadWithCommittedAndAbortedTransactionalOffsetCommits: the
    committed transaction's offsets load, the aborted one's do not."""
    h = _load(
        [
            _plain(("t", 0, 1), ("t", 1, 1)),
            _txn(PID, ("t", 0, 10)),
            _marker(PID, commit=True),
            _txn(OTHER_PID, ("t", 1, 20)),
            _marker(OTHER_PID, commit=False),
        ]
    )
    assert offsets(h) == {("t", 0): 10, ("t", 1): 1}
    assert h.c.pending_transactional_offsets(GROUP) == {}


def test_load_keeps_unresolved_transactional_offsets_pending_until_their_marker() -> None:
    """GroupMetadataManagerTest.testLoadTransactionalOffsetCommitsFromMultipleProducers / the
    open-transaction case: offsets of a transaction with no marker yet load as pending (a
    require_stable fetch sees UNSTABLE_OFFSET_COMMIT); the live marker then applies them."""
    h = _load([_plain(("t", 0, 1)), _txn(PID, ("t", 0, 10)), _txn(OTHER_PID, ("t", 1, 20))])
    assert offsets(h) == {("t", 0): 1}
    assert h.c.pending_transactional_offsets(GROUP) == {PID: {("t", 0): 10}, OTHER_PID: {("t", 1): 20}}
    assert stable_fetch(h, (0,)) == {0: (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)}
    end(h, commit=True, producer_id=OTHER_PID)
    end(h, commit=True, producer_id=PID)
    assert offsets(h) == {("t", 0): 10, ("t", 1): 20}


def test_load_a_plain_commit_after_the_transactional_one_wins() -> None:
    """GroupMetadataManagerTest.testGroupLoadWithConsumerAndTransactionalOffsetCommitsConsumerWins
    (and ...TransactionWins for the opposite order)."""
    consumer_wins = _load([_txn(PID, ("t", 0, 10)), _plain(("t", 0, 7)), _marker(PID, commit=True)])
    assert offsets(consumer_wins) == {("t", 0): 7}
    txn_wins = _load([_plain(("t", 0, 7)), _txn(PID, ("t", 0, 10)), _marker(PID, commit=True)])
    assert offsets(txn_wins) == {("t", 0): 10}


def test_a_live_marker_during_loading_is_applied_when_the_load_completes() -> None:
    """A marker written (e.g. by the transaction coordinator's recovery) while the partition is
    still loading is applied once the load completes, after the pending offsets it ends."""
    h = Harness()
    fresh = GroupCoordinator(h.config, ManualClock(h.clock.now_ms()), record_sink=ListSink())
    h.coordinator = fresh
    partition = fresh.partition_for(GROUP)
    fresh.begin_loading(partition)
    fresh.complete_transaction(partition, PID, True)  # before the loader read the batch
    loader = OffsetsLoader(fresh, "__consumer_offsets", partition)
    b = _txn(PID, ("t", 0, 10))
    loader.feed(parse_header(b), b)
    loader.finish()
    fresh.complete_loading(partition)
    assert offsets(h) == {("t", 0): 10}
