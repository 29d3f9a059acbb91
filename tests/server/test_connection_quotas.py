"""Connection quotas with Kafka's semantics (``SocketServer.ConnectionQuotas``, its acceptor, and
``ConnectionQuotasTest`` / ``SocketServerTest``): which connections wait and which are closed.

Time is protocol time: the acceptor's waits run on the server's keyed timer service over a
ManualClock that the tests move forward.
"""

from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest
from test_connection_limits import Client, Env, _closed_by_peer, _stop, closes, run, until

from groupcoord.config import INT_MAX, BrokerConfig
from groupcoord.errors import ConfigError
from groupcoord.protocol.client import encode_request
from groupcoord.protocol.entities import make
from groupcoord.protocol.registry import load_messages
from groupcoord.server.connection_quotas import ConnectionQuotas
from serve_process import start_serve

METADATA = 3


async def send_md(client: Client, corr: int) -> None:
    m = load_messages(METADATA, 12)
    req = make(m.request_type, topics=(), include_topic_authorized_operations=False)
    await client.send_raw(encode_request(m, corr, req))


def test_a_connection_beyond_max_connections_waits_unread_until_a_slot_frees() -> None:
    """``ConnectionQuotas.waitForConnectionSlot``: the acceptor stops taking connections while
    ``max.connections`` are open; the next one is served as soon as one closes
    (``ConnectionQuotasTest.testMaxBrokerWideConnectionLimit``)."""

    async def scenario(env: Env) -> None:
        a = await Client.connect(env)
        b = await Client.connect(env)
        assert await a.md(1) == 1 and await b.md(2) == 2
        c = await Client.connect(env)
        await send_md(c, 3)
        await until(lambda: env.server.acceptor.waiting == 1)
        assert env.state.handled == [1, 2]  # c's request is not read while it waits
        assert await a.md(4) == 4  # the open ones are untouched
        a.close()
        assert (await c.recv(METADATA, 12))[0] == 3  # admitted once a's slot is free
        assert env.state.handled == [1, 2, 4, 3]
        assert env.server.acceptor.waiting == 0 and env.server.connection_quotas.total == 2
        b.close()
        c.close()

    run(scenario, connection_quotas=ConnectionQuotas(max_connections=2))


