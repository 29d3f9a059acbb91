"""Fast paths of the offset-commit path give the same bytes (or the same error) as the checked code."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groupcoord.app import build_dispatcher
from groupcoord.broker.state import Broker
from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.coordinator.records import (
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
    _encode_key_checked,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
)
from groupcoord.formats.batch import _encode_record, _encode_record_general, build_batch, decode_records
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.entities import child, make
from groupcoord.protocol.registry import load_messages
from groupcoord.runtime.group_runtime import OFFSETS_TOPIC, GroupRuntime
from groupcoord.server.connection import KafkaConnection

names = st.one_of(
    st.text(max_size=40),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=0, max_size=12),
    st.integers(min_value=32_700, max_value=32_800).map(lambda n: "é" * (n // 2) + "x" * (n % 2)),
)
partitions = st.one_of(
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.sampled_from([-(2**31), 2**31 - 1, 0, -1]),
)


@settings(max_examples=400, deadline=None)
@given(group=names, topic=names, partition=partitions)
def test_offset_commit_key_bytes_match_the_checked_writer_and_read_back(
    group: str, topic: str, partition: int
) -> None:
    key = OffsetCommitKey(group=group, topic=topic, partition=partition)
    try:
        expected = _encode_key_checked(key)
    except Exception as exc:
        with pytest.raises(type(exc)):
            encode_key(key)
        return
    assert encode_key(key) == expected
    assert decode_key(expected) == key


@settings(max_examples=400, deadline=None)
@given(
    offset=st.one_of(st.integers(-(2**63), 2**63 - 1), st.sampled_from([2**63, -(2**63) - 1, -1, 0])),
    epoch=st.one_of(st.none(), st.integers(-(2**31), 2**31 - 1), st.sampled_from([2**31, -1])),
    metadata=names,
    timestamp=st.one_of(st.integers(0, 2**63 - 1), st.sampled_from([2**63, -1])),
)
def test_offset_commit_value_bytes_match_the_checked_writer(
    offset: int, epoch: int | None, metadata: str, timestamp: int
) -> None:
    """A commit's value (no expire timestamp: written as v3) packed directly is the checked
    writer's v3, or fails as it does."""
    value = OffsetCommitValue(
        offset=offset,
        leader_epoch=epoch,
        metadata=metadata,
        commit_timestamp=timestamp,
        expire_timestamp=None,
    )
    try:
        expected = encode_value(value, 3)
    except Exception as exc:
        with pytest.raises(type(exc)):
            encode_value(value)
        return
    assert encode_value(value) == expected


@pytest.mark.parametrize("partition", [2**31, -(2**31) - 1])
def test_a_partition_outside_int32_fails_like_the_checked_writer(partition: int) -> None:
    key = OffsetCommitKey(group="g", topic="t", partition=partition)
    with pytest.raises(Exception) as checked:
        _encode_key_checked(key)
    with pytest.raises(checked.type):
        encode_key(key)


def test_a_group_name_utf8_cannot_carry_fails_like_the_checked_writer() -> None:
    key = OffsetCommitKey(group="bad\udc80", topic="t", partition=0)
    with pytest.raises(Exception) as checked:
        _encode_key_checked(key)
    with pytest.raises(checked.type):
        encode_key(key)


def test_group_metadata_key_still_takes_the_checked_writer() -> None:
    assert encode_key(GroupMetadataKey(group="g")) == b"\x00\x02\x00\x01g"


small_ints = st.integers(min_value=-3, max_value=1030)
blobs = st.one_of(st.none(), st.binary(max_size=1030))


@settings(max_examples=400, deadline=None)
@given(
    offset_delta=st.one_of(small_ints, st.integers(min_value=-(2**40), max_value=2**40)),
    ts_delta=st.one_of(small_ints, st.integers(min_value=-(2**40), max_value=2**40)),
    key=blobs,
    value=blobs,
    headers=st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2),
)
def test_record_bytes_of_the_small_record_path_match_the_general_encoder(
    offset_delta: int,
    ts_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: list[tuple[str, bytes | None]],
) -> None:
    fast, general = bytearray(b"prefix"), bytearray(b"prefix")
    _encode_record(fast, offset_delta, ts_delta, key, value, headers)
    _encode_record_general(general, offset_delta, ts_delta, key, value, headers)
    assert fast == general


