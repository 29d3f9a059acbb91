"""Fault injection at one point of the request path: the interceptor the composition root installs.

Every request a client sends passes :meth:`FaultInjector.__call__` before its route's handler
(``groupcoord.handling.Interceptor``). The injector matches it against the rules the test set
(from the test's thread, or from the control channel of a subprocess broker; a lock guards
them) and then

* answers it itself with an error code (:meth:`FaultInjector.fail_next`), for any API: the
  handler is never called, so the request changes nothing in the broker, as when Kafka's
  request layer rejects a request before the coordinator or the log sees it. The answer is
  built from the API's response schema by :func:`error_answer` (the code where that API's
  clients read it: per partition, per topic, per group, or at the top);
* lets the handler run and holds the answer (:meth:`FaultInjector.delay`);
* severs the connection instead of answering (:meth:`FaultInjector.disconnect_next`): the
  request is not handled, the client sees its connection drop with the request in flight;
* for a dropped heartbeat (:meth:`FaultInjector.drop_heartbeats`), keeps it from the
  coordinator and answers it itself as if all were well (error NONE): the member's session is
  not renewed, the coordinator's own session timer removes it and the group rebalances
  without it, while the client, told nothing, goes on believing it owns its partitions (a
  zombie: its commits then fail with UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION). When the rule
  is cleared its heartbeats reach the coordinator again, the client learns it was removed
  and rejoins.

Rules match on the API and optionally on the client id (every request's header has one) and
the group: a rule with ``group=`` matches only requests that name a group (the group APIs,
FindCoordinator for a group, TxnOffsetCommit and AddOffsetsToTxn), never a Produce or a Fetch.

It also remembers each connection's client id, so :meth:`FaultInjector.connections_of` can
name the connections :meth:`groupcoord.testing.Broker.disconnect` severs.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groupcoord.errors import ErrorCode
from groupcoord.protocol.error_answers import error_answer

log = logging.getLogger(__name__)

__all__ = ["API_NAMES", "FaultInjector", "api_key_of", "error_answer", "error_code_of"]

#: Kafka's names of the APIs (the ``name`` of each message in Kafka's JSON specs, without
#: ``Request``), the way ``fail_next``, ``delay`` and ``disconnect`` accept them. Any API the
#: broker serves can be named (or given by number).
API_NAMES: dict[str, int] = {
    "Produce": 0,
    "Fetch": 1,
    "ListOffsets": 2,
    "Metadata": 3,
    "OffsetCommit": 8,
    "OffsetFetch": 9,
    "FindCoordinator": 10,
    "JoinGroup": 11,
    "Heartbeat": 12,
    "LeaveGroup": 13,
    "SyncGroup": 14,
    "DescribeGroups": 15,
    "ListGroups": 16,
    "SaslHandshake": 17,
    "ApiVersions": 18,
    "CreateTopics": 19,
    "DeleteTopics": 20,
    "DeleteRecords": 21,
    "InitProducerId": 22,
    "OffsetForLeaderEpoch": 23,
    "AddPartitionsToTxn": 24,
    "AddOffsetsToTxn": 25,
    "EndTxn": 26,
    "WriteTxnMarkers": 27,
    "TxnOffsetCommit": 28,
    "DescribeAcls": 29,
    "CreateAcls": 30,
    "DeleteAcls": 31,
    "DescribeConfigs": 32,
    "AlterConfigs": 33,
    "DescribeLogDirs": 35,
    "SaslAuthenticate": 36,
    "CreatePartitions": 37,
    "DeleteGroups": 42,
    "ElectLeaders": 43,
    "IncrementalAlterConfigs": 44,
    "OffsetDelete": 47,
    "DescribeClientQuotas": 48,
    "DescribeUserScramCredentials": 50,
    "AlterUserScramCredentials": 51,
    "AlterClientQuotas": 49,
    "DescribeCluster": 60,
    "DescribeProducers": 61,
    "DescribeTransactions": 65,
    "ListTransactions": 66,
    "ConsumerGroupHeartbeat": 68,
    "ConsumerGroupDescribe": 69,
}
_PRODUCE = 0
_FIND_COORDINATOR = 10
_HEARTBEAT = 12


def api_key_of(api: str | int) -> int:
    """An API key from Kafka's name (``"OffsetCommit"``) or its number."""
    if isinstance(api, int):
        return api
    try:
        return API_NAMES[api]
    except KeyError:
        raise ValueError(f"unknown API {api!r}; one of {', '.join(API_NAMES)} or a number") from None


