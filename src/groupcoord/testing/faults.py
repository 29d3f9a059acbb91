"""Fault injection at one point of the request path: the interceptor the composition root installs.

Every request a client sends passes :meth:`FaultInjector.__call__` before its route's handler
(``groupcoord.handling.Interceptor``). The injector matches it against the rules the test set
(from the test's thread; a lock guards them) and then

* answers it itself with an error code (:meth:`FaultInjector.fail_next`): the handler is never
  called, so the request changes nothing in the broker, as when Kafka's request layer rejects
  a request before the coordinator sees it;
* lets the handler run and holds the answer (:meth:`FaultInjector.delay`);
* for a dropped heartbeat (:meth:`FaultInjector.drop_heartbeats`), keeps it from the
  coordinator and answers it itself as if all were well (error NONE): the member's session is
  not renewed, the coordinator's own session timer removes it and the group rebalances
  without it, while the client, told nothing, goes on believing it owns its partitions (a
  zombie: its commits then fail with UNKNOWN_MEMBER_ID or ILLEGAL_GENERATION). When the rule
  is cleared its heartbeats reach the coordinator again, the client learns it was removed
  and rejoins.

It also remembers each connection's client id, so :meth:`FaultInjector.connections_of` can
name the connections :meth:`groupcoord.testing.Broker.disconnect` severs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import threading
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groupcoord.errors import ErrorCode

log = logging.getLogger(__name__)

__all__ = ["API_NAMES", "FaultInjector", "api_key_of", "error_code_of"]

#: Kafka's names of the APIs (the ``name`` of each message in Kafka's JSON specs, without
#: ``Request``), the way ``fail_next`` and ``delay`` accept them.
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
    "ApiVersions": 18,
    "CreateTopics": 19,
    "DeleteTopics": 20,
    "InitProducerId": 22,
    "DescribeConfigs": 32,
    "CreatePartitions": 37,
    "DeleteGroups": 42,
    "OffsetDelete": 47,
    "DescribeCluster": 60,
}
_HEARTBEAT = 12

#: The APIs ``fail_next`` can answer with an error: those whose answer carries one error code
#: per request or per partition named in the request (the group APIs).
FAILABLE_APIS = frozenset({8, 9, 10, 11, 12, 13, 14, 15, 42})


def api_key_of(api: str | int) -> int:
    """An API key from Kafka's name (``"OffsetCommit"``) or its number."""
    if isinstance(api, int):
        return api
    try:
        return API_NAMES[api]
    except KeyError:
        raise ValueError(f"unknown API {api!r}; one of {', '.join(API_NAMES)} or a number") from None


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
    group = getattr(request, "group_id", None)
    if group is None:
        group = getattr(request, "key", None)  # FindCoordinator up to v3
    if group is None:
        keys = getattr(request, "coordinator_keys", None) or getattr(request, "groups", None)
        if keys and isinstance(keys[0], str):
            group = keys[0]
    return None if group is None else str(group)