def test_a_built_batch_of_offset_commits_reads_back_record_for_record() -> None:
    records = [(b"k" * n, b"v" * (1100 - n), ()) for n in (0, 1, 63, 64, 1022, 1023)]
    batch = build_batch(records, base_offset=7, timestamp_ms=1_700_000_000_000)
    got = [(r.offset, r.key, r.value, r.headers) for r in decode_records(batch)]
    assert got == [(7 + i, k, v, ()) for i, (k, v, _h) in enumerate(records)]


# ---------------------------------------------------------------------------- one write per tick
class _Collecting(asyncio.Transport):
    """Keeps the answers a connection writes, with the broker's flush-round count at each write."""

    def __init__(self, broker: Broker) -> None:
        super().__init__()
        self.broker = broker
        self.out: list[tuple[bytes, int]] = []

    def write(self, data: Any) -> None:
        self.out.append((bytes(data), self.broker.flusher.rounds))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0  # everything written is kept, none of it waits (the connection's output bound)

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


def _commit_frame(corr: int, group: str, offset: int) -> bytes:
    m = load_messages(8, 8)
    topic_t = child(m.request_type, "topics")
    part_t = child(topic_t, "partitions")
    request = make(
        m.request_type,
        group_id=group,
        generation_id_or_member_epoch=-1,  # a commit from outside any generation (manual assignment)
        member_id="",
        group_instance_id=None,
        topics=(
            make(
                topic_t,
                name="t",
                partitions=(make(part_t, partition_index=0, committed_offset=offset, committed_metadata=""),),
            ),
        ),
    )
    return encode_request(m, corr, request)


def test_commits_landing_on_one_partition_in_one_tick_are_one_batch_and_answered_after_its_fsync(
    tmp_path: Path,
) -> None:
    """Pipelined commits on two connections, all for ``__consumer_offsets``-0, read in one loop
    tick: one batch holding every record in request order, one flush round, no answer written
    before that round ended (default flush settings: fsync before the answer), and each
    connection's answers in one write."""

    async def main() -> None:
        config = BrokerConfig.load(None, ["offsets.topic.num.partitions=1"])
        broker = Broker.open(config, tmp_path, ManualClock())
        groups = GroupRuntime(broker)
        dispatcher = build_dispatcher(broker, groups)
        groups.start()
        try:
            await asyncio.wait_for(groups.loaded.wait(), 30)
            broker.logs.create_topic("t", 1, {})
            plog = broker.logs.partition(OFFSETS_TOPIC, 0)
            end_before = plog.log_end_offset
            batches_before = sum(1 for _ in plog.iter_batches_from(plog.log_start_offset))
            conns = []
            for i, group in enumerate(("a", "b")):
                conn = KafkaConnection(dispatcher, i + 1, 1 << 20)
                transport = _Collecting(broker)
                conn.connection_made(transport)
                conns.append((conn, transport, group))
            rounds_before = broker.flusher.rounds
            for conn, _t, group in conns:  # both connections' bytes in the same tick
                conn.data_received(b"".join(_commit_frame(c, group, 100 + c) for c in range(1, 4)))
            assert all(not t.out for _c, t, _g in conns)  # nothing answered inside the tick
            for _ in range(3000):
                if all(t.out for _c, t, _g in conns):
                    break
                await asyncio.sleep(0.01)
            for _c, transport, _g in conns:
                # the round confirmed all three at once: one write carries the three answers
                assert len(transport.out) == 1
                data, rounds = transport.out[0]
                assert rounds == rounds_before + 1  # written only once the round was done
                answers = []
                while data:
                    size = int.from_bytes(data[:4], "big")
                    answers.append(decode_response(load_messages(8, 8), data[4 : 4 + size]))
                    data = data[4 + size :]
                assert [corr for corr, _r in answers] == [1, 2, 3]
                for _corr, resp in answers:
                    assert [int(p.error_code) for t in resp.topics for p in t.partitions] == [0]
            batches = list(plog.iter_batches_from(end_before))
            assert len(batches) == 1 and batches_before + 1 == sum(
                1 for _ in plog.iter_batches_from(plog.log_start_offset)
            )
            _header, data = batches[0]
            values = [
                (decode_key(key), decode_value(decode_key(key), value))
                for key, value in ((r.key, r.value) for r in decode_records(data))
            ]
            assert [(k.group, v.offset) for k, v in values] == [
                ("a", 101), ("a", 102), ("a", 103), ("b", 101), ("b", 102), ("b", 103)
            ]  # fmt: skip
            assert [o.offset for o in (groups.coordinator.group(g).offsets[("t", 0)] for g in "ab")] == [
                103,
                103,
            ]
        finally:
            await groups.close()
            await broker.close()

    asyncio.run(main())
