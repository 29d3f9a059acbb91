"""Produce, Fetch, ListOffsets and InitProducerId over the wire against an in-process broker."""

from __future__ import annotations

import asyncio
import datetime
from pathlib import Path
from typing import Any

from broker_harness import Env, nested, run_broker

from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import build_batch, decode_records, iter_batches

PRODUCE, FETCH, LIST_OFFSETS, INIT_PID = 0, 1, 2, 22
T0 = 1_700_000_000_000
SECOND = datetime.timedelta(seconds=1)


def produce_body(
    version: int, topic: str, partition: int, records: bytes | None, acks: int = 1
) -> dict[str, Any]:
    part_t = nested(PRODUCE, version, "topic_data", "partition_data")
    topic_t = nested(PRODUCE, version, "topic_data")
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout": SECOND,
        "topic_data": (topic_t(name=topic, partition_data=(part_t(index=partition, records=records),)),),
    }


def batch(n: int, *, start: int = 0, ts: int = T0, **kw: Any) -> bytes:
    return build_batch(
        [(f"k{i}".encode(), f"v{i}".encode(), [("h", b"x")]) for i in range(start, start + n)],
        timestamp_ms=ts,
        **kw,
    )


async def produce(
    env: Env, topic: str, partition: int, records: bytes, version: int = 9, acks: int = 1
) -> Any:
    c = await env.connect()
    try:
        resp = await c.call(PRODUCE, version, **produce_body(version, topic, partition, records, acks))
    finally:
        c.close()
    return resp.responses[0].partition_responses[0]


def fetch_body(
    version: int,
    topic: str,
    partition: int,
    offset: int,
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    topic_id: Any = None,
) -> dict[str, Any]:
    topic_t = nested(FETCH, version, "topics")
    part_t = nested(FETCH, version, "topics", "partitions")
    part = part_t(partition=partition, fetch_offset=offset, partition_max_bytes=1 << 20)
    t = (
        topic_t(topic=topic, partitions=(part,))
        if version < 13
        else topic_t(topic_id=topic_id, partitions=(part,))
    )
    return {
        "max_wait": datetime.timedelta(milliseconds=max_wait_ms),
        "min_bytes": min_bytes,
        "max_bytes": 1 << 24,
        "isolation_level": 0,
        "topics": (t,),
        "forgotten_topics_data": (),
        "replica_id": -1,
    }


