"""The fetcher's record handling on real record-batch bytes (no broker needed).

The broker under test has no transactions, so read_committed is checked here on batches
built with the project's batch writer (``groupcoord.formats.batch``) and a Fetch answer built
with kio's own FetchResponse class, exactly as the wire layer hands them to the fetcher.
Skipping follows Kafka's ``Fetcher`` / ``CompletedFetch`` (``abortedProducerIds``,
control batches never returned): ``FetcherTest.testReadCommittedWithCommittedAndAbortedTransactions``.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from groupcoord.client import wire
from groupcoord.client.fetcher import Fetcher, FetcherConfig
from groupcoord.client.types import TopicPartition
from groupcoord.errors import ErrorCode
from groupcoord.formats import batch as rb
from groupcoord.protocol import codec
from groupcoord.protocol.api_keys import ApiKey

TP = TopicPartition("t", 0)


def data_batch(offset: int, values: list[bytes], producer_id: int = -1, transactional: bool = False) -> bytes:
    return rb.build_batch(
        [(None, v, ()) for v in values],
        base_offset=offset,
        timestamp_ms=1_700_000_000_000,
        producer_id=producer_id,
        producer_epoch=0 if producer_id >= 0 else -1,
        base_sequence=0 if producer_id >= 0 else -1,
        attributes=rb.ATTR_TRANSACTIONAL if transactional else 0,
    )


def marker(offset: int, producer_id: int, commit: bool) -> bytes:
    key = struct.pack(">hh", 0, 1 if commit else 0)
    value = struct.pack(">hi", 0, 0)
    return rb.build_batch(
        [(key, value, ())],
        base_offset=offset,
        timestamp_ms=1_700_000_000_000,
        producer_id=producer_id,
        producer_epoch=0,
        attributes=rb.ATTR_TRANSACTIONAL | rb.ATTR_CONTROL,
    )


def fetcher(isolation: str) -> Fetcher:
    f = Fetcher(FetcherConfig(isolation_level=isolation, auto_offset_reset="earliest"))
    f.on_metadata(
        wire.ClusterMetadata(
            brokers=(wire.BrokerNode(node_id=0, host="127.0.0.1", port=1),),
            controller_id=0,
            topics=(
                wire.MetadataTopic(
                    name="t",
                    topic_id=None,
                    error=ErrorCode.NONE,
                    partitions=(
                        wire.MetadataPartition(partition=0, leader=0, leader_epoch=0, error=ErrorCode.NONE),
                    ),
                    internal=False,
                ),
            ),
        ),
        0,
    )
    f.assign([TP])
    f.set_starting_offset(TP, 0)
    return f


def fetch_answer(records: bytes, aborted: list[tuple[int, int]]) -> Any:
    c = codec.request_messages(ApiKey.FETCH, 12)
    return codec.build_request(
        c.response_type,
        {
            "throttle_time": 0,
            "error_code": 0,
            "session_id": 0,
            "responses": [
                {
                    "topic": "t",
                    "partitions": [
                        {
                            "partition_index": 0,
                            "error_code": 0,
                            "high_watermark": 7,
                            "last_stable_offset": 7,
                            "log_start_offset": 0,
                            "aborted_transactions": [
                                {"producer_id": pid, "first_offset": first} for pid, first in aborted
                            ],
                            "records": records,
                        }
                    ],
                }
            ],
        },
    )


LOG = (
    data_batch(0, [b"aborted-0", b"aborted-1"], producer_id=7, transactional=True)
    + data_batch(2, [b"committed-2", b"committed-3"], producer_id=8, transactional=True)
    + marker(4, producer_id=7, commit=False)
    + marker(5, producer_id=8, commit=True)
    + data_batch(6, [b"plain-6"])
)


@pytest.mark.parametrize(
    ("isolation", "expected"),
    [
        ("read_committed", [(2, b"committed-2"), (3, b"committed-3"), (6, b"plain-6")]),
        (
            "read_uncommitted",
            [(0, b"aborted-0"), (1, b"aborted-1"), (2, b"committed-2"), (3, b"committed-3"), (6, b"plain-6")],
        ),
    ],
)
def test_isolation_level_skips_aborted_transactions_and_never_returns_control_batches(
    isolation: str, expected: list[tuple[int, bytes]]
) -> None:
    f = fetcher(isolation)
    (out,) = [o for o in f.requests(0) if o.kind == "fetch"]
    assert out.fields["isolation_level"] == (1 if isolation == "read_committed" else 0)
    f.on_response(out, fetch_answer(LOG, [(7, 0)]), 0)
    got = f.drain()
    assert [(r.offset, r.value) for r in got] == expected
    assert f.position(TP) == 7


def test_a_fetch_of_only_control_and_aborted_batches_moves_the_position_past_them() -> None:
    f = fetcher("read_committed")
    (out,) = [o for o in f.requests(0) if o.kind == "fetch"]
    only_aborted = data_batch(0, [b"a", b"b"], producer_id=7, transactional=True) + marker(2, 7, commit=False)
    f.on_response(out, fetch_answer(only_aborted, [(7, 0)]), 0)
    assert f.drain() == []
    assert f.position(TP) == 3
    (again,) = [o for o in f.requests(0) if o.kind == "fetch"]
    assert again.partitions == ((TP, 3),)


def test_records_before_the_fetch_offset_inside_a_batch_are_skipped() -> None:
    f = fetcher("read_uncommitted")
    f.seek(TP, 1)
    (out,) = [o for o in f.requests(0) if o.kind == "fetch"]
    f.on_response(out, fetch_answer(data_batch(0, [b"x0", b"x1", b"x2"]), []), 0)
    assert [r.offset for r in f.drain()] == [1, 2]
