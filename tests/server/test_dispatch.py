"""The dispatcher: routes keyed by ApiKey, the registry they fill, and the interceptor seam."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from groupcoord.app import GROUP_APIS, TXN_APIS, build_dispatcher, routes
from groupcoord.broker.state import Broker
from groupcoord.clock import ManualClock
from groupcoord.config import BrokerConfig
from groupcoord.handling import HandlerResult, Proceed, RequestContext, Route
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.registry import ApiRegistry
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.runtime.txn_runtime import TxnRuntime
from groupcoord.server.dispatch import Dispatcher


def _ctx(api_key: int, version: int = 0) -> RequestContext:
    return RequestContext(
        connection_id=1,
        client_id="t",
        client_host="/127.0.0.1",
        api_key=api_key,
        api_version=version,
        correlation_id=7,
    )


def _heartbeat(state: list[str], ctx: RequestContext, request: Any) -> Any:
    state.append(f"handler:{request}")
    return "answer"


HEARTBEAT = Route(api_key=ApiKey.HEARTBEAT, min_version=0, max_version=4, handler=_heartbeat)


def test_routes_fill_the_given_registry_with_exactly_their_ranges() -> None:
    registry = ApiRegistry()
    Dispatcher([], [HEARTBEAT], registry=registry)
    assert registry.ranges() == [(12, 0, 4)]


def test_a_key_routed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        Dispatcher([], [HEARTBEAT, HEARTBEAT])


def test_without_an_interceptor_the_handler_gets_the_state_and_answers() -> None:
    calls: list[str] = []
    assert Dispatcher(calls, [HEARTBEAT]).call(_ctx(12), "r1") == "answer"
    assert calls == ["handler:r1"]


def test_an_interceptor_may_answer_itself_without_the_handler_running() -> None:
    calls: list[str] = []

    def refuse(ctx: RequestContext, request: Any, proceed: Proceed) -> HandlerResult:
        calls.append(f"interceptor:{ctx.api_key}:{request}")
        return "injected"

    d = Dispatcher(calls, [HEARTBEAT], interceptor=refuse)
    assert d.call(_ctx(12), "r1") == "injected"
    assert calls == ["interceptor:12:r1"]


def test_an_interceptor_that_proceeds_returns_the_handlers_answer() -> None:
    calls: list[str] = []

    def observe(ctx: RequestContext, request: Any, proceed: Proceed) -> HandlerResult:
        calls.append("before")
        answer = proceed(ctx, request)
        calls.append("after")
        return answer

    d = Dispatcher(calls, [HEARTBEAT], interceptor=observe)
    assert d.call(_ctx(12), "r2") == "answer"
    assert calls == ["before", "handler:r2", "after"]


def test_the_route_table_is_keyed_by_each_routes_own_api_key(tmp_path: Path) -> None:
    broker = Broker.open(BrokerConfig.load(None, []), tmp_path, ManualClock())
    try:
        table = routes(GroupRuntime(broker))
        assert all(key is route.api_key for key, route in table.items())
        assert set(table) >= GROUP_APIS
        assert {ApiKey.JOIN_GROUP, ApiKey.OFFSET_COMMIT, ApiKey.FETCH, ApiKey.API_VERSIONS} <= set(table)
        assert not set(routes(None)) & GROUP_APIS
    finally:
        asyncio.run(broker.close())


def test_the_transaction_apis_are_routed_and_transactions_served_only_with_a_transaction_runtime(
    tmp_path: Path,
) -> None:
    broker = Broker.open(BrokerConfig.load(None, []), tmp_path, ManualClock())
    try:
        groups = GroupRuntime(broker)
        assert not set(routes(groups)) & TXN_APIS
        assert ApiKey.INIT_PRODUCER_ID in routes(None)  # idempotent producers need no coordinator
        assert not broker.serves_transactions
        build_dispatcher(broker, groups, TxnRuntime(broker))
        assert broker.serves_transactions
        assert set(routes(groups, TxnRuntime(broker))) >= TXN_APIS | GROUP_APIS
    finally:
        asyncio.run(broker.close())
