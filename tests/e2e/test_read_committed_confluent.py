"""confluent-kafka read_committed against a log holding committed, aborted and open transactions.

The transactional batches and their COMMIT / ABORT markers are written into the partition's
log on disk while the broker is stopped, so the log holds exactly the interleaving the test
needs, an open transaction included (the wire path, a transactional producer, is
tests/e2e/test_transactions_confluent.py); the broker then serves them to a real client. Kafka:
``UnifiedLog.read`` with ``FetchIsolation.TXN_COMMITTED`` (stop at the LSO, attach
``collectAbortedTransactions``), ``ListOffsets`` latest under READ_COMMITTED answers the LSO;
librdkafka drops aborted records using the Fetch response's ``aborted_transactions``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from conftest import BrokerProcess
from test_produce_consume_confluent import create_topic
from test_transactions_confluent import read_isolated

from groupcoord.clock import SystemClock
from groupcoord.formats.batch import ATTR_TRANSACTIONAL, build_batch
from groupcoord.storage.control import build_marker_batch
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig

pytestmark = pytest.mark.e2e

TOPIC = "txn-read"


def _data(pid: int, seq: int, values: list[str], *, txn: bool = True) -> bytes:
    return build_batch(
        [(None, v.encode(), ()) for v in values],
        timestamp_ms=int(time.time() * 1000),
        producer_id=pid if txn else -1,
        producer_epoch=0 if txn else -1,
        base_sequence=seq if txn else -1,
        attributes=ATTR_TRANSACTIONAL if txn else 0,
    )


def _marker(pid: int, commit: bool) -> bytes:
    return build_marker_batch(
        producer_id=pid,
        producer_epoch=0,
        commit=commit,
        coordinator_epoch=0,
        timestamp_ms=int(time.time() * 1000),
    )


def test_read_committed_skips_aborted_and_stops_at_the_open_transaction(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    broker = broker_factory()
    create_topic(broker.bootstrap, TOPIC, 1)
    broker.stop()
    plog = PartitionLog(broker.data_dir / f"{TOPIC}-0", LogConfig(), clock=SystemClock())
    plog.append(_data(-1, -1, ["plain-0"], txn=False))  # 0
    plog.append(_data(10, 0, ["c-0", "c-1"]))  # 1-2: pid 10, committed below
    plog.append(_data(11, 0, ["a-0", "a-1"]))  # 3-4: pid 11, aborted below
    plog.append(_marker(10, commit=True))  # 5
    plog.append(_marker(11, commit=False))  # 6
    plog.append(_data(-1, -1, ["plain-1"], txn=False))  # 7
    plog.append(_data(12, 0, ["open-0"]))  # 8: pid 12, still open
    plog.append(_data(-1, -1, ["plain-2"], txn=False))  # 9
    assert (plog.last_stable_offset, plog.log_end_offset) == (8, 10)
    plog.close()
    broker.start()

    committed = read_isolated(
        broker.bootstrap, TOPIC, "read_committed", lambda got: "plain-1" in got, with_high_watermark=True
    )
    assert committed == ["plain-0", "c-0", "c-1", "plain-1", "hi=8"]

    everything = read_isolated(
        broker.bootstrap, TOPIC, "read_uncommitted", lambda got: "plain-2" in got, with_high_watermark=True
    )
    assert everything == ["plain-0", "c-0", "c-1", "a-0", "a-1", "plain-1", "open-0", "plain-2", "hi=10"]
