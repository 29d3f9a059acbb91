"""Transactional offsets across a broker crash (SIGKILL) and restart, over the wire.

The group coordinator rebuilds pending transactional offsets from ``__consumer_offsets``
(transactional batches and markers, Kafka's ``CoordinatorLoaderImpl`` / 3.x
``GroupMetadataManager.loadGroupsAndOffsets``), and the transaction coordinator finishes what
its log left open (``TransactionStateManager`` load: an Ongoing transaction is aborted at its
timeout, as ``abortTimedOutTransactions`` does after a restart).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from groupcoord.errors import ErrorCode
from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker

pytestmark = pytest.mark.e2e

INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT, OFFSET_FETCH = 22, 25, 26, 28, 9
GROUP, TOPIC = "restart-group", "restart-in"


def _retry(call: Callable[[], Any], retriable: tuple[ErrorCode, ...], what: str) -> Any:
    """Retried while the answer is retriable (loading, a transaction completing), as clients do."""
    deadline = time.monotonic() + 30
    while int((r := call()).error_code) in retriable:
        assert time.monotonic() < deadline, f"{what}: still {r.error_code}"
        time.sleep(0.05)
    return r


def _stable_offset(c: WireClient) -> tuple[int, int]:
    r = c.call(
        OFFSET_FETCH,
        8,
        groups=[{"group_id": GROUP, "topics": [{"name": TOPIC, "partition_indexes": [0]}]}],
        require_stable=True,
    )
    g = r.groups[0]
    if int(g.error_code) != ErrorCode.NONE:
        return -1, int(g.error_code)
    (p,) = g.topics[0].partitions
    return int(p.committed_offset), int(p.error_code)


def _open_txn_with_offset(c: WireClient, tid: str, offset: int, timeout_ms: int) -> tuple[int, int]:
    init = _retry(
        lambda: c.call(INIT_PRODUCER_ID, 4, transactional_id=tid, transaction_timeout=timeout_ms),
        (ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS),
        "InitProducerId",
    )
    pid, epoch = int(init.producer_id), int(init.producer_epoch)
    add = c.call(
        ADD_OFFSETS_TO_TXN, 3, transactional_id=tid, producer_id=pid, producer_epoch=epoch, group_id=GROUP
    )
    assert int(add.error_code) == ErrorCode.NONE
    r = c.call(
        TXN_OFFSET_COMMIT,
        3,
        transactional_id=tid,
        group_id=GROUP,
        producer_id=pid,
        producer_epoch=epoch,
        generation_id=-1,
        member_id="",
        topics=[
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": offset,
                        "committed_leader_epoch": -1,
                        "committed_metadata": "",
                    }
                ],
            }
        ],
    )
    assert int(r.topics[0].partitions[0].error_code) == ErrorCode.NONE
    return pid, epoch


def _wait_stable(c: WireClient, want: tuple[int, int]) -> None:
    deadline = time.monotonic() + 30
    while (got := _stable_offset(c)) != want:
        assert time.monotonic() < deadline, got
        time.sleep(0.05)


def test_committed_and_open_transactional_offsets_survive_a_broker_sigkill() -> None:
    """A committed transaction's offset is read back from the log after the crash; a transaction
    left open (its TxnOffsetCommit durable, no EndTxn) is pending again after the restart
    (UNSTABLE_OFFSET_COMMIT), and the restarted transaction coordinator aborts it at its
    timeout (moved to by the testing broker's time control), which drops the pending offset."""
    with Broker(subprocess=True) as broker:
        broker.create_topic(TOPIC, 1)
        with WireClient("127.0.0.1", broker.port, client_id="restart") as c:
            pid, epoch = _open_txn_with_offset(c, "restart-committed", 5, 60_000)
            end = c.call(
                END_TXN,
                3,
                transactional_id="restart-committed",
                producer_id=pid,
                producer_epoch=epoch,
                committed=True,
            )
            assert int(end.error_code) == ErrorCode.NONE
            _wait_stable(c, (5, ErrorCode.NONE))
            _open_txn_with_offset(c, "restart-open", 9, 60_000)
            assert _stable_offset(c) == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)
        broker.restart(hard=True)  # SIGKILL, then a new process on the same data
        with WireClient("127.0.0.1", broker.port, client_id="restart") as c:
            deadline = time.monotonic() + 30
            while (got := _stable_offset(c))[1] == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                assert time.monotonic() < deadline
                time.sleep(0.05)
            assert got == (-1, ErrorCode.UNSTABLE_OFFSET_COMMIT)  # the open transaction's offset: pending
            broker.advance(61)  # past the open transaction's timeout: aborted, the committed 5 stays
            _wait_stable(c, (5, ErrorCode.NONE))
