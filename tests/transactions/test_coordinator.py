"""The transaction coordinator shard under a ManualClock: every transition, fencing, timeouts,
and a restart (replay of ``__transaction_state``) in each state.

Behaviour follows Kafka's ``TransactionCoordinator`` (``handleInitProducerId``,
``handleAddPartitionsToTransaction``, ``handleEndTransaction``, ``abortTimedOutTransactions``)
and ``TransactionMetadata``; Kafka's ``TransactionCoordinatorTest`` covers the same cases.
"""

from __future__ import annotations

import pytest

from groupcoord.errors import ErrorCode
from groupcoord.transactions.api import (
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListTransactionsResponse,
)
from groupcoord.transactions.records import decode_value
from groupcoord.transactions.state import (
    TRANSITION_CAUSES,
    VALID_PREVIOUS_STATES,
    TransactionState,
)
from groupcoord.transactions.timers import TxnTimeout

from .txn_harness import TIMEOUT, Harness

T = "txn-a"


def _ready(h: Harness, tid: str = T) -> tuple[int, int]:
    r = h.init(tid)
    assert r.error is ErrorCode.NONE
    return r.producer_id, r.producer_epoch


def _logged_states(h: Harness, tid: str = T) -> list[str]:
    p = h.shard.partition_for(tid)
    out = []
    for _key, value in h.log.get(p, []):
        v = decode_value(value)
        assert v is not None
        out.append(v.state.display_name)
    return out


# ---------------------------------------------------------------------- the table
def test_every_valid_edge_has_a_cause_and_every_cause_is_a_valid_edge() -> None:
    edges = {(src, dst) for dst, prev in VALID_PREVIOUS_STATES.items() for src in prev}
    assert edges == set(TRANSITION_CAUSES)


def test_state_bytes_and_names_are_kafkas() -> None:
    """Kafka's ``TransactionState`` ids and names (DescribeTransactions reports the names)."""
    assert [(s.value, s.display_name) for s in TransactionState] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]


# ---------------------------------------------------------------------- InitProducerId
def test_init_producer_id_allocates_an_id_at_epoch_0_and_writes_empty() -> None:
    h = Harness()
    r = h.init(T)
    assert (r.error, r.producer_id, r.producer_epoch) == (ErrorCode.NONE, 1000, 0)
    assert h.state(T) == "Empty"
    assert _logged_states(h) == ["Empty"]


def test_init_producer_id_again_bumps_the_epoch_keeping_the_id() -> None:
    h = Harness()
    pid, _ = _ready(h)
    r = h.init(T)
    assert (r.error, r.producer_id, r.producer_epoch) == (ErrorCode.NONE, pid, 1)


def test_init_producer_id_is_answered_only_once_the_record_is_durable() -> None:
    h = Harness()
    h.hold = True
    assert h.init(T) is None
    assert len(h.held_writes) == 1
    result = h.complete_held()
    assert [(r.error, r.producer_id, r.producer_epoch) for _, r in result.responses] == [
        (ErrorCode.NONE, 1000, 0)
    ]


def test_init_producer_id_with_a_failed_write_answers_the_mapped_error() -> None:
    """``appendTransactionToLog``: NOT_ENOUGH_REPLICAS maps to COORDINATOR_NOT_AVAILABLE."""
    h = Harness()
    h.hold = True
    got: list[InitProducerIdResponse] = []
    h.apply(
        h.shard.init_producer_id(
            InitProducerIdRequest(transactional_id=T, transaction_timeout_ms=TIMEOUT), got.append
        )
    )
    h.hold = False
    h.finish_write(h.held_writes.pop(), ErrorCode.NOT_ENOUGH_REPLICAS)
    assert [g.error for g in got] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert h.init(T).producer_epoch == 0  # nothing durable changed: the next try gets epoch 0


@pytest.mark.parametrize("timeout_ms", [0, -1, 900_001])
def test_init_producer_id_with_an_invalid_timeout(timeout_ms: int) -> None:
    h = Harness()
    assert h.init(T, timeout_ms=timeout_ms).error is ErrorCode.INVALID_TRANSACTION_TIMEOUT


