"""``queued.max.request.bytes`` over real loopback sockets: the broker-wide pool of request bytes.

Kafka: ``SocketServer`` builds a ``SimpleMemoryPool(queuedMaxBytes, socketRequestMaxBytes,
strict = false)`` when ``queued.max.request.bytes`` > 0 (else ``MemoryPool.NONE``); a channel
allocates a request's size once its size prefix is read (``NetworkReceive.readFrom``), mutes
itself when the pool refuses (``KafkaChannel``, ``MUTED_AND_OUT_OF_MEMORY``), and ``Selector.poll``
unmutes it once the pool is no longer out of memory (``SelectorTest.testMuteOnOOM``,
``SimpleMemoryPoolTest``). ``KafkaConfig.validateValues`` requires the pool to be at least
``socket.request.max.bytes``.
"""

from __future__ import annotations

import uuid

import pytest
from test_connection_limits import Client, Env, run, until

from groupcoord.config import BrokerConfig
from groupcoord.errors import ConfigError
from groupcoord.protocol.client import encode_request
from groupcoord.protocol.entities import child, make
from groupcoord.protocol.registry import load_messages
from groupcoord.server.memory_pool import MemoryPool

METADATA = 3
POOL = 500_000


def big_metadata(corr: int, topics: int = 3_000) -> bytes:
    """A Metadata v12 request frame of some 650 KB (many long topic names)."""
    m = load_messages(METADATA, 12)
    topic_t = child(m.request_type, "topics")
    names = tuple(make(topic_t, topic_id=uuid.UUID(int=0), name=f"{i:0200d}") for i in range(topics))
    return encode_request(
        m, corr, make(m.request_type, topics=names, include_topic_authorized_operations=False)
    )


def small_metadata(corr: int) -> bytes:
    m = load_messages(METADATA, 12)
    return encode_request(m, corr, make(m.request_type, topics=(), include_topic_authorized_operations=False))


def pool(env: Env) -> MemoryPool:
    assert env.server.memory_pool is not None
    return env.server.memory_pool


def test_a_connection_waits_unread_while_the_pool_is_exhausted_and_goes_on_when_it_is_released() -> None:
    big = big_metadata(1)
    assert len(big) - 4 > POOL

    async def scenario(env: Env) -> None:
        a = await Client.connect(env)
        b = await Client.connect(env)
        await a.send_raw(big[:-100])  # the whole size is taken from the pool at the prefix
        await until(lambda: pool(env).available == POOL - (len(big) - 4))
        await b.send_raw(small_metadata(2))
        await until(lambda: pool(env).waiting == 1)  # out of memory: b waits, its frame unread
        assert env.state.handled == []
        await a.send_raw(big[-100:])
        assert (await a.recv(METADATA, 12))[0] == 1
        assert (await b.recv(METADATA, 12))[0] == 2
        assert env.state.handled == [1, 2]
        await until(lambda: pool(env).available == POOL and pool(env).waiting == 0)
        a.close()
        b.close()

    run(scenario, queued_max_request_bytes=POOL)


def test_the_pool_is_not_strict_any_memory_available_admits_a_whole_frame() -> None:
    """``SimpleMemoryPool.tryAllocate`` with strict = false: threshold 1, so a frame larger
    than what is left is admitted while anything is left, and the pool goes negative."""
    big = big_metadata(1, topics=1_000)  # ~220 KB: two fit in 500 KB only by going below zero

    async def scenario(env: Env) -> None:
        a = await Client.connect(env)
        b = await Client.connect(env)
        c = await Client.connect(env)
        await a.send_raw(big[:-10])
        await b.send_raw(big[:-10])
        await until(lambda: pool(env).available == POOL - 2 * (len(big) - 4))
        await a.send_raw(big[-10:])  # a's frame handled: its bytes go back
        assert (await a.recv(METADATA, 12))[0] == 1
        await c.send_raw(big[:-10])
        await until(lambda: pool(env).available == POOL - 2 * (len(big) - 4))
        assert pool(env).waiting == 0
        for client in (b, c):
            await client.send_raw(big[-10:])
            assert (await client.recv(METADATA, 12))[0] == 1
        await until(lambda: pool(env).available == POOL)
        for client in (a, b, c):
            client.close()

    run(scenario, queued_max_request_bytes=POOL)


def test_a_connection_closed_mid_frame_gives_its_bytes_back_and_wakes_the_waiting() -> None:
    big = big_metadata(1)

    async def scenario(env: Env) -> None:
        a = await Client.connect(env)
        b = await Client.connect(env)
        await a.send_raw(big[:1000])
        await until(lambda: pool(env).available < 0)
        await b.send_raw(small_metadata(7))
        await until(lambda: pool(env).waiting == 1)
        a.close()
        assert (await b.recv(METADATA, 12))[0] == 7
        await until(lambda: pool(env).available == POOL)
        b.close()

    run(scenario, queued_max_request_bytes=POOL)


def test_without_queued_max_request_bytes_there_is_no_pool() -> None:
    async def scenario(env: Env) -> None:
        assert env.server.memory_pool is None
        c = await Client.connect(env)
        await c.send_raw(big_metadata(3))
        assert (await c.recv(METADATA, 12))[0] == 3
        c.close()

    run(scenario, max_frame_bytes=1 << 20)


def test_queued_max_request_bytes_has_kafkas_default_and_must_cover_socket_request_max_bytes() -> None:
    assert (
        BrokerConfig().queued_max_request_bytes == -1
    )  # SocketServerConfigs.QUEUED_MAX_REQUEST_BYTES_DEFAULT
    assert (
        BrokerConfig.load(None, ["queued.max.request.bytes=104857600"]).queued_max_request_bytes == 104857600
    )
    assert BrokerConfig.load(None, ["queued.max.request.bytes=0"]).queued_max_request_bytes == 0
    with pytest.raises(
        ConfigError, match=r"queued.max.request.bytes \(1000\) must be larger or equal to socket"
    ):
        BrokerConfig.load(None, ["queued.max.request.bytes=1000"])
    config = BrokerConfig.load(None, ["queued.max.request.bytes=2000", "socket.request.max.bytes=1500"])
    assert config.queued_max_request_bytes == 2000
