"""Connection limits per listener and across listeners, as Kafka's ``ConnectionQuotas``
(``SocketServer.scala``: ``connectionSlotAvailable`` checks the listener's count against
``listener.name.<l>.max.connections`` and the broker's total against ``max.connections``; ``dec``
wakes every waiting acceptor; ``ConnectionQuotasTest.testMaxListenerConnectionLimits`` and
``testMaxBrokerWideConnectionLimit``).

Two listeners are two servers sharing one :class:`ConnectionQuotas`, as ``groupcoord.app`` builds
them. Time is protocol time (a ManualClock); nothing here waits on the wall clock.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest
from test_connection_limits import METADATA, Client, State, heartbeat, metadata, until
from test_connection_quotas import send_md

from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.errors import ConfigError
from groupcoord.handling.loop_timers import LoopTimers
from groupcoord.server.app import KafkaServer
from groupcoord.server.connection_quotas import ConnectionQuotas
from groupcoord.server.dispatch import Dispatcher
from groupcoord.server.session import ListenerSecurity

HEARTBEAT = 12


class _Port:
    """What ``Client.connect`` needs of an environment: the port to dial."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server


def run_two(
    quotas: ConnectionQuotas,
    scenario: Callable[[KafkaServer, KafkaServer, State], Awaitable[None]],
) -> None:
    async def main() -> None:
        state = State()
        d: Dispatcher[State] = Dispatcher(state)
        d.add(METADATA, 0, 12, metadata)
        d.add(HEARTBEAT, 0, 4, heartbeat)
        timers = LoopTimers(ManualClock())
        servers = [
            KafkaServer(
                d,
                host="127.0.0.1",
                port=0,
                max_frame_bytes=1 << 20,
                connections_max_idle_ms=10_000,
                timers=timers,
                security=ListenerSecurity(name=name),
                connection_quotas=quotas,
            )
            for name in ("PLAINTEXT", "OTHER")
        ]
        for server in servers:
            await server.start()
        try:
            await asyncio.wait_for(scenario(servers[0], servers[1], state), timeout=60)
        finally:
            for server in servers:
                await server.stop(grace_s=1)
            timers.close()

    asyncio.run(main())


async def connect(server: KafkaServer) -> Client:
    return await Client.connect(_Port(server))  # type: ignore[arg-type]


def test_a_listeners_own_max_connections_holds_its_connections_while_another_listener_admits() -> None:
    """``listener.name.plaintext.max.connections=1``: a second connection on PLAINTEXT waits
    unread (``waitForConnectionSlot`` on that listener's acceptor), one on OTHER is served, and
    the waiting one is served once the first closes."""

    async def scenario(plain: KafkaServer, other: KafkaServer, state: State) -> None:
        a1 = await connect(plain)
        assert await a1.md(1) == 1
        a2 = await connect(plain)
        await send_md(a2, 2)
        await until(lambda: plain.acceptor.waiting == 1)
        b1 = await connect(other)
        assert await b1.md(3) == 3  # the other listener is not held back
        assert state.handled == [1, 3]  # a2's request was not read
        assert quotas.listener_counts == {"PLAINTEXT": 1, "OTHER": 1} and quotas.total == 2
        a1.close()
        assert (await a2.recv(METADATA, 12))[0] == 2
        assert state.handled == [1, 3, 2] and plain.acceptor.waiting == 0
        a2.close()
        b1.close()

    quotas = ConnectionQuotas()
    quotas.listener_max = {"PLAINTEXT": 1}
    run_two(quotas, scenario)


def test_max_connections_counts_every_listener_and_a_close_on_one_admits_a_waiter_on_another() -> None:
    """``max.connections=2`` is broker-wide: one connection on each listener fills it, a third
    on PLAINTEXT waits, and a close on OTHER frees the slot it takes (``dec`` notifies every
    acceptor). No listener is exempt: Kafka exempts only the inter-broker listener (KIP-402),
    which a single broker does not have."""

    async def scenario(plain: KafkaServer, other: KafkaServer, state: State) -> None:
        a1 = await connect(plain)
        b1 = await connect(other)
        assert await a1.md(1) == 1 and await b1.md(2) == 2
        a2 = await connect(plain)
        await send_md(a2, 3)
        await until(lambda: plain.acceptor.waiting == 1)
        b2 = await connect(other)
        await send_md(b2, 4)
        await until(lambda: other.acceptor.waiting == 1)
        assert state.handled == [1, 2]
        b1.close()  # frees a slot on OTHER's acceptor; the oldest waiter of each may take it
        await until(lambda: plain.acceptor.waiting + other.acceptor.waiting == 1)
        assert quotas.total == 2
        a1.close()
        await until(lambda: plain.acceptor.waiting + other.acceptor.waiting == 0)
        assert sorted(state.handled) == [1, 2, 3, 4]
        for c in (a2, b2):
            c.close()

    quotas = ConnectionQuotas(max_connections=2)
    run_two(quotas, scenario)


def test_listener_max_connections_property_is_read_per_listener_and_checked() -> None:
    config = BrokerConfig.load(
        None,
        [
            "listeners=PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
            "listener.name.other.max.connections=5",
        ],
    )
    assert config.listener_max_connections() == {"OTHER": 5}
    with pytest.raises(ConfigError, match=r"listener\.name\.plaintext\.max\.connections"):
        BrokerConfig.load(None, ["listener.name.plaintext.max.connections=-1"])
    with pytest.raises(ConfigError, match=r"listener\.name\.plaintext\.max\.connections"):
        BrokerConfig.load(None, ["listener.name.plaintext.max.connections=many"])
