"""Transactions in the pipeline: the ``kafka-log`` / ``kafka-log-batches`` sources expose the
producer and transaction flags of each batch and the type of control records (Kafka's
``ControlRecordType``: COMMIT / ABORT markers), and the lag tables carry the last stable offset
(what a read_committed consumer can reach: Kafka's ``UnifiedLog.lastStableOffset``, the first
offset of the earliest open transaction, else the log end) and the lag measured against it.

The log is written with the broker's own ``PartitionLog``; Spark is the session every pipeline
test shares (``conftest.py``).
"""

from __future__ import annotations

import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from groupcoord.clock import ManualClock
from groupcoord.coordinator.records import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from groupcoord.formats.batch import ATTR_TRANSACTIONAL, build_batch
from groupcoord.pipeline import commitpass
from groupcoord.pipeline.lag import lag
from groupcoord.pipeline.lagmap import NO_TXN, BatchIndex, lag_arrays, transactions, unstable_steps
from groupcoord.storage.control import build_marker_batch
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig

from .lag_oracle import lag_windowed

T0 = 1_700_000_000_000
S = 1_000


def _ts(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC)


@pytest.fixture(scope="module")
def txn_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One partition ``txn-0``: offsets 0..8, batch k appended at T0 + k-th second.

    0 plain | 1-2 pid 5 opens A | 3 pid 6 opens B | 4 ABORT A | 5 plain | 6 COMMIT B |
    7 pid 5 (epoch 1) opens C, left open | 8 plain
    """
    data = tmp_path_factory.mktemp("txn") / "data"
    plog, _ = PartitionLog.open(data / "txn-0", LogConfig(), ManualClock(T0))

    def plain(t: int) -> None:
        plog.append(build_batch([(b"k", b"plain", ())], timestamp_ms=T0 + t))

    def txn(t: int, pid: int, epoch: int, seq: int, n: int = 1) -> None:
        batch = build_batch(
            [(b"k", b"txn", ()) for _ in range(n)],
            timestamp_ms=T0 + t,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            attributes=ATTR_TRANSACTIONAL,
        )
        plog.append(batch)

    def marker(t: int, pid: int, epoch: int, commit: bool) -> None:
        batch = build_marker_batch(
            producer_id=pid, producer_epoch=epoch, commit=commit, coordinator_epoch=0, timestamp_ms=T0 + t
        )
        plog.append(batch)

    plain(1 * S)  # 0
    txn(2 * S, 5, 0, 0, n=2)  # 1-2
    txn(3 * S, 6, 0, 0)  # 3
    marker(4 * S, 5, 0, commit=False)  # 4
    plain(5 * S)  # 5
    marker(6 * S, 6, 0, commit=True)  # 6
    txn(7 * S, 5, 1, 0)  # 7
    plain(8 * S)  # 8
    assert plog.last_stable_offset == 7
    plog.close()
    return data


#: (time after T0, committed offset) -> (log end, offset lag, last stable offset, read_committed lag)
EXPECTED_LAG = {
    (1_500, 0): (1, 1, 1, 1),
    (2_500, 1): (3, 2, 1, 0),  # A open from offset 1
    (3_500, 1): (4, 3, 1, 0),  # A and B open
    (4_000, 2): (5, 3, 3, 1),  # A's ABORT at this very time: only B open
    (5_500, 3): (6, 3, 3, 0),
    (6_500, 3): (7, 4, 7, 4),  # none open: the log end
    (7_500, 7): (8, 1, 7, 0),  # C open from offset 7
    (8_500, 5): (9, 4, 7, 2),
}


def test_open_transactions_make_a_step_function_of_time() -> None:
    base = [0, 1, 3, 4, 5, 6, 7, 8]
    append = [1, 2, 3, 4, 5, 6, 7, 8]
    producer = [-1, 5, 6, 5, -1, 6, 5, -1]
    txn = [False, True, True, True, False, True, True, False]
    control = [False, False, False, True, False, True, False, False]
    arrays = [np.asarray(v) for v in (base, append, producer, txn, control)]
    found = transactions(*arrays)
    assert sorted(found) == [(2, 4, 1), (3, 6, 3), (7, int(NO_TXN), 7)]
    points, first = unstable_steps(found)
    assert points.tolist() == [2, 3, 4, 6, 7]
    assert first.tolist() == [1, 1, 3, int(NO_TXN), 7]


def test_lag_arrays_measure_read_committed_consumers_against_the_lso() -> None:
    rows = {
        "topic": ["t"] * 8,
        "partition": [0] * 8,
        "base_offset": [0, 1, 3, 4, 5, 6, 7, 8],
        "last_offset": [0, 2, 3, 4, 5, 6, 7, 8],
        "append_ms": [T0 + k * S for k in range(1, 9)],
        "producer_id": [-1, 5, 6, 5, -1, 6, 5, -1],
        "is_transactional": [False, True, True, True, False, True, True, False],
        "is_control": [False, False, False, True, False, True, False, False],
    }
    index = BatchIndex.from_arrow(pa.table(rows))
    keys = list(EXPECTED_LAG)
    leo, offset_lag, _time_lag, lso, rc_lag = lag_arrays(
        index,
        pa.array(["t"] * len(keys)),
        pa.array([0] * len(keys), pa.int32()),
        pa.array([T0 + t for t, _c in keys]),
        pa.array([c for _t, c in keys]),
    )
    got = list(zip(leo.tolist(), offset_lag.tolist(), lso.tolist(), rc_lag.tolist(), strict=True))
    assert got == [EXPECTED_LAG[k] for k in keys]


@pytest.mark.spark
def test_kafka_log_sources_expose_transaction_flags_and_control_types(spark: Any, txn_dir: Path) -> None:
    """Control records are Kafka's EndTransactionMarker (key: version, type 0 ABORT / 1 COMMIT)."""
    records = spark.read.format("kafka-log").load(str(txn_dir))
    got = [
        tuple(r)
        for r in records.orderBy("offset")
        .select("offset", "producer_id", "producer_epoch", "is_transactional", "is_control", "control_type")
        .collect()
    ]
    plain = (-1, -1, False, False, None)
    assert got == [
        (0, *plain),
        (1, 5, 0, True, False, None),
        (2, 5, 0, True, False, None),
        (3, 6, 0, True, False, None),
        (4, 5, 0, True, True, "ABORT"),
        (5, *plain),
        (6, 6, 0, True, True, "COMMIT"),
        (7, 5, 1, True, False, None),
        (8, *plain),
    ]
    batches = spark.read.format("kafka-log-batches").load(str(txn_dir))
    got_batches = [
        tuple(r)
        for r in batches.orderBy("base_offset")
        .select("base_offset", "last_offset", "producer_id", "is_transactional", "is_control", "control_type")
        .collect()
    ]
    assert got_batches == [
        (0, 0, -1, False, False, None),
        (1, 2, 5, True, False, None),
        (3, 3, 6, True, False, None),
        (4, 4, 5, True, True, "ABORT"),
        (5, 5, -1, False, False, None),
        (6, 6, 6, True, True, "COMMIT"),
        (7, 7, 5, True, False, None),
        (8, 8, -1, False, False, None),
    ]


