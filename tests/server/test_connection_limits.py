"""Connection limits over real loopback sockets: idle expiry (``connections.max.idle.ms``), the
bytes a stalled frame may hold and ``socket.request.max.bytes`` (the connection quotas:
``test_connection_quotas.py``; ``queued.max.request.bytes``: ``test_request_memory_pool.py``).

Idle time is protocol time: the server's sweep runs on a keyed timer service over a
ManualClock that the tests move forward, then fire with ``run_due()``; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import datetime
import logging
import os
import signal
import socket
import struct
import subprocess
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from groupcoord.clock import ManualClock
from groupcoord.config import INT_MAX, BrokerConfig
from groupcoord.errors import ConfigError
from groupcoord.handling import RequestContext
from groupcoord.handling.loop_timers import LoopTimers
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.entities import err, make
from groupcoord.protocol.registry import load_messages
from groupcoord.server.app import KafkaServer
from groupcoord.server.dispatch import Dispatcher
from serve_process import start_serve

ZERO = datetime.timedelta(0)
METADATA, HEARTBEAT = 3, 12
IDLE_MS = 10_000


class State:
    def __init__(self) -> None:
        self.parked: dict[int, asyncio.Future[int]] = {}
        #: correlation ids of the Metadata requests handled, in order
        self.handled: list[int] = []


def metadata(state: State, ctx: RequestContext, req: Any) -> Any:
    state.handled.append(ctx.correlation_id)
    m = load_messages(METADATA, ctx.api_version)
    return make(m.response_type, throttle_time=ZERO, brokers=(), cluster_id="c", controller_id=0, topics=())


def heartbeat(state: State, ctx: RequestContext, req: Any) -> Awaitable[Any]:
    fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    state.parked[ctx.correlation_id] = fut
    m = load_messages(HEARTBEAT, ctx.api_version)

    async def answer() -> Any:
        return make(m.response_type, throttle_time=ZERO, error_code=err(await fut))

    return answer()


class Env:
    def __init__(self, state: State, server: KafkaServer, clock: ManualClock) -> None:
        self.state = state
        self.server = server
        self.clock = clock

    def advance(self, ms: int) -> None:
        """Move protocol time and fire whatever became due (the idle sweep)."""
        self.clock.advance(ms)
        self.server.timers.run_due()


def run(
    scenario: Callable[[Env], Awaitable[None]],
    *,
    max_frame_bytes: int = 1 << 20,
    idle_ms: int = IDLE_MS,
    max_connections: int = INT_MAX,
    **server_args: Any,
) -> None:
    async def main() -> None:
        state = State()
        d: Dispatcher[State] = Dispatcher(state)
        d.add(METADATA, 0, 12, metadata)
        d.add(HEARTBEAT, 0, 4, heartbeat)
        clock = ManualClock()
        server = KafkaServer(
            d,
            host="127.0.0.1",
            port=0,
            max_frame_bytes=max_frame_bytes,
            connections_max_idle_ms=idle_ms,
            max_connections=max_connections,
            timers=LoopTimers(clock),
            **server_args,
        )
        await server.start()
        try:
            await asyncio.wait_for(scenario(Env(state, server, clock)), timeout=60)
        finally:
            await server.stop(grace_s=1)
            server.timers.close()

    asyncio.run(main())


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, env: Env) -> Client:
        r, w = await asyncio.open_connection("127.0.0.1", env.server.port)
        return cls(r, w)

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def md(self, corr: int) -> int:
        """One Metadata round trip; the correlation id answered."""
        m = load_messages(METADATA, 12)
        req = make(m.request_type, topics=(), include_topic_authorized_operations=False)
        await self.send_raw(encode_request(m, corr, req))
        return (await self.recv(METADATA, 12))[0]

    async def hb(self, corr: int) -> None:
        m = load_messages(HEARTBEAT, 4)
        req = make(m.request_type, group_id="g", generation_id=1, member_id="m", group_instance_id=None)
        await self.send_raw(encode_request(m, corr, req))

    async def recv(self, key: int, version: int) -> tuple[int, Any]:
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        return decode_response(load_messages(key, version), await self.reader.readexactly(size))

    async def closed_by_server(self) -> bool:
        try:
            return await self.reader.read(1) == b""
        except ConnectionError:
            return True

    def close(self) -> None:
        self.writer.close()


async def until(pred: Callable[[], bool]) -> None:
    while not pred():
        await asyncio.sleep(0.001)


def server_side(env: Env, before: frozenset[Any]) -> Any:
    (conn,) = env.server.connections - before
    return conn


def closes(records: list[logging.LogRecord], text: str) -> list[str]:
    return [r.getMessage() for r in records if text in r.getMessage()]


# ---------------------------------------------------------------------- connections.max.idle.ms


def test_connection_idle_longer_than_connections_max_idle_ms_is_closed_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Kafka: ``Selector`` closes a connection idle longer than ``connections.max.idle.ms``
    (``Selector.maybeCloseOldestConnection``; ``SelectorTest.testCloseOldestConnection``).
    Exactly that long is not yet too long; one millisecond more is."""
    caplog.set_level(logging.INFO, logger="groupcoord.server")

    async def scenario(env: Env) -> None:
        c = await Client.connect(env)
        assert await c.md(1) == 1
        conn = next(iter(env.server.connections))
        env.advance(IDLE_MS)
        assert conn in env.server.connections and not conn.closed
        env.advance(1)
        assert await c.closed_by_server()
        await until(lambda: not env.server.connections)
        assert len(closes(caplog.records, "connections.max.idle.ms")) == 1
        c.close()

    run(scenario)


