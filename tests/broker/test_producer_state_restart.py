"""Idempotent producers' duplicate detection after a restart, seeded from the producer snapshot.

Over the wire against an in-process broker (``broker_harness``), restarted on the same data dir.
Kafka keeps the state in ``ProducerStateManager``: a snapshot (``<offset>.snapshot``) holds each
producer's last batch, loaded when the partition opens, and the batches after the snapshot are
replayed into it (``UnifiedLog``'s ``rebuildProducerState``), keeping up to five batches per
producer (``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``). A retried batch that matches one of
them is answered NONE with the offset it got the first time (``UnifiedLog
.analyzeAndValidateProducerState`` / ``findDuplicateBatch``); one that does not follow the last
sequence is OUT_OF_ORDER_SEQUENCE_NUMBER (``ProducerAppendInfo.checkSequence``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from broker_harness import Env, run_broker
from broker_harness import produce_all as produce

from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import build_batch
from groupcoord.storage.producer_state import list_snapshots

T0 = 1_700_000_000_000
PID = 42


def batch(n: int, *, start: int = 0, **kw: Any) -> bytes:
    return build_batch(
        [(f"k{i}".encode(), f"v{i}".encode(), ()) for i in range(start, start + n)], timestamp_ms=T0, **kw
    )


def idem(seq: int, n: int) -> bytes:
    return batch(n, start=seq, producer_id=PID, producer_epoch=0, base_sequence=seq)


def test_duplicate_far_behind_the_log_end_is_answered_with_its_offset_after_a_restart(tmp_path: Path) -> None:
    """A producer's last batch 10,003 offsets behind the log end: after a restart its retry is
    still a duplicate, answered NONE with offset 0, and nothing is appended (before, the table was
    rebuilt from the last 10,000 offsets only, so the retry was appended a second time)."""

    async def before(env: Env) -> None:
        env.broker.logs.create_topic("t", 1, {})
        assert (await produce(env, idem(0, 2))).base_offset == 0
        other = await produce(env, batch(10_001, start=100))  # a non-idempotent producer
        assert (other.error_code, other.base_offset) == (ErrorCode.NONE, 2)

    async def after(env: Env) -> None:
        plog = env.broker.logs.partition("t", 0)
        assert plog.log_end_offset == 10_003
        retried = await produce(env, idem(0, 2))
        assert (retried.error_code, retried.base_offset) == (ErrorCode.NONE, 0)
        assert plog.log_end_offset == 10_003
        nxt = await produce(env, idem(2, 1))
        assert (nxt.error_code, nxt.base_offset) == (ErrorCode.NONE, 10_003)

    run_broker(tmp_path, before)
    run_broker(tmp_path, after)


def test_after_a_clean_restart_the_snapshot_knows_only_the_last_batch(tmp_path: Path) -> None:
    """A clean close writes the snapshot at the log end: each producer's last batch. Its retry is
    a duplicate (offset 2); a retry of the batch before it no longer matches a kept batch and is
    OUT_OF_ORDER_SEQUENCE_NUMBER, as in Kafka after a clean restart (the snapshot entry holds one
    ``BatchMetadata``)."""

    async def before(env: Env) -> None:
        env.broker.logs.create_topic("t", 1, {})
        assert (await produce(env, idem(0, 2))).base_offset == 0
        assert (await produce(env, idem(2, 3))).base_offset == 2

    async def after(env: Env) -> None:
        last = await produce(env, idem(2, 3))
        assert (last.error_code, last.base_offset) == (ErrorCode.NONE, 2)
        earlier = await produce(env, idem(0, 2))
        assert earlier.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert env.broker.logs.partition("t", 0).log_end_offset == 5

    run_broker(tmp_path, before)
    assert [off for off, _p in list_snapshots(tmp_path / "t-0")] == [5]
    run_broker(tmp_path, after)


def test_without_a_snapshot_the_replayed_log_gives_the_last_five_batches(tmp_path: Path) -> None:
    """No snapshot (as after a crash before one was written): the log is replayed when the
    partition opens and each producer keeps its last five batches, so a retry of any of them
    is a duplicate answered with its original offset; the sixth from the end is
    OUT_OF_ORDER_SEQUENCE_NUMBER."""

    async def before(env: Env) -> None:
        env.broker.logs.create_topic("t", 1, {})
        for i in range(6):
            assert (await produce(env, idem(2 * i, 2))).base_offset == 2 * i

    async def after(env: Env) -> None:
        for i in range(1, 6):
            dup = await produce(env, idem(2 * i, 2))
            assert (dup.error_code, dup.base_offset) == (ErrorCode.NONE, 2 * i)
        oldest = await produce(env, idem(0, 2))
        assert oldest.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert env.broker.logs.partition("t", 0).log_end_offset == 12

    run_broker(tmp_path, before)
    for _off, path in list_snapshots(tmp_path / "t-0"):
        path.unlink()
    run_broker(tmp_path, after)