@pytest.mark.spark
def test_lag_table_carries_the_lso_in_every_path(spark: Any, txn_dir: Path, tmp_path: Path) -> None:
    """The Arrow-UDF path (``lag``) and the commit pass's index read back from ``_log_batches``
    Parquet give the exact values, on a log written by the broker (the window definition is
    compared on random transactions below)."""
    batches = spark.read.format("kafka-log-batches").load(str(txn_dir))
    commits = spark.createDataFrame(
        [("g", "txn", 0, c, i, _ts(T0 + t)) for i, (t, c) in enumerate(EXPECTED_LAG)],
        "group_id string, topic string, partition int, committed_offset bigint, log_offset bigint, "
        "commit_time timestamp",
    )
    fast = sorted((tuple(r) for r in lag(commits, batches).collect()), key=repr)
    # columns: ..., log_offset (8), last_stable_offset (9), read_committed_lag (10)
    got = {r[8]: (r[5], r[6], r[9], r[10]) for r in fast}
    assert [got[i] for i in range(len(EXPECTED_LAG))] == list(EXPECTED_LAG.values())
    # the commit pass reads its index from the _log_batches table written by analyze
    batches.write.parquet(str(tmp_path / "_log_batches"))
    index = commitpass.batch_index(tmp_path / "_log_batches")
    _leo, _lag, _tl, lso, _rc = lag_arrays(
        index,
        pa.array(["txn"] * len(EXPECTED_LAG)),
        pa.array([0] * len(EXPECTED_LAG), pa.int32()),
        pa.array([T0 + t for t, _c in EXPECTED_LAG]),
        pa.array([c for _t, c in EXPECTED_LAG]),
    )
    assert lso.tolist() == [v[2] for v in EXPECTED_LAG.values()]