class FaultInjector:
    """The broker's request interceptor; see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fail: list[_Rule] = []
        self._delay: list[_Rule] = []
        self._dropped: set[tuple[str, str]] = set()
        self._client_ids: dict[int, str] = {}
        #: every group a request named (the pytest plugin reports their events on failure)
        self.groups_seen: set[str] = set()
        #: set by the broker once running: the response type of an (api key, version)
        self.response_type: Callable[[int, int], type[Any]] | None = None

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
        key = api_key_of(api)
        if key not in FAILABLE_APIS:
            raise ValueError(f"fail_next supports the group APIs ({sorted(FAILABLE_APIS)}), not {api!r}")
        if count < 1:
            raise ValueError("count must be at least 1")
        rule = _Rule(
            api_key=key, group=group, client_id=client_id, remaining=count, error=error_code_of(error)
        )
        with self._lock:
            self._fail.append(rule)

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
        rule = _Rule(
            api_key=api_key_of(api), group=group, client_id=client_id, remaining=count, delay_s=seconds
        )
        with self._lock:
            self._delay.append(rule)

    def drop_heartbeats(self, group: str, member_or_client_id: str) -> None:
        with self._lock:
            self._dropped.add((group, member_or_client_id))

    def clear(self) -> None:
        """Remove every rule (failures not yet used, delays, dropped heartbeats)."""
        with self._lock:
            self._fail.clear()
            self._delay.clear()
            self._dropped.clear()

    def pending_failures(self) -> int:
        with self._lock:
            return sum(r.remaining or 0 for r in self._fail)

    def connections_of(self, client_id: str | None) -> set[int]:
        """Ids of the connections that sent a request with this client id (None: every one)."""
        with self._lock:
            return {c for c, cid in self._client_ids.items() if client_id is None or cid == client_id}

    def forget_connection(self, connection_id: int) -> None:
        with self._lock:
            self._client_ids.pop(connection_id, None)

    # ------------------------------------------------------------------ the interceptor (loop thread)
    def __call__(self, ctx: Any, request: Any, proceed: Callable[[Any, Any], Any]) -> Any:
        api_key = int(ctx.api_key)
        client_id = str(ctx.client_id)
        group = _group_of(request)
        with self._lock:
            self._client_ids[int(ctx.connection_id)] = client_id
            if group is not None and api_key != 10:
                self.groups_seen.add(group)
            failure = self._take(self._fail, api_key, group, client_id)
            delayed = self._take(self._delay, api_key, group, client_id)
            dropped = api_key == _HEARTBEAT and self._is_dropped(group, request, client_id)
        if failure is not None and failure.error is not None:
            log.info(
                "injected %s for api %d from %r (group %s)", failure.error.name, api_key, client_id, group
            )
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

    def _error_answer(self, ctx: Any, request: Any, error: ErrorCode) -> Any:
        if self.response_type is None:
            raise RuntimeError("the fault injector is not attached to a broker")
        resp_t = self.response_type(int(ctx.api_key), int(ctx.api_version))
        answer = _mirror(resp_t, request, error)
        keys = getattr(request, "coordinator_keys", None)
        if keys is not None and hasattr(answer, "coordinators"):  # FindCoordinator v4+: one per key
            from groupcoord.protocol.entities import child, make

            coord_t = child(resp_t, "coordinators")
            entries = tuple(
                make(
                    coord_t,
                    key=k,
                    node_id=-1,
                    host="",
                    port=-1,
                    error_code=answer_code(error),
                    error_message=None,
                )
                for k in keys
            )
            answer = dataclasses.replace(answer, coordinators=entries)
        return answer


def answer_code(error: ErrorCode) -> Any:
    from groupcoord.protocol.entities import err

    return err(error)


async def _held(result: Any, seconds: float) -> Any:
    answer = await result if inspect.isawaitable(result) else result
    await asyncio.sleep(seconds)
    return answer


# ---------------------------------------------------------------------- error answers
def _mirror(cls: type[Any], source: Any, error: ErrorCode) -> Any:
    """An entity of ``cls`` answering ``source`` with ``error``: every error code set to it,
    lists mirrored from the request's list of the same name (names and indexes copied), every
    other field empty (0, "", None, b"", no throttle)."""
    from groupcoord.protocol.entities import NO_THROTTLE, err

    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if f.name == "error_code":
            values[f.name] = err(error)
            continue
        if f.default is not dataclasses.MISSING:
            continue
        same = getattr(source, f.name, None) if source is not None else None
        origin = typing.get_origin(tp)
        if origin is tuple:
            (item_t, *_rest) = typing.get_args(tp)
            if dataclasses.is_dataclass(item_t) and isinstance(same, tuple | list):
                values[f.name] = tuple(_mirror(item_t, s, error) for s in same)  # type: ignore[arg-type]
            elif isinstance(same, tuple | list) and not dataclasses.is_dataclass(item_t):
                values[f.name] = tuple(same)
            else:
                values[f.name] = ()
            continue
        if same is not None and not dataclasses.is_dataclass(same):
            values[f.name] = same
            continue
        values[f.name] = _empty(tp, NO_THROTTLE)
    return cls(**values)


def _empty(tp: Any, no_throttle: Any) -> Any:
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        return None
    if dataclasses.is_dataclass(tp):
        return _mirror(tp, None, ErrorCode.NONE)  # type: ignore[arg-type]
    if isinstance(tp, type):
        if "Timedelta" in tp.__name__:
            return no_throttle
        if issubclass(tp, bool):
            return False
        if issubclass(tp, int):
            return tp(0)
        if issubclass(tp, str):
            return ""
        if issubclass(tp, bytes):
            return b""
    return None