def test_init_producer_id_with_an_empty_transactional_id_is_invalid() -> None:
    assert Harness().init("").error is ErrorCode.INVALID_REQUEST


def test_init_producer_id_while_a_write_is_in_flight_is_concurrent() -> None:
    h = Harness()
    _ready(h)
    h.hold = True
    assert h.init(T) is None
    assert h.init(T).error is ErrorCode.CONCURRENT_TRANSACTIONS


def test_init_producer_id_with_a_wrong_expected_producer_id_is_fenced() -> None:
    """KIP-360: an expected id that is neither the current nor the previous one is fenced."""
    h = Harness()
    pid, epoch = _ready(h)
    assert h.init(T, pid=pid + 77, epoch=epoch).error is ErrorCode.PRODUCER_FENCED


def test_init_producer_id_with_the_current_id_and_epoch_bumps() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    r = h.init(T, pid=pid, epoch=epoch)
    assert (r.error, r.producer_id, r.producer_epoch) == (ErrorCode.NONE, pid, epoch + 1)


def test_init_producer_id_retry_with_the_previous_epoch_does_not_bump_again() -> None:
    """``prepareIncrementProducerEpoch``: an expected epoch equal to lastProducerEpoch is a retry."""
    h = Harness()
    pid, _ = _ready(h)
    h.init(T, pid=pid, epoch=0)  # -> epoch 1, last epoch 0
    r = h.init(T, pid=pid, epoch=0)
    assert (r.error, r.producer_epoch) == (ErrorCode.NONE, 1)
    assert h.init(T, pid=pid, epoch=5).error is ErrorCode.PRODUCER_FENCED


def test_exhausted_epoch_rotates_to_a_new_producer_id() -> None:
    h = Harness()
    pid, _ = _ready(h)
    meta = h.shard.transaction(T)
    assert meta is not None
    meta.producer_epoch = 32766
    r = h.init(T)
    assert (r.error, r.producer_epoch) == (ErrorCode.NONE, 0)
    assert r.producer_id != pid
    assert meta.last_producer_id == pid


# ---------------------------------------------------------------------- AddPartitions / AddOffsets
def test_add_partitions_moves_empty_to_ongoing_and_arms_the_timeout() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    start = h.clock.now_ms()
    r = h.add(T, pid, epoch, ("out", 0), ("out", 1))
    assert r.error is ErrorCode.NONE
    assert h.state(T) == "Ongoing"
    assert h.shard.timer_deadline(TxnTimeout(T)) == start + TIMEOUT
    meta = h.shard.transaction(T)
    assert meta is not None and meta.partitions == {("out", 0), ("out", 1)}


def test_add_partitions_already_in_the_transaction_writes_nothing() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    before = len(h.log[h.shard.partition_for(T)])
    assert h.add(T, pid, epoch, ("out", 0)).error is ErrorCode.NONE
    assert len(h.log[h.shard.partition_for(T)]) == before


def test_add_more_partitions_keeps_ongoing_and_its_start_time() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    meta = h.shard.transaction(T)
    assert meta is not None
    start = meta.start_ms
    h.clock.advance(1000)
    assert h.add(T, pid, epoch, ("out", 3)).error is ErrorCode.NONE
    assert (meta.state, meta.start_ms) == (TransactionState.ONGOING, start)
    assert meta.partitions == {("out", 0), ("out", 3)}


def test_add_offsets_adds_the_groups_consumer_offsets_partition() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    assert h.add_offsets(T, pid, epoch, "my-group").error is ErrorCode.NONE
    meta = h.shard.transaction(T)
    from groupcoord.coordinator.records import partition_for

    assert meta is not None and meta.partitions == {("__consumer_offsets", partition_for("my-group", 50))}