def create(env: Env, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> Any:
    return env.broker.logs.create_topic(name, partitions, configs or {})


def test_acks_1_produce_assigns_consecutive_offsets_and_fetch_returns_the_same_bytes(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        first = batch(3)
        r1 = await produce(env, "t", 0, first)
        r2 = await produce(env, "t", 0, batch(2, start=3))
        assert (r1.error_code, r1.base_offset, r2.error_code, r2.base_offset) == (0, 0, 0, 3)
        c = await env.connect()
        resp = await c.call(FETCH, 12, **fetch_body(12, "t", 0, 0))
        p = resp.responses[0].partitions[0]
        assert (p.error_code, p.high_watermark, p.log_start_offset) == (0, 5, 0)
        batches = list(iter_batches(p.records))
        assert [h.base_offset for _, h in batches] == [0, 3]
        # The stored batch is the produced one, byte for byte, apart from the base offset.
        assert p.records[8 : len(first)] == first[8:]
        recs = [r for pos, _ in batches for r in decode_records(p.records, pos)]
        assert [(r.offset, r.key, r.value, r.headers) for r in recs] == [
            (i, f"k{i}".encode(), f"v{i}".encode(), (("h", b"x"),)) for i in range(5)
        ]
        c.close()

    run_broker(tmp_path, scenario)


def test_acks_0_gets_no_response_yet_the_records_are_stored(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        c = await env.connect()
        await c.send(PRODUCE, 9, **produce_body(9, "t", 0, batch(4), acks=0))
        corr = await c.send(LIST_OFFSETS, 7, **list_offsets_body(7, "t", -1))
        got, resp = await c.recv(LIST_OFFSETS, 7)
        # The first answer on the wire belongs to the second request.
        assert got == corr
        assert resp.topics[0].partitions[0].offset == 4
        c.close()

    run_broker(tmp_path, scenario)


def test_acks_all_waits_for_one_coalesced_fsync(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t", 2)
        before = env.broker.flusher.rounds
        conns = [await env.connect() for _ in range(8)]
        for i, c in enumerate(conns):
            await c.send(PRODUCE, 9, **produce_body(9, "t", i % 2, batch(1, start=i), acks=-1))
        answers = [await c.recv(PRODUCE, 9) for c in conns]
        assert all(a[1].responses[0].partition_responses[0].error_code == 0 for a in answers)
        rounds = env.broker.flusher.rounds - before
        assert 1 <= rounds < 8
        assert env.broker.logs.partition("t", 0).flushed_offset == 4
        assert env.broker.logs.partition("t", 1).flushed_offset == 4
        for c in conns:
            c.close()

    run_broker(tmp_path, scenario)


def test_produce_errors_per_partition(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "small", 1, {"max.message.bytes": "100"})
        create(env, "t")
        env.broker.logs.create_topic("__inside", 1, {}, internal=True)
        assert (await produce(env, "__inside", 0, batch(1))).error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert (await produce(env, "nope", 0, batch(1))).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert (await produce(env, "t", 5, batch(1))).error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        corrupt = bytearray(batch(2))
        corrupt[-1] ^= 0xFF
        assert (await produce(env, "t", 0, bytes(corrupt))).error_code == ErrorCode.CORRUPT_MESSAGE
        assert (await produce(env, "t", 0, batch(2)[:-3])).error_code == ErrorCode.CORRUPT_MESSAGE
        big = build_batch([(b"k", b"v" * 500, [])], timestamp_ms=T0)
        assert (await produce(env, "small", 0, big)).error_code == ErrorCode.MESSAGE_TOO_LARGE
        c = await env.connect()
        resp = await c.call(PRODUCE, 9, **produce_body(9, "t", 0, batch(1), acks=2))
        assert resp.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_REQUIRED_ACKS
        c.close()
        assert env.broker.logs.partition("t", 0).log_end_offset == 0

    run_broker(tmp_path, scenario)


def test_idempotent_retry_of_a_recent_batch_is_answered_with_its_original_offset(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        c = await env.connect()
        pid_resp = await c.call(
            INIT_PID, 4, transactional_id=None, transaction_timeout=SECOND, producer_id=-1, producer_epoch=-1
        )
        pid = pid_resp.producer_id
        c.close()

        def b(seq: int, n: int, epoch: int = 0) -> bytes:
            return batch(n, start=seq, producer_id=pid, producer_epoch=epoch, base_sequence=seq)

        r0 = await produce(env, "t", 0, b(0, 3))
        r1 = await produce(env, "t", 0, b(3, 2))
        r2 = await produce(env, "t", 0, b(5, 1))
        assert [r.base_offset for r in (r0, r1, r2)] == [0, 3, 5]
        dup = await produce(env, "t", 0, b(3, 2))
        assert (dup.error_code, dup.base_offset) == (ErrorCode.NONE, 3)
        assert env.broker.logs.partition("t", 0).log_end_offset == 6
        gap = await produce(env, "t", 0, b(9, 1))
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        # A bumped epoch starts again at sequence 0; the old epoch is then fenced.
        bumped = await produce(env, "t", 0, b(0, 1, epoch=1))
        assert (bumped.error_code, bumped.base_offset) == (ErrorCode.NONE, 6)
        stale = await produce(env, "t", 0, b(6, 1, epoch=0))
        assert stale.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        assert env.broker.logs.partition("t", 0).log_end_offset == 7

    run_broker(tmp_path, scenario)


def test_init_producer_id_allocates_unique_ids_across_restarts_and_bumps_epochs(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []

    async def scenario(env: Env) -> None:
        c = await env.connect()
        for _ in range(2):
            r = await c.call(
                INIT_PID,
                4,
                transactional_id=None,
                transaction_timeout=SECOND,
                producer_id=-1,
                producer_epoch=-1,
            )
            assert r.error_code == 0
            seen.append((r.producer_id, r.producer_epoch))
        c.close()

    run_broker(tmp_path, scenario)
    run_broker(tmp_path, scenario)
    ids = [pid for pid, _ in seen]
    assert len(set(ids)) == 4
    assert ids[:2] == [0, 1]
    assert ids[2] > ids[1]
    assert all(epoch == 0 for _, epoch in seen)

    async def bump(env: Env) -> None:
        c = await env.connect()
        r = await c.call(
            INIT_PID, 4, transactional_id=None, transaction_timeout=SECOND, producer_id=7, producer_epoch=3
        )
        assert (r.error_code, r.producer_id, r.producer_epoch) == (0, 7, 4)
        r = await c.call(
            INIT_PID, 4, transactional_id="tx", transaction_timeout=SECOND, producer_id=-1, producer_epoch=-1
        )
        assert r.error_code == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        c.close()

    run_broker(tmp_path, bump)


def test_fetch_long_poll_is_woken_by_an_append(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        c = await env.connect()
        corr = await c.send(FETCH, 12, **fetch_body(12, "t", 0, 0, max_wait_ms=600_000, min_bytes=1))
        while not env.broker.fetch_waiters.waiters:
            await asyncio.sleep(0.001)
        await produce(env, "t", 0, batch(2))
        got, resp = await c.recv(FETCH, 12)
        assert got == corr
        p = resp.responses[0].partitions[0]
        assert (p.error_code, p.high_watermark) == (0, 2)
        assert [h.base_offset for _, h in iter_batches(p.records)] == [0]
        assert env.broker.fetch_waiters.waiters == {}
        c.close()

    run_broker(tmp_path, scenario)


def test_fetch_long_poll_answers_empty_when_max_wait_passes_on_the_clock(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        c = await env.connect()
        corr = await c.send(
            FETCH,
            16,
            **fetch_body(
                16, "", 0, 0, max_wait_ms=500, min_bytes=1, topic_id=env.broker.logs.topics_view["t"].topic_id
            ),
        )
        while not env.broker.fetch_waiters.waiters:
            await asyncio.sleep(0.001)
        env.clock.advance(499)
        env.broker.timers.run_due()
        assert len(env.broker.fetch_waiters.waiters) == 1
        env.clock.advance(1)
        env.broker.timers.run_due()
        got, resp = await c.recv(FETCH, 16)
        assert got == corr
        assert resp.session_id == 0
        t = resp.responses[0]
        assert t.topic_id == env.broker.logs.topics_view["t"].topic_id
        assert (t.partitions[0].error_code, t.partitions[0].high_watermark, t.partitions[0].records) == (
            0,
            0,
            b"",
        )
        c.close()

    run_broker(tmp_path, scenario)


def test_fetch_min_bytes_waits_until_enough_bytes_arrived(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        one = batch(1)
        c = await env.connect()
        await c.send(FETCH, 12, **fetch_body(12, "t", 0, 0, max_wait_ms=600_000, min_bytes=len(one) * 2 + 1))
        while not env.broker.fetch_waiters.waiters:
            await asyncio.sleep(0.001)
        await produce(env, "t", 0, one)
        await produce(env, "t", 0, batch(1, start=1))
        assert len(env.broker.fetch_waiters.waiters) == 1
        await produce(env, "t", 0, batch(1, start=2))
        _, resp = await c.recv(FETCH, 12)
        assert resp.responses[0].partitions[0].high_watermark == 3
        assert len(list(iter_batches(resp.responses[0].partitions[0].records))) == 3
        c.close()

    run_broker(tmp_path, scenario)


def test_fetch_errors(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        await produce(env, "t", 0, batch(2))
        c = await env.connect()
        r = await c.call(FETCH, 12, **fetch_body(12, "t", 0, 3))
        p = r.responses[0].partitions[0]
        assert (p.error_code, p.high_watermark) == (ErrorCode.OFFSET_OUT_OF_RANGE, 2)
        r = await c.call(FETCH, 12, **fetch_body(12, "nope", 0, 0))
        assert r.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        import uuid

        r = await c.call(FETCH, 13, **fetch_body(13, "", 0, 0, topic_id=uuid.uuid4()))
        assert r.responses[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        c.close()

    run_broker(tmp_path, scenario)


def list_offsets_body(version: int, topic: str, ts: int) -> dict[str, Any]:
    topic_t = nested(LIST_OFFSETS, version, "topics")
    part_t = nested(LIST_OFFSETS, version, "topics", "partitions")
    return {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": (topic_t(name=topic, partitions=(part_t(partition_index=0, timestamp=ts),)),),
    }


def test_list_offsets_earliest_latest_max_timestamp_and_by_timestamp(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        await produce(env, "t", 0, batch(2, ts=T0 + 100))  # offsets 0-1 at T0+100
        await produce(env, "t", 0, batch(2, start=2, ts=T0 + 900))  # offsets 2-3 at T0+900
        await produce(env, "t", 0, batch(1, start=4, ts=T0 + 500))  # offset 4 at T0+500
        c = await env.connect()

        async def ask(ts: int, version: int = 7) -> tuple[int, int, int]:
            r = await c.call(LIST_OFFSETS, version, **list_offsets_body(version, "t", ts))
            p = r.topics[0].partitions[0]
            return int(p.error_code), p.timestamp, p.offset

        assert await ask(-2) == (0, -1, 0)
        assert await ask(-1) == (0, -1, 5)
        assert await ask(-3) == (0, T0 + 900, 2)
        assert await ask(T0 + 100) == (0, T0 + 100, 0)
        assert await ask(T0 + 101) == (0, T0 + 900, 2)
        assert await ask(T0 + 901) == (0, -1, -1)
        assert await ask(-1, version=1) == (0, -1, 5)
        assert await ask(-3, version=6) == (ErrorCode.UNSUPPORTED_VERSION, -1, -1)
        r = await c.call(LIST_OFFSETS, 7, **list_offsets_body(7, "nope", -1))
        assert r.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        c.close()

    run_broker(tmp_path, scenario)


def test_every_advertised_produce_and_fetch_version_round_trips(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        topic_id = env.broker.logs.topics_view["t"].topic_id
        c = await env.connect()
        for i, v in enumerate(range(3, 11)):
            r = await c.call(PRODUCE, v, **produce_body(v, "t", 0, batch(1, start=i)))
            assert (
                r.responses[0].partition_responses[0].error_code,
                r.responses[0].partition_responses[0].base_offset,
            ) == (0, i)
        for v in range(4, 17):
            r = await c.call(FETCH, v, **fetch_body(v, "t", 0, 0, topic_id=topic_id))
            p = r.responses[0].partitions[0]
            assert (p.error_code, p.high_watermark, len(list(iter_batches(p.records)))) == (0, 8, 8)
        for v in range(1, 10):
            r = await c.call(LIST_OFFSETS, v, **list_offsets_body(v, "t", -1))
            assert r.topics[0].partitions[0].offset == 8
        c.close()

    run_broker(tmp_path, scenario)


def test_garbage_on_one_connection_does_not_disturb_a_producer_on_another(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        producer = await env.connect()
        evil = await env.connect()
        corrs = []
        for i in range(50):
            corrs.append(await producer.send(PRODUCE, 9, **produce_body(9, "t", 0, batch(1, start=i))))
            if i == 25:
                evil.writer.write(b"\x00\x00\x00\x0cNOT KAFKA AT ALL")
                await evil.writer.drain()
        answers = [await producer.recv(PRODUCE, 9) for _ in corrs]
        assert [a[0] for a in answers] == corrs
        assert [a[1].responses[0].partition_responses[0].base_offset for a in answers] == list(range(50))
        assert await evil.reader.read(1) == b""
        assert env.broker.logs.partition("t", 0).log_end_offset == 50
        producer.close()

    run_broker(tmp_path, scenario)


def test_retry_after_restart_of_a_batch_already_in_the_log_is_a_duplicate(tmp_path: Path) -> None:
    pid = 42

    def b(seq: int, n: int) -> bytes:
        return batch(n, start=seq, producer_id=pid, producer_epoch=0, base_sequence=seq)

    async def before(env: Env) -> None:
        create(env, "t")
        assert (await produce(env, "t", 0, b(0, 2))).base_offset == 0
        assert (await produce(env, "t", 0, b(2, 3))).base_offset == 2

    async def after(env: Env) -> None:
        retried = await produce(env, "t", 0, b(2, 3))
        assert (retried.error_code, retried.base_offset) == (ErrorCode.NONE, 2)
        assert env.broker.logs.partition("t", 0).log_end_offset == 5
        nxt = await produce(env, "t", 0, b(5, 1))
        assert (nxt.error_code, nxt.base_offset) == (ErrorCode.NONE, 5)
        gap = await produce(env, "t", 0, b(9, 1))
        assert gap.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER

    run_broker(tmp_path, before)
    run_broker(tmp_path, after)


def test_log_append_time_topic_stamps_the_batch_and_answers_the_time(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t", 1, {"message.timestamp.type": "LogAppendTime"})
        now = env.clock.now_ms()
        r = await produce(env, "t", 0, batch(2, ts=T0))
        assert r.error_code == 0
        assert r.log_append_time == datetime.datetime.fromtimestamp(now / 1000, tz=datetime.UTC)
        c = await env.connect()
        p = (await c.call(FETCH, 12, **fetch_body(12, "t", 0, 0))).responses[0].partitions[0]
        ((_, header),) = list(iter_batches(p.records))
        assert (header.timestamp_type, header.max_timestamp) == (1, now)
        c.close()

    run_broker(tmp_path, scenario)


def test_an_explicit_flush_policy_governs_acks_all_instead_of_a_forced_fsync(tmp_path: Path) -> None:
    async def broker_policy(env: Env) -> None:
        create(env, "t")
        r = await produce(env, "t", 0, batch(3), acks=-1)
        assert (r.error_code, r.base_offset) == (0, 0)
        assert env.broker.flusher.rounds == 0
        assert env.broker.logs.partition("t", 0).flushed_offset == 0

    run_broker(tmp_path / "a", broker_policy, settings=("log.flush.interval.messages=1000",))

    async def topic_policy(env: Env) -> None:
        create(env, "lazy", 1, {"flush.messages": "1000"})
        create(env, "eager")
        await produce(env, "lazy", 0, batch(3), acks=-1)
        assert env.broker.flusher.rounds == 0
        await produce(env, "eager", 0, batch(3), acks=-1)
        assert env.broker.flusher.rounds == 1
        assert env.broker.logs.partition("eager", 0).flushed_offset == 3

    run_broker(tmp_path / "b", topic_policy)


def test_retention_runs_on_the_keyed_timer_every_check_interval(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        create(env, "t")
        env.broker.start_maintenance()
        for i in range(6):  # each batch fills a 200-byte segment, so every produce rolls
            await produce(env, "t", 0, batch(3, start=3 * i, ts=env.clock.now_ms()))
        plog = env.broker.logs.partition("t", 0)
        assert plog.log_start_offset == 0
        env.clock.advance(59_999)
        env.broker.timers.run_due()
        assert plog.log_start_offset == 0  # the check has not run yet
        env.clock.advance(1)
        env.broker.timers.run_due()
        # Every segment but the active one was older than retention.ms: deleted.
        assert plog.log_start_offset == 15
        assert plog.log_end_offset == 18

    run_broker(
        tmp_path,
        scenario,
        settings=("log.retention.ms=1000", "log.retention.check.interval.ms=60000", "log.segment.bytes=200"),
    )
