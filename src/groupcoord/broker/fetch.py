"""Fetch (key 1) with long-poll; topics by name up to v12 and by topic id from v13.

Fetch sessions (KIP-227) are answered sessionless: the response carries session_id 0, so
every client keeps sending full fetch requests. When fewer than ``min_bytes`` are available
the request is parked: it is woken by appends to any of its partitions once enough bytes
arrived, or by its ``max_wait`` deadline on the broker's keyed timer service, and then the
response is built from the log as it is at that moment.

The response is encoded here (``protocol.fetch_response``), not by kio: each partition's record
set is one contiguous range of one segment file, and a large one stays in the file — the
connection sends it with ``os.sendfile`` from a duplicated descriptor — so record bytes are
not copied through Python objects.

Fetch v0-v3 predate record batches: what they read is down-converted to message format v0
(Fetch v0-v1) or v1 (v2-v3) by ``storage.message_format``, as Kafka 3.9 does for every such
fetch (``KafkaApis.maybeConvertFetchedData``); those record sets are always read into memory.
A topic whose ``compression.type`` is zstd answers UNSUPPORTED_COMPRESSION_TYPE to fetches
below v10, and a zstd batch cannot be down-converted (the same code); a topic with
``message.downconversion.enable=false`` answers UNSUPPORTED_VERSION to fetches below v4. Both
settings are read from the topic's configs, else the dynamic broker defaults.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any, cast

from groupcoord.broker.acl import Op, Resource
from groupcoord.broker.state import Broker, FetchWaiter
from groupcoord.errors import ErrorCode
from groupcoord.handling import FileRegion, PreEncoded, RequestContext
from groupcoord.protocol.entities import ms
from groupcoord.protocol.fetch_response import (
    FIRST_LEADER_HINT,
    NodeEndpoint,
    PartitionOut,
    TopicOut,
    encode_fetch_body,
)
from groupcoord.storage.log import OffsetOutOfRangeError
from groupcoord.storage.message_format import MAGIC_V0, MAGIC_V1, MessageFormatError, downconvert

_ZERO_UUID = uuid.UUID(int=0)

#: A partition's record set of at least this many bytes is sent from its segment file with
#: ``os.sendfile`` (see ``server.connection``); a smaller one is read into the response.
SENDFILE_MIN_BYTES = 128 * 1024


@dataclass(frozen=True, slots=True, kw_only=True)
class _PartitionAsk:
    partition: int
    fetch_offset: int
    max_bytes: int
    #: the leader epoch the client knows (v9+, KIP-320; -1: not given)
    current_leader_epoch: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class _TopicAsk:
    name: str | None
    topic_id: uuid.UUID | None
    error: ErrorCode
    partitions: tuple[_PartitionAsk, ...]


def _plan(broker: Broker, request: Any, by_id: bool, ctx: RequestContext | None = None) -> list[_TopicAsk]:
    out = []
    for t in request.topics:
        parts = tuple(
            _PartitionAsk(
                partition=int(p.partition),
                fetch_offset=int(p.fetch_offset),
                max_bytes=int(p.partition_max_bytes),
                current_leader_epoch=int(getattr(p, "current_leader_epoch", -1)),
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
        ask = out[-1]
        # KafkaApis.handleFetchRequest: READ on each topic, else TOPIC_AUTHORIZATION_FAILED
        if (
            ctx is not None
            and ask.name is not None
            and not broker.allowed(ctx, Op.READ, Resource.TOPIC, ask.name)
        ):
            out[-1] = _TopicAsk(
                name=ask.name,
                topic_id=ask.topic_id,
                error=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                partitions=parts,
            )
    return out


def _build(
    broker: Broker,
    plan: list[_TopicAsk],
    max_bytes: int,
    read_committed: bool = False,
    version: int = 4,
    node: int = 0,
) -> tuple[list[TopicOut], int, bool]:
    """The response's topics as of now, the record bytes they carry, and whether any partition
    failed. Record sets of ``SENDFILE_MIN_BYTES`` or more are file regions the caller owns.

    ``read_committed`` (isolation_level 1): each partition is read only below its last stable
    offset, and carries the aborted transactions of what it returns (Kafka's
    ``UnifiedLog.read`` with ``FetchTxnCommitted``)."""
    remaining = max_bytes
    total = 0
    failed = False
    topics_out = []
    # below v4 the records are rewritten (down-converted), so they are read into memory
    copy_below = SENDFILE_MIN_BYTES if version >= 4 else 2**62
    old_magic = None if version >= 4 else (MAGIC_V0 if version <= 1 else MAGIC_V1)
    for ask in plan:
        parts_out = []
        for p in ask.partitions:
            code = ask.error
            hw = lso = start = -1
            data: bytes | FileRegion = b""
            aborted: tuple[tuple[int, int], ...] | None = None
            if code == ErrorCode.NONE:
                assert ask.name is not None
                try:
                    plog = broker.logs.partition(ask.name, p.partition)
                except KeyError:
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    if broker.cluster is not None:
                        # several brokers in one process: the leader epoch first, then the
                        # leader, or from v11 (KIP-392) any in-sync replica, as Kafka's
                        # Partition.fetchRecords (FetchParams.fetchOnlyLeader)
                        code = broker.leadership(
                            node, ask.name, p.partition, p.current_leader_epoch, follower_ok=version >= 11
                        )
                    if code != ErrorCode.NONE:
                        pass
                    elif version < 10 and _topic_setting(broker, ask.name, "compression.type") == "zstd":
                        code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
                    elif (
                        old_magic is not None
                        and _topic_setting(broker, ask.name, "message.downconversion.enable") == "false"
                    ):
                        code = ErrorCode.UNSUPPORTED_VERSION
                if code == ErrorCode.NONE:
                    limit = min(p.max_bytes, remaining)
                    try:
                        upper = plog.last_stable_offset if read_committed else None
                        result = plog.read_region(
                            p.fetch_offset,
                            max(limit, 0),
                            min_one=total == 0,
                            copy_below=copy_below,
                            max_offset=upper,
                        )
                    except OffsetOutOfRangeError:
                        code = ErrorCode.OFFSET_OUT_OF_RANGE
                        hw = plog.high_watermark
                        lso = plog.last_stable_offset
                        start = plog.log_start_offset
                    else:
                        data = result.data
                        hw = result.high_watermark
                        lso = plog.last_stable_offset
                        start = result.log_start_offset
                        size = len(data) if isinstance(data, bytes) else data.length
                        total += size
                        remaining -= size
                        if read_committed and size:
                            aborted = tuple(
                                (a.producer_id, a.first_offset)
                                for a in plog.aborted_transactions(p.fetch_offset, lso)
                            )
                        if old_magic is not None and size:
                            assert isinstance(data, bytes)
                            try:
                                data = downconvert(data, old_magic, p.fetch_offset)
                            except MessageFormatError as exc:
                                code, data = exc.code, b""
            if code != ErrorCode.NONE:
                failed = True
            leader = None
            if version >= FIRST_LEADER_HINT and code in _HINTED and broker.cluster is not None:
                assert ask.name is not None
                state = broker.cluster.partition(ask.name, p.partition)
                leader = (state.leader, state.leader_epoch)
            parts_out.append(
                PartitionOut(
                    partition=p.partition,
                    error_code=int(code),
                    high_watermark=hw,
                    last_stable_offset=lso,
                    log_start_offset=start,
                    records=data,
                    aborted_transactions=aborted,
                    current_leader=leader,
                )
            )
        topics_out.append(
            TopicOut(
                name=ask.name or "",
                topic_id=ask.topic_id if ask.topic_id is not None else _ZERO_UUID,
                partitions=tuple(parts_out),
            )
        )
    return topics_out, total, failed


def _topic_setting(broker: Broker, name: str, key: str) -> str | None:
    """A topic config as set on the topic, else as a dynamic broker default (None if neither)."""
    meta = broker.logs.topics_view.get(name)
    if meta is not None and key in meta.configs:
        return str(meta.configs[key]).lower()
    found = broker.logs.dynamic_topic_defaults().get(key)
    return None if found is None else found.value.lower()


def _release(topics: list[TopicOut]) -> None:
    for t in topics:
        for p in t.partitions:
            if isinstance(p.records, FileRegion):
                p.records.close()


#: KIP-951: the errors a Fetch v16+ answers with the partition's current leader (and that
#: leader's endpoint), as KafkaApis.handleFetchRequest does
_HINTED = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def _encode(version: int, topics: list[TopicOut], broker: Broker, listener: str) -> PreEncoded:
    pieces = encode_fetch_body(version, topics, node_endpoints=_leader_endpoints(topics, broker, listener))
    return PreEncoded(pieces=tuple(p if isinstance(p, bytes) else cast(FileRegion, p) for p in pieces))


def _leader_endpoints(topics: list[TopicOut], broker: Broker, listener: str) -> list[NodeEndpoint]:
    """The endpoint, on the request's listener, of each leader a partition names (KIP-951)."""
    cluster = broker.cluster
    if cluster is None:
        return []
    leaders = {
        p.current_leader[0]
        for t in topics
        for p in t.partitions
        if p.current_leader is not None and p.current_leader[0] >= 0
    }
    out = []
    for node in sorted(leaders):
        host, port = broker.node_endpoint(node, listener)
        out.append(NodeEndpoint(node, host, port, cluster.racks.get(node)))
    return out


