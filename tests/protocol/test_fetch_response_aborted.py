"""The Fetch response's ``aborted_transactions`` (v4+): null unless a read_committed fetch
attaches them; each entry is producer id int64 + first offset int64 (Kafka's
``FetchResponse.json``, ``AbortedTransactions``), with a tagged-field section from v12."""

from __future__ import annotations

import struct
import uuid

from groupcoord.protocol.fetch_response import PartitionOut, TopicOut, encode_fetch_body


def _body(version: int, aborted: tuple[tuple[int, int], ...] | None) -> bytes:
    part = PartitionOut(
        partition=0,
        error_code=0,
        high_watermark=10,
        last_stable_offset=8,
        log_start_offset=0,
        records=b"",
        aborted_transactions=aborted,
    )
    pieces = encode_fetch_body(version, [TopicOut(name="t", topic_id=uuid.UUID(int=0), partitions=(part,))])
    assert all(isinstance(p, bytes) for p in pieces)
    return b"".join(p for p in pieces if isinstance(p, bytes))


def test_classic_version_writes_the_entries_after_the_offsets() -> None:
    body = _body(4, ((11, 3), (12, 5)))
    head = struct.pack(">i", 0) + struct.pack(">i", 1) + struct.pack(">h", 1) + b"t" + struct.pack(">i", 1)
    expected = (
        head
        + struct.pack(">ihqq", 0, 0, 10, 8)
        + struct.pack(">i", 2)
        + struct.pack(">qq", 11, 3)
        + struct.pack(">qq", 12, 5)
        + struct.pack(">i", 0)  # empty record set
    )
    assert body == expected


def test_none_is_a_null_array_and_empty_is_an_empty_one() -> None:
    null_body, empty_body = _body(4, None), _body(4, ())
    assert null_body.replace(b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", 1) == empty_body


def test_flexible_version_uses_compact_lengths_and_tagged_fields() -> None:
    body = _body(12, ((11, 3),))
    entry = b"\x02" + struct.pack(">qq", 11, 3) + b"\x00"
    offsets = struct.pack(">ihqqq", 0, 0, 10, 8, 0)
    assert offsets + entry + struct.pack(">i", -1) in body  # then preferred read replica -1