def api_name_of(api_key: int) -> str:
    for name, key in API_NAMES.items():
        if key == api_key:
            return name
    return str(api_key)


def error_code_of(error: str | int | ErrorCode) -> ErrorCode:
    """An error code from Kafka's name (``"REBALANCE_IN_PROGRESS"``) or its number."""
    if isinstance(error, str):
        try:
            return ErrorCode[error.upper()]
        except KeyError:
            raise ValueError(f"unknown Kafka error {error!r}") from None
    return ErrorCode(int(error))


@dataclass(kw_only=True, slots=True)
class _Rule:
    api_key: int
    group: str | None
    client_id: str | None
    remaining: int | None  # None: until cleared
    error: ErrorCode | None = None
    delay_s: float = 0.0

    def matches(self, api_key: int, group: str | None, client_id: str) -> bool:
        return (
            self.api_key == api_key
            and (self.group is None or self.group == group)
            and (self.client_id is None or self.client_id == client_id)
            and (self.remaining is None or self.remaining > 0)
        )


def _group_of(request: Any) -> str | None:
    """The group a request names, if any (None for Produce, Fetch, Metadata, ...)."""
    group = getattr(request, "group_id", None)
    if group is None and int(getattr(request, "key_type", 0)) == 0:
        group = getattr(request, "key", None)  # FindCoordinator up to v3, for a group
        if group is None:
            keys = getattr(request, "coordinator_keys", None)
            if keys and isinstance(keys[0], str):
                group = keys[0]
    if group is None:
        # DescribeGroups, DeleteGroups, OffsetFetch v8+, ConsumerGroupDescribe
        for name in ("groups", "groups_names", "group_ids"):
            items = getattr(request, name, None)
            if items:
                first = items[0]
                group = first if isinstance(first, str) else getattr(first, "group_id", None)
                break
    return None if group is None else str(group)