def handle(broker: Broker, ctx: RequestContext, request: Any) -> Any:
    version = ctx.api_version
    plan = _plan(broker, request, by_id=version >= 13, ctx=ctx)
    max_bytes = int(getattr(request, "max_bytes", 2147483647))
    cap = broker.fetch_bytes_cap
    if cap is not None:
        # KafkaApis.handleFetchRequest: never more than the consumer quota allows in its window,
        # else every answer would be over the quota and answered empty (min_bytes follows)
        max_bytes = min(max_bytes, cap(ctx.principal, ctx.client_id))
    read_committed = version >= 4 and int(getattr(request, "isolation_level", 0)) == 1
    topics, total, failed = _build(broker, plan, max_bytes, read_committed, version, ctx.node_id)
    max_wait = ms(request.max_wait)
    min_bytes = min(int(request.min_bytes), max_bytes)
    if failed or max_wait <= 0 or total >= min_bytes or not plan:
        return _encode(version, topics, broker, ctx.listener)
    _release(topics)

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
    return _parked(
        broker, version, plan, max_bytes, woken, wid, key, read_committed, ctx.node_id, ctx.listener
    )


async def _parked(
    broker: Broker,
    version: int,
    plan: list[_TopicAsk],
    max_bytes: int,
    woken: asyncio.Future[None],
    wid: int,
    key: tuple[str, int],
    read_committed: bool = False,
    node: int = 0,
    listener: str = "",
) -> Any:
    try:
        await woken
    finally:
        broker.fetch_waiters.remove(wid)
        broker.timers.cancel(key)
    return _encode(
        version, _build(broker, plan, max_bytes, read_committed, version, node)[0], broker, listener
    )
