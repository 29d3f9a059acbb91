"""Read-your-writes on one connection: a request sees the effects of every earlier request on
its connection, and answers leave in request order, with requests pipelined over one socket.

Kafka reads one request per connection at a time: ``SocketServer.Processor`` mutes a channel
(``KafkaChannel.mute``) once a complete request is read from it and unmutes it only after that
request's response has been sent (``Processor.processCompletedSends`` ->
``tryUnmuteChannel``). So an OffsetFetch written right behind an OffsetCommit on the same
connection is not even read before the commit is answered, and returns the committed offset.

These tests run a real broker in-process (real log on disk, real fsyncs, the group runtime),
with a real server on 127.0.0.1 and raw sockets writing many requests in one go.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import signal
import struct
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from groupcoord.app import build_dispatcher
from groupcoord.broker.state import Broker
from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.formats.batch import build_batch
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.entities import child, make
from groupcoord.protocol.registry import load_messages
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.server.app import KafkaServer
from serve_process import start_serve

PRODUCE, FETCH, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH = 0, 1, 2, 8, 9
TOPIC = "t"


class Env:
    def __init__(self, broker: Broker, server: KafkaServer) -> None:
        self.broker = broker
        self.server = server


def run(tmp: Path, scenario: Callable[[Env], Awaitable[None]], settings: tuple[str, ...] = ()) -> None:
    async def main() -> None:
        config = BrokerConfig.load(
            None, ["listeners=PLAINTEXT://127.0.0.1:0", "offsets.topic.num.partitions=1", *settings]
        )
        broker = Broker.open(config, tmp, ManualClock())
        groups = GroupRuntime(broker)
        dispatcher = build_dispatcher(broker, groups)
        server = KafkaServer(
            dispatcher, host="127.0.0.1", port=0, max_frame_bytes=config.socket_request_max_bytes
        )
        _, port = await server.start()
        broker.advertised_port = port
        groups.start()
        broker.logs.create_topic(TOPIC, 2, {})
        try:
            await asyncio.wait_for(groups.loaded.wait(), timeout=30)
            await asyncio.wait_for(scenario(Env(broker, server)), timeout=60)
        finally:
            await server.stop(grace_s=1)
            await groups.close()
            await broker.close()

    asyncio.run(main())


class Raw:
    """One socket; frames are written in batches and answers read back one by one."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.corr = 0

    @classmethod
    async def connect(cls, env: Env) -> Raw:
        r, w = await asyncio.open_connection("127.0.0.1", env.server.port)
        return cls(r, w)

    def frame(self, key: int, version: int, **body: Any) -> tuple[bytes, int]:
        self.corr += 1
        m = load_messages(key, version)
        return encode_request(m, self.corr, make(m.request_type, **body), client_id="ryw"), self.corr

    async def write(self, frames: list[bytes]) -> None:
        self.writer.write(b"".join(frames))
        await self.writer.drain()

    async def recv(self, key: int, version: int) -> tuple[int, Any]:
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        return decode_response(load_messages(key, version), await self.reader.readexactly(size))

    def close(self) -> None:
        self.writer.close()


def commit_frame(c: Raw, group: str, offset: int, partition: int = 0) -> tuple[bytes, int]:
    topic_t = child(load_messages(OFFSET_COMMIT, 8).request_type, "topics")
    part_t = child(topic_t, "partitions")
    return c.frame(
        OFFSET_COMMIT,
        8,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=(
            topic_t(
                name=TOPIC,
                partitions=(
                    part_t(
                        partition_index=partition,
                        committed_offset=offset,
                        committed_leader_epoch=-1,
                        committed_metadata=f"m{offset}",
                    ),
                ),
            ),
        ),
    )


def fetch_offset_frame(c: Raw, group: str, partition: int = 0) -> tuple[bytes, int]:
    topic_t = child(load_messages(OFFSET_FETCH, 7).request_type, "topics")
    return c.frame(
        OFFSET_FETCH,
        7,
        group_id=group,
        topics=(topic_t(name=TOPIC, partition_indexes=(partition,)),),
        require_stable=False,
    )


def produce_frame(c: Raw, value: bytes, acks: int = -1, partition: int = 0) -> tuple[bytes, int]:
    topic_t = child(load_messages(PRODUCE, 9).request_type, "topic_data")
    part_t = child(topic_t, "partition_data")
    batch = build_batch([(None, value, ())], timestamp_ms=0)
    return c.frame(
        PRODUCE,
        9,
        transactional_id=None,
        acks=acks,
        timeout=datetime.timedelta(seconds=30),
        topic_data=(topic_t(name=TOPIC, partition_data=(part_t(index=partition, records=batch),)),),
    )