class FaultInjector:
    """The broker's request interceptor; see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fail: list[_Rule] = []
        self._delay: list[_Rule] = []
        self._sever: list[_Rule] = []
        self._dropped: set[tuple[str, str]] = set()
        self._client_ids: dict[int, str] = {}
        #: every group a request named (the pytest plugin reports their events on failure)
        self.groups_seen: set[str] = set()
        #: set by the broker once running: the response type of an (api key, version)
        self.response_type: Callable[[int, int], type[Any]] | None = None
        #: set by the broker once running: close a connection by id (called on the loop)
        self.sever: Callable[[int], None] | None = None

    # ------------------------------------------------------------------ rules (test thread)
    def fail_next(
        self,
        api: str | int,
        error: str | int | ErrorCode,
        count: int = 1,
        *,
        group: str | None = None,
        client_id: str | None = None,
    ) -> None:
        self._add(self._fail, api, count, group, client_id, error=error)

    def delay(
        self,
        api: str | int,
        seconds: float,
        count: int | None = None,
        *,
        group: str | None = None,
        client_id: str | None = None,
    ) -> None:
        if seconds < 0:
            raise ValueError("a delay cannot be negative")
        self._add(self._delay, api, count, group, client_id, delay_s=seconds)

    def disconnect_next(
        self,
        api: str | int,
        count: int = 1,
        *,
        group: str | None = None,
        client_id: str | None = None,
    ) -> None:
        """Sever the connection of the next ``count`` matching requests instead of handling them."""
        self._add(self._sever, api, count, group, client_id)

    def _add(
        self,
        rules: list[_Rule],
        api: str | int,
        count: int | None,
        group: str | None,
        client_id: str | None,
        *,
        error: str | int | ErrorCode | None = None,
        delay_s: float = 0.0,
    ) -> None:
        """A rule for the next ``count`` matching requests (None: until cleared) onto ``rules``."""
        if count is not None and count < 1:
            raise ValueError("count must be at least 1")
        rule = _Rule(
            api_key=api_key_of(api),
            group=group,
            client_id=client_id,
            remaining=count,
            error=None if error is None else error_code_of(error),
            delay_s=delay_s,
        )
        with self._lock:
            rules.append(rule)

    def drop_heartbeats(self, group: str, member_or_client_id: str) -> None:
        with self._lock:
            self._dropped.add((group, member_or_client_id))

    def clear(self) -> None:
        """Remove every rule (failures and disconnections not yet used, delays, dropped heartbeats)."""
        with self._lock:
            self._fail.clear()
            self._delay.clear()
            self._sever.clear()
            self._dropped.clear()

    def pending_failures(self) -> int:
        with self._lock:
            return sum(r.remaining or 0 for r in self._fail)

    def pending_disconnections(self) -> int:
        with self._lock:
            return sum(r.remaining or 0 for r in self._sever)

    def connections_of(self, client_id: str | None) -> set[int]:
        """Ids of the connections that sent a request with this client id (None: every one)."""
        with self._lock:
            return {c for c, cid in self._client_ids.items() if client_id is None or cid == client_id}

    def forget_connection(self, connection_id: int) -> None:
        with self._lock:
            self._client_ids.pop(connection_id, None)

    def retain_connections(self, live: set[int]) -> None:
        """Forget the client ids of connections no longer open."""
        with self._lock:
            for connection_id in set(self._client_ids) - live:
                del self._client_ids[connection_id]

    # ------------------------------------------------------------------ the interceptor (loop thread)
    def __call__(self, ctx: Any, request: Any, proceed: Callable[[Any, Any], Any]) -> Any:
        api_key = int(ctx.api_key)
        client_id = str(ctx.client_id)
        group = _group_of(request)
        with self._lock:
            self._client_ids[int(ctx.connection_id)] = client_id
            if group is not None and api_key != _FIND_COORDINATOR:
                self.groups_seen.add(group)
            sever = self._take(self._sever, api_key, group, client_id)
            failure = None if sever else self._take(self._fail, api_key, group, client_id)
            delayed = None if sever else self._take(self._delay, api_key, group, client_id)
            dropped = api_key == _HEARTBEAT and self._is_dropped(group, request, client_id)
        if sever is not None:
            log.info("injected a disconnection for api %d from %r (group %s)", api_key, client_id, group)
            return self._severed(int(ctx.connection_id))
        if failure is not None and failure.error is not None:
            log.info(
                "injected %s for api %d from %r (group %s)", failure.error.name, api_key, client_id, group
            )
            if api_key == _PRODUCE and int(request.acks) == 0:
                result = None  # acks=0 is never answered: the records are silently lost
            else:
                result = self._error_answer(ctx, request, failure.error)
        elif dropped:
            log.info("dropped a heartbeat of %s in group %s", request.member_id, group)
            result = self._error_answer(ctx, request, ErrorCode.NONE)
        else:
            result = proceed(ctx, request)
        if delayed is not None and delayed.delay_s > 0:
            return _held(result, delayed.delay_s)
        return result

    def _take(self, rules: list[_Rule], api_key: int, group: str | None, client_id: str) -> _Rule | None:
        for rule in rules:
            if rule.matches(api_key, group, client_id):
                if rule.remaining is not None:
                    rule.remaining -= 1
                    if rule.remaining == 0:
                        rules.remove(rule)
                return rule
        return None

    def _is_dropped(self, group: str | None, request: Any, client_id: str) -> bool:
        who = {str(request.member_id), client_id}
        instance = getattr(request, "group_instance_id", None)
        if instance:
            who.add(str(instance))
        return any((group, w) in self._dropped for w in who)

    def _severed(self, connection_id: int) -> asyncio.Future[Any]:
        """An answer that never comes: the connection is closed on the next loop turn (which
        cancels this future with the connection's other requests in flight)."""
        loop = asyncio.get_running_loop()
        if self.sever is None:
            raise RuntimeError("the fault injector is not attached to a broker")
        loop.call_soon(self.sever, connection_id)
        return loop.create_future()

    def _error_answer(self, ctx: Any, request: Any, error: ErrorCode) -> Any:
        if self.response_type is None:
            raise RuntimeError("the fault injector is not attached to a broker")
        resp_t = self.response_type(int(ctx.api_key), int(ctx.api_version))
        return error_answer(int(ctx.api_key), resp_t, request, error)


async def _held(result: Any, seconds: float) -> Any:
    answer = await result if inspect.isawaitable(result) else result
    await asyncio.sleep(seconds)
    return answer


class FaultsView(typing.Protocol):
    """What a test reads of the injected faults (``broker.faults``), in either mode."""

    @property
    def groups_seen(self) -> set[str]: ...

    def pending_failures(self) -> int: ...

    def pending_disconnections(self) -> int: ...


class RemoteFaults:
    """``broker.faults`` of a subprocess broker: reads through the control channel."""

    def __init__(self, remote: Callable[..., Any]) -> None:
        #: the broker's call over its control channel (``Broker._remote``)
        self._remote = remote

    @property
    def groups_seen(self) -> set[str]:
        """A copy (clearing it clears nothing in the child)."""
        return set(self._remote("groups_seen"))

    def pending_failures(self) -> int:
        return int(self._remote("pending_failures"))

    def pending_disconnections(self) -> int:
        return int(self._remote("pending_disconnections"))