def test_a_connection_over_max_connections_per_ip_is_closed_with_kafkas_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``TooManyConnectionsException``: closed at once, logged at INFO by the acceptor
    (``SocketServerTest.testMaxConnectionsPerIp``)."""
    caplog.set_level(logging.INFO, logger="groupcoord.server.connection_quotas")

    async def scenario(env: Env) -> None:
        a = await Client.connect(env)
        b = await Client.connect(env)
        assert await a.md(1) == 1 and await b.md(2) == 2
        refused = await Client.connect(env)
        assert await refused.closed_by_server()
        line = (
            "Rejected connection from 127.0.0.1, address already has the configured maximum of 2 connections."
        )
        assert closes(caplog.records, "Rejected connection") == [line]
        assert env.server.traffic.refused == 1
        a.close()
        await until(lambda: env.server.connection_quotas.counts == {"127.0.0.1": 1})
        c = await Client.connect(env)  # below the maximum again
        assert await c.md(3) == 3
        refused.close()
        b.close()
        c.close()

    run(scenario, connection_quotas=ConnectionQuotas(max_connections_per_ip=2))


def test_max_connections_per_ip_overrides_name_hosts_and_win_over_the_default() -> None:
    """``max.connections.per.ip.overrides``: host names are resolved
    (``SocketServerTest.testMaxConnectionsPerIpOverrides``)."""

    async def scenario(env: Env) -> None:
        assert env.server.connection_quotas.overrides == {"127.0.0.1": 1}
        a = await Client.connect(env)
        assert await a.md(1) == 1
        refused = await Client.connect(env)
        assert await refused.closed_by_server()
        a.close()
        refused.close()

    run(scenario, connection_quotas=ConnectionQuotas(max_connections_per_ip=5, overrides={"localhost": 1}))


def test_connections_over_max_connection_creation_rate_wait_the_throttle_time() -> None:
    """KIP-612's broker-wide rate: 11 windows of 1 s, so a burst at one instant is measured over
    10 s; the 21st connection at a limit of 2/s makes the rate 2.1/s and the acceptor waits
    (2.1 - 2) / 2 * 10,000 = 500 ms (``QuotaUtils.throttleTime``) before taking it
    (``ConnectionQuotasTest.testBrokerConnectionRateLimitWhenActualRateAboveLimit``)."""

    async def scenario(env: Env) -> None:
        clients = [await Client.connect(env) for _ in range(21)]
        await until(lambda: env.server.connection_quotas.total == 20 and env.server.acceptor.waiting == 1)
        await send_md(clients[20], 21)
        env.advance(499)
        assert env.server.acceptor.waiting == 1 and env.state.handled == []
        env.advance(1)
        assert (await clients[20].recv(METADATA, 12))[0] == 21
        assert env.server.connection_quotas.total == 21
        for client in clients:
            client.close()

    run(scenario, connection_quotas=ConnectionQuotas(max_connection_creation_rate=2))


def test_a_connection_over_its_ip_connection_creation_rate_is_closed_after_the_throttle_time() -> None:
    """KIP-612's per-IP ``connection_creation_rate`` quota: the connection is not counted and is
    closed when the throttle time has passed (``ConnectionThrottledException``,
    ``DelayedCloseSocket``)."""

    async def scenario(env: Env) -> None:
        ok = [await Client.connect(env) for _ in range(20)]
        await until(lambda: env.server.connection_quotas.total == 20)
        throttled = await Client.connect(env)
        await until(lambda: len(env.server.connections) == 21 and env.server.acceptor.waiting == 0)
        assert env.server.connection_quotas.total == 20
        env.advance(499)
        assert len(env.server.connections) == 21
        env.advance(1)
        assert await throttled.closed_by_server()
        for client in ok:
            client.close()
        throttled.close()

    quotas = ConnectionQuotas(ip_connection_rate=lambda ip: 2 if ip == "127.0.0.1" else INT_MAX)
    run(scenario, connection_quotas=quotas)


def test_connection_quota_properties_have_kafkas_names_and_defaults() -> None:
    config = BrokerConfig()
    assert (config.max_connections, config.max_connections_per_ip, config.max_connection_creation_rate) == (
        INT_MAX,
        INT_MAX,
        INT_MAX,
    )
    assert config.max_connections_per_ip_overrides == ""
    assert (config.quota_window_num, config.quota_window_size_seconds) == (11, 1)
    loaded = BrokerConfig.load(
        None, ["max.connections.per.ip=0", "max.connections.per.ip.overrides=a:1, b:2"]
    )
    assert loaded.connections_per_ip_overrides() == {"a": 1, "b": 2}
    with pytest.raises(ConfigError, match=r"max.connections.per.ip can be set to zero only if"):
        BrokerConfig.load(None, ["max.connections.per.ip=0"])  # KafkaConfig.validateValues
    with pytest.raises(ConfigError, match=r"max\.connections\.per\.ip\.overrides"):
        BrokerConfig.load(None, ["max.connections.per.ip.overrides=nocount"])
    with pytest.raises(ConfigError, match=r"max\.connection\.creation\.rate"):
        BrokerConfig.load(None, ["max.connection.creation.rate=-1"])


def test_serve_closes_a_connection_over_the_configured_max_connections_per_ip(tmp_path: Path) -> None:
    proc, port = start_serve(tmp_path / "d", "--set", "max.connections.per.ip=1")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=60) as first:
            m = load_messages(METADATA, 12)
            req = make(m.request_type, topics=(), include_topic_authorized_operations=False)
            first.sendall(encode_request(m, 5, req))
            assert first.recv(1)  # answered: this one is in
            with socket.create_connection(("127.0.0.1", port), timeout=60) as second:
                assert _closed_by_peer(second)
    finally:
        err_text = _stop(proc)
    assert len([line for line in err_text.splitlines() if "Rejected connection from 127.0.0.1" in line]) == 1