def list_offsets_frame(c: Raw, partition: int = 0) -> tuple[bytes, int]:
    topic_t = child(load_messages(LIST_OFFSETS, 7).request_type, "topics")
    part_t = child(topic_t, "partitions")
    return c.frame(
        LIST_OFFSETS,
        7,
        replica_id=-1,
        isolation_level=0,
        topics=(
            topic_t(
                name=TOPIC,
                partitions=(part_t(partition_index=partition, current_leader_epoch=-1, timestamp=-1),),
            ),
        ),
    )


def fetched(resp: Any) -> tuple[int, int, str | None]:
    part = resp.topics[0].partitions[0]
    return int(part.error_code), int(part.committed_offset), part.metadata


def test_offset_fetch_pipelined_behind_offset_commit_sees_the_commit(tmp_path: Path) -> None:
    """Kafka: ``SocketServer.Processor`` mutes the channel (``KafkaChannel.mute``) until the
    OffsetCommit's response is sent, so the OffsetFetch behind it reads the new offset."""

    async def scenario(env: Env) -> None:
        c = await Raw.connect(env)
        rounds = 200
        frames: list[bytes] = []
        expected: list[tuple[int, str, int]] = []
        for i in range(rounds):
            frame, corr = commit_frame(c, "g", 1000 + i)
            frames.append(frame)
            expected.append((corr, "commit", 1000 + i))
            frame, corr = fetch_offset_frame(c, "g")
            frames.append(frame)
            expected.append((corr, "fetch", 1000 + i))
        await c.write(frames)
        seen: list[tuple[int, str, int]] = []
        for _, kind, _ in expected:
            if kind == "commit":
                corr, resp = await c.recv(OFFSET_COMMIT, 8)
                assert int(resp.topics[0].partitions[0].error_code) == 0
                seen.append((corr, "commit", expected[len(seen)][2]))
            else:
                corr, resp = await c.recv(OFFSET_FETCH, 7)
                code, offset, metadata = fetched(resp)
                assert (code, metadata) == (0, f"m{offset}" if offset >= 0 else "")
                seen.append((corr, "fetch", offset))
        stale = [s for s, e in zip(seen, expected, strict=True) if s != e]
        assert stale == [], f"{len(stale)} of {rounds} fetches did not see the commit before them"
        c.close()

    run(tmp_path, scenario)


def test_commits_of_several_groups_pipelined_each_visible_to_the_fetch_behind_it(tmp_path: Path) -> None:
    """Commits to different groups (and partitions) interleaved with fetches of each: every
    fetch returns what the last commit before it on this connection wrote."""

    async def scenario(env: Env) -> None:
        c = await Raw.connect(env)
        frames: list[bytes] = []
        plan: list[tuple[str, str, int, int]] = []
        latest: dict[tuple[str, int], int] = {}
        for i in range(60):
            group, partition = f"g{i % 3}", i % 2
            frame, _ = commit_frame(c, group, i, partition)
            frames.append(frame)
            latest[(group, partition)] = i
            plan.append(("commit", group, partition, i))
            other = f"g{(i + 1) % 3}"
            frame, _ = fetch_offset_frame(c, other, partition)
            frames.append(frame)
            plan.append(("fetch", other, partition, latest.get((other, partition), -1)))
        await c.write(frames)
        for kind, _group, _partition, want in plan:
            if kind == "commit":
                _, resp = await c.recv(OFFSET_COMMIT, 8)
                assert int(resp.topics[0].partitions[0].error_code) == 0
            else:
                _, resp = await c.recv(OFFSET_FETCH, 7)
                assert fetched(resp)[1] == want
        c.close()

    run(tmp_path, scenario)


def test_pipelined_acks_all_produces_are_answered_in_order_with_consecutive_offsets(tmp_path: Path) -> None:
    """Produces behind produces wait for their fsyncs together (what pipelining gains is kept:
    far fewer fsync rounds than produces), the answers still come in request order, each with
    the next offset, and a ListOffsets pipelined behind them sees every record."""

    async def scenario(env: Env) -> None:
        c = await Raw.connect(env)
        rounds = env.broker.flusher.rounds
        frames: list[bytes] = []
        corrs: list[int] = []
        for i in range(50):
            frame, corr = produce_frame(c, b"v%d" % i)
            frames.append(frame)
            corrs.append(corr)
        frame, lo_corr = list_offsets_frame(c)
        frames.append(frame)
        await c.write(frames)
        for i, want in enumerate(corrs):
            corr, resp = await c.recv(PRODUCE, 9)
            part = resp.responses[0].partition_responses[0]
            assert (corr, int(part.error_code), int(part.base_offset)) == (want, 0, i)
        corr, resp = await c.recv(LIST_OFFSETS, 7)
        assert (corr, int(resp.topics[0].partitions[0].offset)) == (lo_corr, 50)
        assert env.broker.flusher.rounds - rounds <= 25
        c.close()

    run(tmp_path, scenario)