def test_add_partitions_errors() -> None:
    """``handleAddPartitionsToTransaction``: unknown id / wrong id -> INVALID_PRODUCER_ID_MAPPING,
    wrong epoch -> PRODUCER_FENCED, prepare states -> CONCURRENT_TRANSACTIONS."""
    h = Harness()
    assert h.add("nobody", 1, 0, ("out", 0)).error is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    pid, epoch = _ready(h)
    assert h.add(T, pid + 1, epoch, ("out", 0)).error is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.add(T, pid, epoch + 1, ("out", 0)).error is ErrorCode.PRODUCER_FENCED
    assert h.add_offsets(T, pid, epoch - 1, "g").error is ErrorCode.PRODUCER_FENCED
    h.add(T, pid, epoch, ("out", 0))
    h.hold = True
    h.end(T, pid, epoch, True)  # PrepareCommit in flight
    assert h.add(T, pid, epoch, ("out", 1)).error is ErrorCode.CONCURRENT_TRANSACTIONS
    h.finish_write(h.held_writes.pop(0))  # PrepareCommit durable, markers held
    assert h.state(T) == "PrepareCommit"
    assert h.add(T, pid, epoch, ("out", 1)).error is ErrorCode.CONCURRENT_TRANSACTIONS


# ---------------------------------------------------------------------- EndTxn
@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_prepares_writes_markers_then_completes(commit: bool) -> None:
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0), ("other", 2))
    h.hold = True
    assert h.end(T, pid, epoch, commit) is None  # answered when the prepare record is durable
    result = h.complete_held()
    got = [resp for _, resp in result.responses]
    assert [g.error for g in got] == [ErrorCode.NONE]
    assert h.state(T) == ("PrepareCommit" if commit else "PrepareAbort")
    (mw,) = result.events
    assert (mw.commit, mw.producer_id, mw.producer_epoch, mw.partitions) == (
        commit,
        pid,
        epoch,
        (("other", 2), ("out", 0)),
    )
    assert h.shard.timer_deadline(TxnTimeout(T)) is None
    done = h.shard.complete_markers(mw, ErrorCode.NONE)
    (complete,) = done.writes
    h.hold = False
    h.finish_write(complete)
    assert h.state(T) == ("CompleteCommit" if commit else "CompleteAbort")
    meta = h.shard.transaction(T)
    assert meta is not None and meta.partitions == set()


def test_end_txn_from_empty_is_invalid_txn_state() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    assert h.end(T, pid, epoch, True).error is ErrorCode.INVALID_TXN_STATE


def test_end_txn_retries_after_completion() -> None:
    """A retried EndTxn after completion: same decision NONE, opposite INVALID_TXN_STATE."""
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    assert h.end(T, pid, epoch, True).error is ErrorCode.NONE
    assert h.state(T) == "CompleteCommit"
    assert h.end(T, pid, epoch, True).error is ErrorCode.NONE
    assert h.end(T, pid, epoch, False).error is ErrorCode.INVALID_TXN_STATE
    h.add(T, pid, epoch, ("out", 0))
    assert h.end(T, pid, epoch, False).error is ErrorCode.NONE
    assert h.state(T) == "CompleteAbort"
    assert h.end(T, pid, epoch, False).error is ErrorCode.NONE
    assert h.end(T, pid, epoch, True).error is ErrorCode.INVALID_TXN_STATE


def test_end_txn_while_preparing() -> None:
    """PrepareCommit: commit retry -> CONCURRENT_TRANSACTIONS, abort -> INVALID_TXN_STATE."""
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    h.hold = True
    h.end(T, pid, epoch, True)
    h.finish_write(h.held_writes.pop(0))
    assert h.end(T, pid, epoch, True).error is ErrorCode.CONCURRENT_TRANSACTIONS
    assert h.end(T, pid, epoch, False).error is ErrorCode.INVALID_TXN_STATE


def test_end_txn_errors() -> None:
    h = Harness()
    assert h.end("nobody", 1, 0, True).error is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.end("", 1, 0, True).error is ErrorCode.INVALID_REQUEST
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    assert h.end(T, pid + 1, epoch, True).error is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.end(T, pid, epoch + 1, True).error is ErrorCode.PRODUCER_FENCED


