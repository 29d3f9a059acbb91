"""Fetch served from the segment files: the hand-written response encoder against kio's, the
region read against the copying read, and large record sets over the wire (sendfile path)."""

from __future__ import annotations

import datetime
import os
import random
import uuid
from pathlib import Path
from typing import Any

import pytest
from broker_harness import Env, nested, run_broker

from groupcoord.broker import fetch
from groupcoord.clock import ManualClock
from groupcoord.formats.batch import build_batch
from groupcoord.protocol.entities import NO_THROTTLE, child, err, has_field, make
from groupcoord.protocol.fetch_response import (
    MAX_VERSION,
    MIN_VERSION,
    NodeEndpoint,
    PartitionOut,
    TopicOut,
    encode_fetch_body,
)
from groupcoord.protocol.headers import encode_response_header
from groupcoord.protocol.registry import load_messages
from groupcoord.storage.log import FileRegion, OffsetOutOfRangeError, PartitionLog
from groupcoord.storage.log_config import LogConfig

PRODUCE, FETCH = 0, 1
T0 = 1_700_000_000_000
SECOND = datetime.timedelta(seconds=1)


class _Stand:
    """A stand-in for a record set that is not in memory: only its length is known."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.length = len(data)


def _kio_frame(version: int, corr: int, topics: list[tuple[str, uuid.UUID, list[tuple[Any, ...]]]]) -> bytes:
    m = load_messages(FETCH, version)
    rt = m.response_type
    tt = child(rt, "responses")
    pt = child(tt, "partitions")
    resp_topics = tuple(
        make(
            tt,
            topic=name,
            topic_id=tid,
            partitions=tuple(
                make(
                    pt,
                    partition_index=p,
                    error_code=err(e),
                    high_watermark=hw,
                    last_stable_offset=lso,
                    log_start_offset=ls,
                    aborted_transactions=None,
                    preferred_read_replica=-1,
                    records=recs,
                )
                for p, e, hw, lso, ls, recs in parts
            ),
        )
        for name, tid, parts in topics
    )
    values: dict[str, Any] = {"throttle_time": NO_THROTTLE, "responses": resp_topics}
    if has_field(rt, "error_code"):
        values["error_code"] = err(0)
        values["session_id"] = 0
    return m.encode_response(corr, make(rt, **values))


def _our_frame(version: int, corr: int, topics: list[tuple[str, uuid.UUID, list[tuple[Any, ...]]]]) -> bytes:
    outs = [
        TopicOut(
            name=name,
            topic_id=tid,
            partitions=tuple(
                PartitionOut(
                    partition=p,
                    error_code=e,
                    high_watermark=hw,
                    last_stable_offset=lso,
                    log_start_offset=ls,
                    records=_Stand(recs) if i % 2 == 0 else recs,
                )
                for i, (p, e, hw, lso, ls, recs) in enumerate(parts)
            ),
        )
        for name, tid, parts in topics
    ]
    pieces = encode_fetch_body(version, outs)
    body = b"".join(p if isinstance(p, bytes) else p.data for p in pieces)  # type: ignore[attr-defined]
    header = encode_response_header(corr, load_messages(FETCH, version).response_header_version)
    return (len(header) + len(body)).to_bytes(4, "big") + header + body


@pytest.mark.parametrize("version", range(MIN_VERSION, MAX_VERSION + 1))
def test_hand_encoded_fetch_response_is_byte_identical_to_kio_at_every_version(version: int) -> None:
    rnd = random.Random(version)
    topics = [
        (
            "orders-é",
            uuid.UUID(int=rnd.getrandbits(128)),
            [
                (0, 0, 1234, 1234, 7, rnd.randbytes(300)),
                (1, 1, -1, -1, -1, b""),
                (5, 0, 99, 98, 0, rnd.randbytes(200)),
            ],
        ),
        ("", uuid.UUID(int=0), []),
        ("x" * 200, uuid.UUID(int=rnd.getrandbits(128)), [(2, 100, 2**40, 2**40, 2**39, b"")]),
    ]
    assert _our_frame(version, 77, topics) == _kio_frame(version, 77, topics)
    assert _our_frame(version, 1, []) == _kio_frame(version, 1, [])


def test_encoder_covers_exactly_the_advertised_fetch_versions(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        ranges = {k: (lo, hi) for k, lo, hi in env.broker.registry.ranges()}
        assert ranges[FETCH] == (MIN_VERSION, MAX_VERSION)

    run_broker(tmp_path, scenario)


def _log_with_batches(path: Path, sizes: list[int]) -> tuple[PartitionLog, list[int]]:
    """A log of one batch per size (each of ``n`` records of 100 bytes) over several segments;
    returns it and the base offset of each batch."""
    plog, _ = PartitionLog.open(
        path, LogConfig(segment_bytes=8_000, index_interval_bytes=1_000), ManualClock(T0)
    )
    rnd = random.Random(5)
    bases = []
    for n in sizes:
        info = plog.append(build_batch([(None, rnd.randbytes(100), [])] * n, timestamp_ms=T0))
        bases.append(info.base_offset)
    return plog, bases


def test_region_read_gives_exactly_the_bytes_of_the_copying_read(tmp_path: Path) -> None:
    sizes = [1, 3, 40, 2, 1, 90, 5, 5, 5, 60, 1, 1, 2, 30, 7]
    plog, _ = _log_with_batches(tmp_path / "t-0", sizes)
    try:
        assert plog.segment_count > 2
        leo = plog.log_end_offset
        checked = 0
        for offset in range(0, leo + 1, 3):
            for max_bytes in (0, 50, 200, 1_000, 4_321, 12_000, 19_999, 1 << 30):
                for min_one in (True, False):
                    want = plog.read(offset, max_bytes, min_one=min_one)
                    for copy_below in (0, 1 << 30):
                        got = plog.read_region(offset, max_bytes, min_one=min_one, copy_below=copy_below)
                        assert (got.high_watermark, got.log_start_offset) == (
                            want.high_watermark,
                            want.log_start_offset,
                        )
                        data = got.data
                        if isinstance(data, FileRegion):
                            assert copy_below == 0 and data.length > 0
                            raw = data.read()
                            data.close()
                        else:
                            raw = data
                            assert copy_below > 0 or raw == b""
                        assert raw == bytes(want.data), (offset, max_bytes, min_one, copy_below)
                        checked += 1
        assert checked > 1000
        for bad in (-1, leo + 1):
            with pytest.raises(OffsetOutOfRangeError):
                plog.read_region(bad, 100)
    finally:
        plog.close()


def test_region_keeps_its_bytes_after_the_segment_is_deleted_and_the_log_closed(tmp_path: Path) -> None:
    plog, bases = _log_with_batches(tmp_path / "t-0", [50] * 12)
    first_files = plog.segment_files()[:1]
    result = plog.read_region(0, 1 << 20, copy_below=0)
    region = result.data
    assert isinstance(region, FileRegion)
    expected = bytes(plog.read(0, 1 << 20).data)
    assert region.length == len(expected) > 0
    # Retention removes the first segment, then the log is closed: the region still reads the same.
    plog.delete_records_before(bases[-1])
    assert not any(p.exists() for p in first_files)
    plog.close()
    assert region.read() == expected
    fd = region.fd
    region.close()
    assert region.closed
    with pytest.raises(OSError):
        os.fstat(fd)


# ------------------------------------------------------------------------------------------ wire


def _fetch_body(
    version: int,
    topic: str,
    topic_id: uuid.UUID,
    partitions: list[tuple[int, int]],
    *,
    partition_max: int = 1 << 24,
    max_bytes: int = 1 << 26,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
) -> dict[str, Any]:
    topic_t = nested(FETCH, version, "topics")
    part_t = nested(FETCH, version, "topics", "partitions")
    parts = tuple(
        part_t(partition=p, fetch_offset=o, partition_max_bytes=partition_max) for p, o in partitions
    )
    t = (
        topic_t(topic=topic, partitions=parts)
        if version < 13
        else topic_t(topic_id=topic_id, partitions=parts)
    )
    return {
        "max_wait": datetime.timedelta(milliseconds=max_wait_ms),
        "min_bytes": min_bytes,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "topics": (t,),
        "forgotten_topics_data": (),
        "replica_id": -1,
    }


def _big_batch(rnd: random.Random, records: int, size: int) -> bytes:
    return build_batch([(None, rnd.randbytes(size), [])] * records, timestamp_ms=T0)


def test_large_record_sets_arrive_byte_exact_at_every_version(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("big", 3, {})
        tid = env.broker.logs.topics_view["big"].topic_id
        rnd = random.Random(11)
        logs = [env.broker.logs.partition("big", p) for p in range(3)]
        for p, plog in enumerate(logs):
            for _ in range(3 + p):
                plog.append(_big_batch(rnd, 20, 10_000))  # 200 KB batches
        c = await env.connect()
        # from v4: below it records are down-converted to message format v0/v1 (read into
        # memory; tests/broker/test_old_versions_produce_fetch.py)
        for v in range(4, MAX_VERSION + 1):
            resp = await c.call(FETCH, v, **_fetch_body(v, "big", tid, [(0, 0), (1, 20), (2, 0)]))
            parts = resp.responses[0].partitions
            assert [p.partition_index for p in parts] == [0, 1, 2]
            for p, fetch_offset in zip(parts, (0, 20, 0), strict=True):
                want = logs[p.partition_index].read(fetch_offset, 1 << 24)
                assert len(want.data) >= fetch.SENDFILE_MIN_BYTES
                assert (int(p.error_code), p.high_watermark) == (0, want.high_watermark)
                assert p.records == bytes(want.data)
        c.close()

    run_broker(tmp_path, scenario)


def test_max_bytes_and_partition_max_bytes_cut_large_record_sets_at_batch_boundaries(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("big", 2, {})
        tid = env.broker.logs.topics_view["big"].topic_id
        rnd = random.Random(12)
        logs = [env.broker.logs.partition("big", p) for p in range(2)]
        for plog in logs:
            for _ in range(6):
                plog.append(_big_batch(rnd, 10, 30_000))  # 300 KB batches
        c = await env.connect()
        # partition_max 700 KB: two whole batches per partition; max_bytes 1 MB: the second
        # partition gets what is left (300 KB -> one batch, as the first already carries data).
        resp = await c.call(
            FETCH,
            16,
            **_fetch_body(16, "big", tid, [(0, 0), (1, 10)], partition_max=700_000, max_bytes=1_000_000),
        )
        p0, p1 = resp.responses[0].partitions
        assert p0.records == bytes(logs[0].read(0, 700_000).data)
        assert len(p0.records) == 2 * len(bytes(logs[0].read(0, 1, min_one=True).data))
        assert p1.records == bytes(logs[1].read(10, 1_000_000 - len(p0.records), min_one=False).data)
        assert len(p1.records) == len(p0.records) // 2
        # A batch larger than partition_max still comes back whole when it is the first.
        resp = await c.call(FETCH, 16, **_fetch_body(16, "big", tid, [(0, 30)], partition_max=1_000))
        assert resp.responses[0].partitions[0].records == bytes(logs[0].read(30, 1).data)
        c.close()

    run_broker(tmp_path, scenario)


def test_parked_fetch_woken_by_a_large_append_carries_its_bytes(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("big", 1, {})
        tid = env.broker.logs.topics_view["big"].topic_id
        c = await env.connect()
        corr = await c.send(
            FETCH, 16, **_fetch_body(16, "big", tid, [(0, 0)], max_wait_ms=10_000, min_bytes=1)
        )
        m = load_messages(PRODUCE, 9)
        part_t = child(child(m.request_type, "topic_data"), "partition_data")
        topic_t = child(m.request_type, "topic_data")
        big = _big_batch(random.Random(3), 40, 10_000)
        p = await env.connect()
        await p.call(
            PRODUCE,
            9,
            transactional_id=None,
            acks=1,
            timeout=SECOND,
            topic_data=(topic_t(name="big", partition_data=(part_t(index=0, records=big),)),),
        )
        got, resp = await c.recv(FETCH, 16)
        assert got == corr
        records = resp.responses[0].partitions[0].records
        assert records == bytes(env.broker.logs.partition("big", 0).read(0, 1 << 24).data)
        assert len(records) == len(big) >= fetch.SENDFILE_MIN_BYTES
        assert records[8:] == big[8:]  # the produced batch, its base offset (0) rewritten
        c.close()
        p.close()

    run_broker(tmp_path, scenario)


def test_pipelined_large_fetches_answer_in_request_order_with_exact_bytes(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("big", 2, {})
        tid = env.broker.logs.topics_view["big"].topic_id
        rnd = random.Random(13)
        logs = [env.broker.logs.partition("big", p) for p in range(2)]
        for plog in logs:
            for _ in range(8):
                plog.append(_big_batch(rnd, 10, 50_000))  # 500 KB batches, 4 MB per partition
        c = await env.connect()
        offsets = [0, 10, 40, 70, 0]
        corrs = []
        for off in offsets:
            corrs.append(await c.send(FETCH, 16, **_fetch_body(16, "big", tid, [(0, off), (1, off)])))
        for corr, off in zip(corrs, offsets, strict=True):
            got, resp = await c.recv(FETCH, 16)
            assert got == corr
            for p in resp.responses[0].partitions:
                assert p.records == bytes(logs[p.partition_index].read(off, 1 << 24).data)
        c.close()

    run_broker(tmp_path, scenario)


@pytest.mark.parametrize("version", range(12, MAX_VERSION + 1))
def test_kip_951_leader_hints_are_byte_identical_to_kio(version: int) -> None:
    """The CurrentLeader tagged field (partition, tag 1) and NodeEndpoints (response, tag 0) as
    kio writes them at v16; before v16 the encoder leaves them out, as Kafka's
    ``KafkaApis.handleFetchRequest`` sets them only from v16. A (-1, -1) leader is the field's
    default, which Kafka's writer never sends."""
    m = load_messages(FETCH, version)
    rt = m.response_type
    tt = child(rt, "responses")
    pt = child(tt, "partitions")
    hinted = version >= 16
    parts = []
    ours = []
    for index, leader in ((0, (2, 7)), (1, None), (2, (-1, 3)), (3, (-1, -1))):
        values: dict[str, Any] = {
            "partition_index": index,
            "error_code": err(6 if leader else 0),
            "high_watermark": -1,
            "last_stable_offset": -1,
            "log_start_offset": -1,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": b"",
        }
        if hinted and leader is not None:
            values["current_leader"] = make(
                child(pt, "current_leader"), leader_id=leader[0], leader_epoch=leader[1]
            )
        parts.append(make(pt, **values))
        ours.append(
            PartitionOut(
                partition=index,
                error_code=6 if leader else 0,
                high_watermark=-1,
                last_stable_offset=-1,
                log_start_offset=-1,
                records=b"",
                current_leader=leader,
            )
        )
    tid = uuid.UUID(int=42)
    body: dict[str, Any] = {
        "throttle_time": NO_THROTTLE,
        "error_code": err(0),
        "session_id": 0,
        "responses": (make(tt, topic="t", topic_id=tid, partitions=tuple(parts)),),
    }
    nodes = [NodeEndpoint(2, "broker-2.example", 9094, "rack-é"), NodeEndpoint(5, "h", 1, None)]
    if hinted:
        nt = child(rt, "node_endpoints")
        body["node_endpoints"] = tuple(
            make(nt, node_id=n.node_id, host=n.host, port=n.port, rack=n.rack) for n in nodes
        )
    expected = m.encode_response(3, make(rt, **body))
    pieces = encode_fetch_body(
        version, [TopicOut(name="t", topic_id=tid, partitions=tuple(ours))], node_endpoints=nodes
    )
    header = encode_response_header(3, m.response_header_version)
    got_body = b"".join(p for p in pieces if isinstance(p, bytes))
    assert (len(header) + len(got_body)).to_bytes(4, "big") + header + got_body == expected