def test_pipelined_commits_share_fsync_rounds_and_the_fetch_behind_them_sees_the_last(tmp_path: Path) -> None:
    """Commits behind commits wait for their writes together; every answer is NONE, in request
    order, and an OffsetFetch written behind the run reads the last offset committed."""

    async def scenario(env: Env) -> None:
        c = await Raw.connect(env)
        rounds = env.broker.flusher.rounds
        frames: list[bytes] = []
        corrs: list[int] = []
        for i in range(50):
            frame, corr = commit_frame(c, "g", 100 + i)
            frames.append(frame)
            corrs.append(corr)
        frame, fetch_corr = fetch_offset_frame(c, "g")
        frames.append(frame)
        await c.write(frames)
        answered = []
        for _ in corrs:
            corr, resp = await c.recv(OFFSET_COMMIT, 8)
            answered.append((corr, int(resp.topics[0].partitions[0].error_code)))
        assert answered == [(corr, 0) for corr in corrs]
        corr, resp = await c.recv(OFFSET_FETCH, 7)
        assert (corr, fetched(resp)) == (fetch_corr, (0, 149, "m149"))
        assert env.broker.flusher.rounds - rounds <= 25
        c.close()

    run(tmp_path, scenario)


def test_offset_fetch_on_another_connection_is_not_held_behind_this_connections_commit(
    tmp_path: Path,
) -> None:
    """Muting is per connection: a pending commit on one connection does not stop another
    connection's requests from being read and answered."""

    async def scenario(env: Env) -> None:
        a = await Raw.connect(env)
        b = await Raw.connect(env)
        frame, _ = commit_frame(a, "g", 5)
        await a.write([frame])
        _, resp = await a.recv(OFFSET_COMMIT, 8)
        assert int(resp.topics[0].partitions[0].error_code) == 0
        frame, _ = fetch_offset_frame(b, "g")
        await b.write([frame])
        _, resp = await b.recv(OFFSET_FETCH, 7)
        assert fetched(resp) == (0, 5, "m5")
        a.close()
        b.close()

    run(tmp_path, scenario)


# ---------------------------------------------------------------------- real clients


def _serve(tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    proc, port = start_serve(
        tmp_path / "d", "--set", "offsets.topic.num.partitions=1", stderr=subprocess.DEVNULL
    )
    return proc, f"127.0.0.1:{port}"


def _stop(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGTERM)
    proc.wait(timeout=60)


def test_kafka_python_committed_right_after_commit_async_returns_that_commit(tmp_path: Path) -> None:
    """kafka-python sends the OffsetCommit of ``commit_async`` and then the OffsetFetch of
    ``committed`` on its one connection to the coordinator without waiting in between; on
    Kafka the fetch is read only after the commit is answered (``SocketServer`` muting)."""
    from kafka import KafkaAdminClient, KafkaConsumer
    from kafka.admin import NewTopic
    from kafka.structs import OffsetAndMetadata, TopicPartition

    proc, bootstrap = _serve(tmp_path)
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic(TOPIC, 1, 1)])
        admin.close()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id="g", enable_auto_commit=False)
        tp = TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        seen = []
        for i in range(1, 41):
            consumer.commit_async({tp: OffsetAndMetadata(i * 10, "", -1)})
            seen.append(consumer.committed(tp))
        consumer.close()
    finally:
        _stop(proc)
    assert seen == [i * 10 for i in range(1, 41)]


def test_confluent_kafka_committed_right_after_an_asynchronous_commit_returns_that_commit(
    tmp_path: Path,
) -> None:
    """librdkafka queues an asynchronous OffsetCommit and then ``committed``'s OffsetFetch on
    its coordinator connection; each fetch must see the commit before it, as on Kafka."""
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    proc, bootstrap = _serve(tmp_path)
    try:
        admin = AdminClient({"bootstrap.servers": bootstrap})
        for fut in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            fut.result(timeout=60)
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": False})
        consumer.assign([TopicPartition(TOPIC, 0)])
        # a first, synchronous commit: the client knows its coordinator from then on
        consumer.commit(offsets=[TopicPartition(TOPIC, 0, 0)], asynchronous=False)
        seen = []
        for i in range(1, 41):
            consumer.commit(offsets=[TopicPartition(TOPIC, 0, i * 10)], asynchronous=True)
            seen.append(consumer.committed([TopicPartition(TOPIC, 0)], timeout=30)[0].offset)
        consumer.close()
    finally:
        _stop(proc)
    assert seen == [i * 10 for i in range(1, 41)]
