"""Fetch (key 1) with long-poll; topics by name up to v12 and by topic id from v13.

Fetch sessions (KIP-227) are answered sessionless: the response carries session_id 0, so
every client keeps sending full fetch requests. When fewer than ``min_bytes`` are available
the request is parked: it is woken by appends to any of its partitions once enough bytes
arrived, or by its ``max_wait`` deadline on the broker's keyed timer service, and then the
response is built from the log as it is at that moment.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

from groupcoord.broker.state import Broker, FetchWaiter
from groupcoord.errors import ErrorCode
from groupcoord.protocol.entities import NO_THROTTLE, child, err, has_field, make, ms
from groupcoord.server.context import RequestContext
from groupcoord.storage.log import OffsetOutOfRangeError

_ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True, kw_only=True)
class _PartitionAsk:
    partition: int
    fetch_offset: int
    max_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class _TopicAsk:
    name: str | None
    topic_id: uuid.UUID | None
    error: ErrorCode
    partitions: tuple[_PartitionAsk, ...]


def _plan(broker: Broker, request: Any, by_id: bool) -> list[_TopicAsk]:
    out = []
    for t in request.topics:
        parts = tuple(
            _PartitionAsk(
                partition=int(p.partition),
                fetch_offset=int(p.fetch_offset),
                max_bytes=int(p.partition_max_bytes),
            )
            for p in t.partitions
        )
        if by_id:
            meta = broker.topic_by_id(t.topic_id)
            if meta is None:
                out.append(
                    _TopicAsk(
                        name=None, topic_id=t.topic_id, error=ErrorCode.UNKNOWN_TOPIC_ID, partitions=parts
                    )
                )
            else:
                out.append(
                    _TopicAsk(name=meta.name, topic_id=t.topic_id, error=ErrorCode.NONE, partitions=parts)
                )
        else:
            out.append(_TopicAsk(name=t.topic, topic_id=None, error=ErrorCode.NONE, partitions=parts))
    return out


def _build(broker: Broker, resp_t: type[Any], plan: list[_TopicAsk], max_bytes: int) -> tuple[Any, int, bool]:
    """The response as of now, the record bytes it carries, and whether any partition failed."""
    topic_t = child(resp_t, "responses")
    part_t = child(topic_t, "partitions")
    remaining = max_bytes
    total = 0
    failed = False
    topics_out = []
    for ask in plan:
        parts_out = []
        for p in ask.partitions:
            code = ask.error
            hw = lso = start = -1
            data: bytes = b""
            if code == ErrorCode.NONE:
                assert ask.name is not None
                try:
                    plog = broker.logs.partition(ask.name, p.partition)
                except KeyError:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    limit = min(p.max_bytes, remaining)
                    try:
                        result = plog.read(p.fetch_offset, max(limit, 0), min_one=total == 0)
                    except OffsetOutOfRangeError:
                        code = ErrorCode.OFFSET_OUT_OF_RANGE
                        hw = plog.high_watermark
                        lso = plog.last_stable_offset
                        start = plog.log_start_offset
                    else:
                        data = bytes(result.data)
                        hw = result.high_watermark
                        lso = plog.last_stable_offset
                        start = result.log_start_offset
                        total += len(data)
                        remaining -= len(data)
            if code != ErrorCode.NONE:
                failed = True
            parts_out.append(
                make(
                    part_t,
                    partition_index=p.partition,
                    error_code=err(code),
                    high_watermark=hw,
                    last_stable_offset=lso,
                    log_start_offset=start,
                    aborted_transactions=None,
                    preferred_read_replica=-1,
                    records=data,
                )
            )
        topics_out.append(
            make(
                topic_t,
                topic=ask.name or "",
                topic_id=ask.topic_id if ask.topic_id is not None else _ZERO_UUID,
                partitions=tuple(parts_out),
            )
        )
    values: dict[str, Any] = {"throttle_time": NO_THROTTLE, "responses": tuple(topics_out)}
    if has_field(resp_t, "error_code"):
        values["error_code"] = err(ErrorCode.NONE)
        values["session_id"] = 0
    return make(resp_t, **values), total, failed


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    messages = broker.dispatcher.registry.lookup(ctx.api_key, ctx.api_version)
    resp_t = messages.response_type
    plan = _plan(broker, request, by_id=ctx.api_version >= 13)
    max_bytes = int(getattr(request, "max_bytes", 2147483647))
    response, total, failed = _build(broker, resp_t, plan, max_bytes)
    max_wait = ms(request.max_wait)
    min_bytes = int(request.min_bytes)
    if failed or max_wait <= 0 or total >= min_bytes or not plan:
        return response

    tps = frozenset((ask.name, p.partition) for ask in plan if ask.name is not None for p in ask.partitions)
    loop = asyncio.get_running_loop()
    woken: asyncio.Future[None] = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    wid = broker.fetch_waiters.add(FetchWaiter(partitions=tps, min_bytes=min_bytes - total, on_wake=wake))
    key = ("fetch", wid)

    def expire() -> None:
        broker.fetch_waiters.remove(wid)
        wake()

    broker.schedule(key, broker.clock.now_ms() + max_wait, expire)
    return _parked(broker, resp_t, plan, max_bytes, woken, wid, key)


async def _parked(
    broker: Broker,
    resp_t: type[Any],
    plan: list[_TopicAsk],
    max_bytes: int,
    woken: asyncio.Future[None],
    wid: int,
    key: tuple[str, int],
) -> Any:
    try:
        await woken
    finally:
        broker.fetch_waiters.remove(wid)
        broker.timers.cancel(key)
    return _build(broker, resp_t, plan, max_bytes)[0]
