"""An in-process broker (real log on disk, real server on loopback) and a raw kio client.

Tests drive it with exact requests and assert exact responses; time is a ManualClock that
the test advances, and ``broker.timers.run_due()`` fires whatever became due.
"""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from groupcoord.app import build_dispatcher
from groupcoord.broker.state import Broker
from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.protocol.client import AsyncWireClient
from groupcoord.protocol.entities import child, make
from groupcoord.protocol.registry import load_messages
from groupcoord.server.app import KafkaServer

PRODUCE_KEY = 0


class Conn(AsyncWireClient):
    """A connection of the package's raw wire client; requests are built with ``make``."""

    async def send(self, key: int, version: int, **body: Any) -> int:  # type: ignore[override]
        m = load_messages(key, version)
        answered = not (key == PRODUCE_KEY and body.get("acks") == 0)  # acks=0: no answer at all
        return await self.send_entity(m, make(m.request_type, **body), answered=answered)

    async def recv(self, key: int, version: int) -> tuple[int, Any]:  # type: ignore[override]
        """(correlation id, answer) of the oldest pending request (key and version name it)."""
        return await self.recv_with_id()

    async def call(self, key: int, version: int, **body: Any) -> Any:
        await self.send(key, version, **body)
        return (await self.recv_with_id())[1]


class Env:
    def __init__(self, broker: Broker, server: KafkaServer, clock: ManualClock) -> None:
        self.broker = broker
        self.server = server
        self.clock = clock

    async def connect(self) -> Conn:
        r, w = await asyncio.open_connection("127.0.0.1", self.server.port)
        return Conn(r, w, client_id="harness")


async def produce_all(env: Env, records: bytes, topic: str = "t", partition: int = 0) -> Any:
    """One Produce v9 (acks=-1) of ``records`` to one partition, on a connection of its own; the
    partition's response."""
    part_t = nested(PRODUCE_KEY, 9, "topic_data", "partition_data")
    topic_t = nested(PRODUCE_KEY, 9, "topic_data")
    c = await env.connect()
    try:
        resp = await c.call(
            PRODUCE_KEY,
            9,
            transactional_id=None,
            acks=-1,
            timeout=datetime.timedelta(seconds=5),
            topic_data=(topic_t(name=topic, partition_data=(part_t(index=partition, records=records),)),),
        )
    finally:
        c.close()
    return resp.responses[0].partition_responses[0]


def req_type(key: int, version: int) -> type[Any]:
    return load_messages(key, version).request_type


def nested(key: int, version: int, *path: str) -> type[Any]:
    t = req_type(key, version)
    for name in path:
        t = child(t, name)
    return t


def run_broker(
    data_dir: Path,
    scenario: Callable[[Env], Awaitable[None]],
    settings: tuple[str, ...] = (),
    clock: ManualClock | None = None,
) -> None:
    async def main() -> None:
        config = BrokerConfig.load(None, ["listeners=PLAINTEXT://127.0.0.1:0", *settings])
        the_clock = clock or ManualClock()
        broker = Broker.open(config, data_dir, the_clock)
        dispatcher = build_dispatcher(broker, None)
        server = KafkaServer(
            dispatcher, host="127.0.0.1", port=0, max_frame_bytes=config.socket_request_max_bytes
        )
        _, port = await server.start()
        broker.advertised_port = port
        try:
            await asyncio.wait_for(scenario(Env(broker, server, the_clock)), timeout=30)
        finally:
            await server.stop(grace_s=1)
            await broker.close()

    asyncio.run(main())
