"""transactional.id.expiration.ms: idle transactional ids are removed on the coordinator's timer.

Kafka: ``TransactionStateManager.removeExpiredTransactionalIds`` (run every
``transaction.remove.expired.transaction.cleanup.interval.ms``), tested in
``TransactionStateManagerTest`` (``shouldRemoveCompleteCommitExpiredTransactionalIds``,
``shouldRemoveCompleteAbortExpiredTransactionalIds``, ``shouldRemoveEmptyExpiredTransactionalIds``,
``shouldNotRemoveOngoingTransactionalIds``, ``shouldNotRemovePrepareCommitTransactionalIds``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from groupcoord.broker.state import Broker
from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.errors import ErrorCode
from groupcoord.runtime.txn_runtime import TxnRuntime
from groupcoord.transactions.records import decode_key
from groupcoord.transactions.shard import TxnConfig

from .txn_harness import TIMEOUT, Harness

T = "txn-x"
EXPIRY = 10_000
INTERVAL = 1_000


def _harness() -> Harness:
    return Harness(
        config=TxnConfig(
            num_partitions=4, transactional_id_expiration_ms=EXPIRY, remove_expired_interval_ms=INTERVAL
        )
    )


def _last_record(h: Harness, tid: str) -> tuple[str, bytes | None]:
    key, value = h.log[h.shard.partition_for(tid)][-1]
    return decode_key(key), value


@pytest.mark.parametrize("end", ["Empty", "CompleteCommit", "CompleteAbort"])
def test_an_idle_transactional_id_is_tombstoned_and_forgotten_after_the_expiration(end: str) -> None:
    """Expired from Empty / CompleteCommit / CompleteAbort once idle for the expiration (checked
    every interval); the tombstone keeps it gone across a restart, and its next InitProducerId
    starts afresh with a new producer id at epoch 0."""
    h = _harness()
    r = h.init(T)
    pid, epoch = r.producer_id, r.producer_epoch
    if end != "Empty":
        assert h.add(T, pid, epoch, ("out", 0)).error is ErrorCode.NONE
        assert h.end(T, pid, epoch, commit=end == "CompleteCommit").error is ErrorCode.NONE
    assert h.state(T) == end
    h.advance(EXPIRY - INTERVAL)  # idle, but not yet for the whole expiration
    assert h.state(T) == end
    h.advance(2 * INTERVAL)
    assert h.shard.transaction(T) is None
    assert _last_record(h, T) == (T, None)
    h.restart()
    assert h.shard.transaction(T) is None
    again = h.init(T)
    assert again.error is ErrorCode.NONE
    assert again.producer_id != pid and again.producer_epoch == 0


def test_an_ongoing_transaction_does_not_expire_and_its_id_expires_after_it_ends() -> None:
    """An Ongoing id older than the expiration stays (here the transaction timeout, 60 s, is
    longer than the expiration); once the timeout aborted it, it expires an expiration later."""
    h = _harness()
    r = h.init(T)
    assert h.add(T, r.producer_id, r.producer_epoch, ("out", 0)).error is ErrorCode.NONE
    h.advance(3 * EXPIRY)
    assert h.state(T) == "Ongoing"
    h.advance(TIMEOUT - 3 * EXPIRY)  # the transaction timeout aborts it
    assert h.state(T) == "CompleteAbort"
    h.advance(EXPIRY + INTERVAL)
    assert h.shard.transaction(T) is None


def test_a_failed_tombstone_keeps_the_id_and_the_next_check_expires_it() -> None:
    """Meanwhile the id has a write in flight: InitProducerId gets CONCURRENT_TRANSACTIONS."""
    h = _harness()
    h.init(T)
    h.hold = True
    h.advance(EXPIRY + INTERVAL)
    assert len(h.held_writes) == 1 and h.held_writes[0].records[0].value is None
    assert h.init(T).error is ErrorCode.CONCURRENT_TRANSACTIONS
    h.apply(h.complete_held(ErrorCode.NOT_LEADER_OR_FOLLOWER))
    assert h.state(T) == "Empty"
    h.hold = False
    h.advance(INTERVAL)
    assert h.shard.transaction(T) is None


def test_an_id_used_again_before_the_expiration_is_kept() -> None:
    """Every transaction updates the id's last-update time, which the expiration counts from."""
    h = _harness()
    r = h.init(T)
    pid, epoch = r.producer_id, r.producer_epoch
    h.advance(EXPIRY - 2 * INTERVAL)
    assert h.add(T, pid, epoch, ("out", 0)).error is ErrorCode.NONE
    assert h.end(T, pid, epoch, commit=True).error is ErrorCode.NONE
    h.advance(EXPIRY - INTERVAL)
    assert h.state(T) == "CompleteCommit"


def test_the_broker_settings_reach_the_transaction_coordinator(tmp_path: Path) -> None:
    """``transaction.max.timeout.ms``, ``transactional.id.expiration.ms`` and
    ``transaction.remove.expired.transaction.cleanup.interval.ms`` (Kafka's names) configure the
    coordinator; InitProducerId over the limit is INVALID_TRANSACTION_TIMEOUT."""
    config = BrokerConfig.load(
        None,
        [
            "transaction.max.timeout.ms=5000",
            "transactional.id.expiration.ms=20000",
            "transaction.remove.expired.transaction.cleanup.interval.ms=700",
        ],
    )
    broker = Broker.open(config, tmp_path, ManualClock())
    try:
        rt = TxnRuntime(broker)
        c = rt.config
        assert (c.max_timeout_ms, c.transactional_id_expiration_ms, c.remove_expired_interval_ms) == (
            5000,
            20000,
            700,
        )
    finally:
        asyncio.run(broker.close())
    h = Harness(config=c)
    assert h.init(T, timeout_ms=5001).error is ErrorCode.INVALID_TRANSACTION_TIMEOUT
    assert h.init(T, timeout_ms=5000).error is ErrorCode.NONE