def test_the_next_transaction_starts_from_complete_commit() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    h.end(T, pid, epoch, True)
    h.clock.advance(5)
    assert h.add(T, pid, epoch, ("out", 1)).error is ErrorCode.NONE
    meta = h.shard.transaction(T)
    assert meta is not None
    assert (meta.state, meta.partitions, meta.start_ms) == (
        TransactionState.ONGOING,
        {("out", 1)},
        h.clock.now_ms(),
    )
    assert _logged_states(h) == [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "CompleteCommit",
        "Ongoing",
    ]


def test_failed_markers_are_retried_after_the_backoff() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    h.hold = True
    h.end(T, pid, epoch, True)
    h.finish_write(h.held_writes.pop(0))
    mw = h.held_markers.pop(0)
    h.finish_markers(mw, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    assert h.state(T) == "PrepareCommit" and not h.held_markers
    h.advance(99)
    assert not h.held_markers
    h.advance(1)
    assert len(h.held_markers) == 1
    h.release()
    assert h.state(T) == "CompleteCommit"


# ---------------------------------------------------------------------- fencing
def test_a_new_instance_fences_the_old_producer_and_aborts_its_transaction() -> None:
    """``handleInitProducerId`` in Ongoing: prepareFenceProducerEpoch, abort, CONCURRENT_TRANSACTIONS;
    the retry bumps the epoch again. The old producer gets PRODUCER_FENCED from then on."""
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    h.hold = True
    assert h.init(T) is None  # answered after the abort's prepare record is durable
    meta = h.shard.transaction(T)
    assert meta is not None
    assert meta.state is TransactionState.PREPARE_EPOCH_FENCE and meta.producer_epoch == epoch + 1
    assert h.add(T, pid, epoch, ("out", 1)).error is ErrorCode.PRODUCER_FENCED
    assert h.end(T, pid, epoch, True).error is ErrorCode.PRODUCER_FENCED
    res = h.complete_held()
    got = [r for _, r in res.responses]
    assert [g.error for g in got] == [ErrorCode.CONCURRENT_TRANSACTIONS]
    assert h.state(T) == "PrepareAbort"
    h.apply(res)
    h.release()
    assert h.state(T) == "CompleteAbort"
    assert h.markers[-1].commit is False and h.markers[-1].producer_epoch == epoch + 1
    r = h.init(T)
    assert (r.error, r.producer_id, r.producer_epoch) == (ErrorCode.NONE, pid, epoch + 2)
    assert _logged_states(h) == ["Empty", "Ongoing", "PrepareAbort", "CompleteAbort", "Empty"]


def test_a_failed_fence_write_puts_the_transaction_back_in_ongoing() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    h.hold = True
    h.init(T)
    h.hold = False
    got = [r for _, r in h.complete_held(ErrorCode.REQUEST_TIMED_OUT).responses]
    assert [g.error for g in got] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    meta = h.shard.transaction(T)
    assert meta is not None
    assert (meta.state, meta.producer_epoch) == (TransactionState.ONGOING, epoch)


# ---------------------------------------------------------------------- timeout
def test_an_expired_transaction_is_aborted_and_its_producer_fenced() -> None:
    """``abortTimedOutTransactions``: fence (epoch bump) then abort with the bumped epoch."""
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    h.advance(TIMEOUT - 1)
    assert h.state(T) == "Ongoing"
    h.advance(1)
    assert h.state(T) == "CompleteAbort"
    assert (h.markers[-1].commit, h.markers[-1].producer_epoch) == (False, epoch + 1)
    assert h.end(T, pid, epoch, True).error is ErrorCode.PRODUCER_FENCED
    assert h.add(T, pid, epoch, ("out", 0)).error is ErrorCode.PRODUCER_FENCED


def test_a_committed_transaction_does_not_time_out() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    h.end(T, pid, epoch, True)
    h.advance(TIMEOUT * 2)
    assert h.state(T) == "CompleteCommit"
    assert [m.commit for m in h.markers] == [True]


def test_timeout_with_a_write_in_flight_tries_again_later() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 0))
    h.hold = True
    h.add(T, pid, epoch, ("out", 1))  # an Ongoing write in flight
    h.advance(TIMEOUT)
    assert h.state(T) == "Ongoing"
    assert h.shard.timer_deadline(TxnTimeout(T)) == h.clock.now_ms() + 10_000