def test_bytes_in_either_direction_postpone_idle_expiry() -> None:
    async def scenario(env: Env) -> None:
        c = await Client.connect(env)
        env.advance(IDLE_MS - 2_000)
        assert await c.md(1) == 1  # activity at IDLE_MS - 2000
        env.advance(IDLE_MS - 2_000)  # 2 * IDLE_MS - 4000 since connect, IDLE_MS - 2000 since the request
        assert await c.md(2) == 2
        env.advance(IDLE_MS)
        assert await c.md(3) == 3
        env.advance(IDLE_MS + 1)
        assert await c.closed_by_server()
        c.close()

    run(scenario)


def test_connection_owing_an_answer_is_not_idle_however_long_the_answer_takes() -> None:
    async def scenario(env: Env) -> None:
        c = await Client.connect(env)
        await c.hb(1)
        await until(lambda: 1 in env.state.parked)
        env.advance(5 * IDLE_MS)
        conn = next(iter(env.server.connections))
        assert not conn.closed
        env.state.parked[1].set_result(0)
        corr, resp = await c.recv(HEARTBEAT, 4)
        assert (corr, int(resp.error_code)) == (1, 0)
        env.advance(IDLE_MS)
        assert not conn.closed  # idle since the answer went out, not since the request came in
        env.advance(1)
        assert await c.closed_by_server()
        c.close()

    run(scenario)


def test_idle_expiry_of_minus_one_never_closes() -> None:
    async def scenario(env: Env) -> None:
        c = await Client.connect(env)
        env.advance(1_000 * IDLE_MS)
        assert await c.md(1) == 1
        c.close()

    run(scenario, idle_ms=-1)


# ---------------------------------------------------------------------- bytes held by a stalled frame


@pytest.mark.parametrize(
    ("clients_n", "announced", "sent"),
    [(24, 100 * 1024 * 1024, 1_000), (500, 64 * 1024, 10)],
    ids=["24-frames-of-100-MB", "500-stalled-half-frames"],
)
def test_stalled_frames_hold_only_the_bytes_received_until_idle_expiry(
    clients_n: int, announced: int, sent: int
) -> None:
    """Connections announce a large request and send a little of it: no memory is taken for
    the announced size (only what arrived is buffered), and idle expiry closes every one of
    them. Memory is measured on allocations made by the framing code only, not the process."""

    async def scenario(env: Env) -> None:
        before = env.server.connections
        clients = [await Client.connect(env) for _ in range(clients_n)]
        tracemalloc.start()
        try:
            for c in clients:
                await c.send_raw(struct.pack(">i", announced) + b"x" * sent)
            await until(lambda: len(env.server.connections - before) == clients_n)
            conns = env.server.connections - before
            await until(lambda: all(conn.buffered_bytes == 4 + sent for conn in conns))
            snapshot = tracemalloc.take_snapshot().filter_traces(
                [tracemalloc.Filter(True, "*/groupcoord/protocol/framing.py")]
            )
        finally:
            tracemalloc.stop()
        held = sum(stat.size for stat in snapshot.statistics("filename"))
        assert held < clients_n * 4096 + (1 << 20), f"{held} bytes held by {clients_n} stalled frames"
        env.advance(IDLE_MS + 1)
        for c in clients:
            assert await c.closed_by_server()
            c.close()
        await until(lambda: not env.server.connections)

    run(scenario, max_frame_bytes=104857600)


def test_size_prefix_over_socket_request_max_bytes_closes_the_connection_with_one_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Kafka: ``NetworkReceive.readFrom`` throws ``InvalidReceiveException`` for a size above
    ``socket.request.max.bytes`` and the ``Selector`` closes the channel."""

    async def scenario(env: Env) -> None:
        other = await Client.connect(env)
        c = await Client.connect(env)
        await c.send_raw(struct.pack(">i", 104857601))
        assert await c.closed_by_server()
        lines = [r for r in caplog.records if "socket.request.max.bytes" in r.getMessage()]
        assert len(lines) == 1 and lines[0].exc_info is None
        assert await other.md(7) == 7  # the other connection is untouched
        c.close()
        other.close()

    run(scenario, max_frame_bytes=104857600)


# ---------------------------------------------------------------------- max.connections


# ---------------------------------------------------------------------- the properties


def test_connection_properties_have_kafkas_names_and_defaults() -> None:
    config = BrokerConfig()
    assert (config.connections_max_idle_ms, config.max_connections) == (600_000, 2_147_483_647)
    loaded = BrokerConfig.load(None, ["connections.max.idle.ms=-1", "max.connections=10"])
    assert (loaded.get("connections.max.idle.ms"), loaded.get("max.connections")) == (-1, 10)
    with pytest.raises(ConfigError, match=r"max\.connections"):
        BrokerConfig.load(None, ["max.connections=-1"])
    with pytest.raises(ConfigError, match=r"connections\.max\.idle\.ms"):
        BrokerConfig.load(None, ["connections.max.idle.ms=-2"])


# ---------------------------------------------------------------------- the settings reach the server


def _stop(proc: subprocess.Popen[str]) -> str:
    """SIGTERM by PID; the process's stderr."""
    os.kill(proc.pid, signal.SIGTERM)
    _, err_text = proc.communicate(timeout=60)
    return err_text


def _closed_by_peer(sock: socket.socket) -> bool:
    sock.settimeout(60)
    try:
        return sock.recv(1) == b""
    except ConnectionError:
        return True


def test_serve_closes_a_connection_idle_longer_than_the_configured_connections_max_idle_ms(
    tmp_path: Path,
) -> None:
    proc, port = start_serve(tmp_path / "d", "--set", "connections.max.idle.ms=300")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
            assert _closed_by_peer(sock)  # nothing sent: closed once idle for 300 ms
    finally:
        err_text = _stop(proc)
    assert len([line for line in err_text.splitlines() if "connections.max.idle.ms" in line]) == 1