@pytest.mark.spark
def test_lso_of_random_interleaved_transactions_equals_the_window_definition(spark: Any) -> None:
    rng = random.Random(17)
    batches = []
    for part in (0, 1, 2):
        offset = 0
        open_txn: set[int] = set()
        for k in range(60):
            t = T0 + k * 500 + rng.choice([0, 0, 0, -700, 100])  # some out of offset order
            pid = rng.choice([-1, 1, 2, 3])
            if pid < 0:
                batches.append(("a", part, offset, offset + 1, t, False, -1, False, False))
                offset += 2
            elif pid in open_txn and rng.random() < 0.4:
                open_txn.discard(pid)
                batches.append(("a", part, offset, offset, t, False, pid, True, True))
                offset += 1
            elif rng.random() < 0.1 and pid not in open_txn:  # a stray marker: closes nothing
                batches.append(("a", part, offset, offset, t, False, pid, True, True))
                offset += 1
            else:
                open_txn.add(pid)
                batches.append(("a", part, offset, offset + 2, t, False, pid, True, False))
                offset += 3
    batches.append(("a", 0, 9_999, None, None, True, None, None, None))  # a corrupt marker row
    bdf = spark.createDataFrame(
        batches,
        "topic string, partition int, base_offset bigint, last_offset bigint, max_ts bigint, "
        "corrupt boolean, producer_id bigint, is_transactional boolean, is_control boolean",
    ).selectExpr("*", "timestamp_millis(max_ts) as max_timestamp")
    commits = []
    for i in range(300):
        part = rng.choice([0, 1, 2, 3])
        t = T0 + rng.randint(-1_000, 32_000)
        if rng.random() < 0.2:
            t = T0 + 500 * rng.randint(0, 60)  # exactly a batch time
        commits.append((f"g{i % 5}", "a", part, rng.randint(0, 200), i, _ts(t)))
    cdf = spark.createDataFrame(
        commits,
        "group_id string, topic string, partition int, committed_offset bigint, log_offset bigint, "
        "commit_time timestamp",
    )
    fast = sorted((tuple(r) for r in lag(cdf, bdf).collect()), key=repr)
    reference = sorted((tuple(r) for r in lag_windowed(cdf, bdf).collect()), key=repr)
    assert len(fast) == 300 and fast == reference
    # some commits saw an open transaction hold the LSO below the log end
    assert any(r[9] < r[5] for r in fast) and any(r[10] != r[6] for r in fast)


def _commit(offset: int, t: int) -> tuple[bytes | None, bytes | None, tuple[()]]:
    key = encode_key(OffsetCommitKey(group="g", topic="t", partition=0))
    value = encode_value(
        OffsetCommitValue(
            offset=offset, leader_epoch=None, metadata="", commit_timestamp=T0 + t, expire_timestamp=None
        ),
        version=3,
    )
    return key, value, ()


@pytest.mark.spark
def test_consumer_offsets_leave_out_aborted_transactional_commits(spark: Any, tmp_path: Path) -> None:
    """Offsets committed in an aborted transaction (TxnOffsetCommit, KIP-98) are never the group's;
    the group coordinator drops them when it loads the log (Kafka's GroupMetadataManager
    ``loadGroupsAndOffsets`` keeps pending transactional offsets per producer and removes them at
    the ABORT marker). The source finds them through the partition's ``.txnindex``, on both
    decoders, so neither ``offset_commits`` nor the lag sees them."""
    d = tmp_path / "data"
    plog, _ = PartitionLog.open(d / "__consumer_offsets-0", LogConfig(), ManualClock(T0))

    def txn(pid: int, offset: int, t: int) -> None:
        plog.append(
            build_batch(
                [_commit(offset, t)],
                timestamp_ms=T0 + t,
                producer_id=pid,
                producer_epoch=0,
                base_sequence=0,
                attributes=ATTR_TRANSACTIONAL,
            )
        )

    def marker(pid: int, commit: bool, t: int) -> None:
        plog.append(
            build_marker_batch(
                producer_id=pid, producer_epoch=0, commit=commit, coordinator_epoch=0, timestamp_ms=T0 + t
            )
        )

    plog.append(build_batch([_commit(10, 1)], timestamp_ms=T0 + 1))  # 0: a plain commit
    txn(7, 20, 2)  # 1: committed below
    txn(8, 99, 3)  # 2: aborted below
    marker(7, True, 4)  # 3
    marker(8, False, 5)  # 4
    plog.append(build_batch([_commit(30, 6)], timestamp_ms=T0 + 6))  # 5
    plog.close()
    for decoder in ("vectorized", "records"):
        rows = (
            spark.read.format("consumer-offsets")
            .option("decoder", decoder)
            .load(str(d))
            .where("record_type = 'offset_commit'")
            .orderBy("log_offset")
            .select("log_offset", "committed_offset")
            .collect()
        )
        assert [tuple(r) for r in rows] == [(0, 10), (1, 20), (5, 30)], decoder