# ---------------------------------------------------------------------- restart
def _restart_in(h: Harness, state: str) -> tuple[int, int]:
    pid, epoch = _ready(h)
    if state == "Empty":
        return pid, epoch
    h.add(T, pid, epoch, ("out", 0), ("out", 1))
    if state == "Ongoing":
        return pid, epoch
    h.hold = state in ("PrepareCommit", "PrepareAbort")
    h.end(T, pid, epoch, state in ("PrepareCommit", "CompleteCommit"))
    if h.hold:
        h.finish_write(h.held_writes.pop(0))
        h.held_markers.clear()  # the broker died before the markers were written
        h.hold = False
    return pid, epoch


@pytest.mark.parametrize(
    "state", ["Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort"]
)
def test_restart_restores_the_state_from_the_log(state: str) -> None:
    h = Harness()
    pid, _epoch = _restart_in(h, state)
    assert h.state(T) == state
    before = h.shard.transaction(T)
    assert before is not None
    snapshot = (before.producer_id, before.producer_epoch, before.timeout_ms, before.start_ms)
    markers_before = len(h.markers)
    h.hold = True
    h.restart()
    after = h.shard.transaction(T)
    assert after is not None
    assert (after.producer_id, after.producer_epoch, after.timeout_ms, after.start_ms) == snapshot
    assert after.state.display_name == state
    if state in ("PrepareCommit", "PrepareAbort"):
        # Recovery completes the decision: the markers are written again, then Complete*.
        (mw,) = h.held_markers
        assert (mw.commit, mw.partitions) == (state == "PrepareCommit", (("out", 0), ("out", 1)))
        h.release()
        assert h.state(T) == ("CompleteCommit" if state == "PrepareCommit" else "CompleteAbort")
    else:
        assert not h.held_markers and len(h.markers) == markers_before
    h.hold = False
    if state == "Ongoing":
        # The timeout runs from the recorded start: aborted at start + timeout, not later.
        assert h.shard.timer_deadline(TxnTimeout(T)) == after.start_ms + TIMEOUT
        h.advance(TIMEOUT)
        assert h.state(T) == "CompleteAbort"
    # the producer (or its successor) carries on after the restart
    r = h.init(T)
    assert r.error is ErrorCode.NONE and r.producer_id == pid


def test_requests_while_loading_get_load_in_progress_and_others_not_coordinator() -> None:
    h = Harness()
    h.shard = h._new_shard()
    p = h.shard.partition_for(T)
    h.apply(h.shard.begin_loading(p))
    assert h.init(T).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    other = next(f"t{i}" for i in range(100) if h.shard.partition_for(f"t{i}") != p)
    assert h.init(other).error is ErrorCode.NOT_COORDINATOR


def test_a_tombstone_removes_the_id_on_replay() -> None:
    from groupcoord.transactions.records import TxnRecord

    h = Harness()
    _ready(h)
    h.shard.replay(TxnRecord(transactional_id=T, value=None))
    assert h.shard.transaction(T) is None


# ---------------------------------------------------------------------- describe / list
def test_describe_transactions_reports_state_partitions_and_errors() -> None:
    h = Harness()
    pid, epoch = _ready(h)
    h.add(T, pid, epoch, ("out", 1), ("out", 0), ("b", 4))
    got = []
    h.apply(h.shard.describe_transactions([T, "nobody"], got.append))
    (resp,) = got
    d, missing = resp.transactions
    assert (d.error, d.state, d.producer_id, d.producer_epoch, d.timeout_ms, d.topics) == (
        ErrorCode.NONE,
        "Ongoing",
        pid,
        epoch,
        TIMEOUT,
        (("b", (4,)), ("out", (0, 1))),
    )
    assert missing.error is ErrorCode.TRANSACTIONAL_ID_NOT_FOUND


def test_list_transactions_filters_by_state_and_producer_id() -> None:
    """KIP-664 ListTransactions: unknown state names are echoed back as unknown filters."""
    h = Harness()
    pa, ea = _ready(h, "a")
    pb, _ = _ready(h, "b")
    h.add("a", pa, ea, ("out", 0))

    def lst(states: list[str], pids: list[int]) -> ListTransactionsResponse:
        got: list[ListTransactionsResponse] = []
        h.apply(h.shard.list_transactions(states, pids, got.append))
        return got[0]

    everything = lst([], [])
    assert [(t.transactional_id, t.state) for t in everything.transactions] == [
        ("a", "Ongoing"),
        ("b", "Empty"),
    ]
    assert [t.transactional_id for t in lst(["Ongoing"], []).transactions] == ["a"]
    assert [t.transactional_id for t in lst([], [pb]).transactions] == ["b"]
    r = lst(["Bogus", "Empty"], [])
    assert r.unknown_state_filters == ("Bogus",) and [t.transactional_id for t in r.transactions] == ["b"]


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_writes_the_marker_to_the_groups_offsets_partition_too(commit: bool) -> None:
    """EndTxn after AddOffsetsToTxn: the COMMIT/ABORT marker goes to every partition of the
    transaction, the group's ``__consumer_offsets`` partition included (Kafka's
    ``TransactionMarkerChannelManager.addTxnMarkersToSend``), with the producer's id and epoch;
    there the group coordinator puts the transaction's offsets in place or drops them."""
    from groupcoord.coordinator.records import partition_for

    h = Harness()
    pid, epoch = _ready(h)
    assert h.add(T, pid, epoch, ("out", 0)).error is ErrorCode.NONE
    assert h.add_offsets(T, pid, epoch, "my-group").error is ErrorCode.NONE
    assert h.end(T, pid, epoch, commit).error is ErrorCode.NONE
    (marker,) = h.markers
    assert (marker.producer_id, marker.producer_epoch, marker.commit) == (pid, epoch, commit)
    assert set(marker.partitions) == {("out", 0), ("__consumer_offsets", partition_for("my-group", 50))}


def test_verify_partition_answers_whether_it_is_in_the_ongoing_transaction() -> None:
    """KIP-890 part 1 (Kafka's ``TransactionCoordinator.handleVerifyPartitionsInTransaction``,
    codes as ``AddPartitionsToTxnManager`` gives them to TxnOffsetCommit v0-4): in the
    transaction -> NONE; not added, or no transaction -> INVALID_TXN_STATE; unknown id or
    another producer id -> INVALID_PRODUCER_ID_MAPPING; another epoch -> INVALID_PRODUCER_EPOCH;
    completing -> CONCURRENT_TRANSACTIONS."""
    h = Harness()
    offsets = ("__consumer_offsets", 7)
    assert h.shard.verify_partition("nobody", 1, 0, offsets) is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    pid, epoch = _ready(h)
    assert h.shard.verify_partition(T, pid, epoch, offsets) is ErrorCode.INVALID_TXN_STATE  # Empty
    assert h.add(T, pid, epoch, ("out", 0)).error is ErrorCode.NONE
    assert h.shard.verify_partition(T, pid, epoch, ("out", 0)) is ErrorCode.NONE
    assert h.shard.verify_partition(T, pid, epoch, offsets) is ErrorCode.INVALID_TXN_STATE  # not added
    assert h.shard.verify_partition(T, pid + 1, epoch, ("out", 0)) is ErrorCode.INVALID_PRODUCER_ID_MAPPING
    assert h.shard.verify_partition(T, pid, epoch - 1, ("out", 0)) is ErrorCode.INVALID_PRODUCER_EPOCH
    h.hold = True
    h.end(T, pid, epoch, True)
    h.finish_write(h.held_writes.pop(0))  # PrepareCommit durable, markers held
    assert h.shard.verify_partition(T, pid, epoch, ("out", 0)) is ErrorCode.CONCURRENT_TRANSACTIONS
    h.release()
    assert h.shard.verify_partition(T, pid, epoch, ("out", 0)) is ErrorCode.INVALID_TXN_STATE  # complete
