"""What a scrape reads: a snapshot of the groups, their offsets and the logs, taken on the loop.

The coordinator's state and the logs belong to the broker's event loop (design.md, "one owner,
no locks"); the HTTP server answers on its own threads. So a scrape does not read that state
itself: it asks the loop for a :class:`Snapshot` (:func:`take_snapshot`, a coroutine run with
``asyncio.run_coroutine_threadsafe``) and renders the plain values it gets back. The snapshot
yields to the loop every few thousand rows, so a broker holding many offsets keeps serving
requests while one is taken.

Lag, by the same definitions as the analytics pipeline (``pipeline/lag.py``):

* offset lag: the partition's log end offset (its high watermark: there is one replica) minus
  the committed offset, never below 0;
* time lag: 0 when the offset lag is 0, else how long the first record the group has not
  consumed (the one at the committed offset) has been in the log: now minus the append time of
  its batch (the batch's max timestamp). Reading that timestamp costs a read of one batch, so
  it is cached per (topic, partition, committed offset) from one scrape to the next.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass

from groupcoord.broker.state import Broker
from groupcoord.formats.batch import parse_header
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.server.output import Traffic
from groupcoord.storage.log import PartitionLog

log = logging.getLogger(__name__)

#: Rows (groups or offsets) between two yields to the event loop.
_CHUNK = 2000

#: (topic, partition, offset) -> append time (ms) of the batch holding that offset.
TimestampCache = dict[tuple[str, int, int], int]


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupRow:
    group_id: str
    state: str
    protocol_type: str
    generation: int
    members: int


@dataclass(frozen=True, slots=True, kw_only=True)
class OffsetRow:
    group_id: str
    topic: str
    partition: int
    committed: int
    #: the partition's log end offset; None when the partition no longer exists
    log_end: int | None
    #: log_end - committed, at least 0 (None without a partition)
    lag: int | None
    #: seconds the first unconsumed record has waited (None: unknown, e.g. unreadable)
    time_lag_s: float | None


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionRow:
    topic: str
    partition: int
    log_start: int
    log_end: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    now_ms: int
    groups: tuple[GroupRow, ...]
    offsets: tuple[OffsetRow, ...]
    partitions: tuple[PartitionRow, ...]
    #: (group, cause) -> rebalances begun (:class:`~groupcoord.metrics.rebalances.RebalanceCounter`)
    rebalances: Mapping[tuple[str, str], int]
    connections: int
    bytes_in: int
    bytes_out: int
    connections_accepted: int
    connections_refused: int
    #: seconds the loop spent taking this snapshot (yields excluded)
    took_s: float
    #: compacted partitions the log cleaner marked uncleanable (KIP-346)
    uncleanable_partitions: int = 0


async def take_snapshot(
    broker: Broker,
    groups: GroupRuntime,
    *,
    connections: int,
    traffic: Traffic,
    rebalances: Mapping[tuple[str, str], int],
    cache: TimestampCache,
) -> Snapshot:
    """On the broker's loop: the values a scrape renders. ``cache`` is kept by the caller
    between scrapes and left holding only the entries this snapshot used."""
    loop = asyncio.get_running_loop()
    busy = 0.0
    started = loop.time()
    now_ms = broker.clock.now_ms()
    plogs: Mapping[tuple[str, int], PartitionLog] = broker.logs.partitions()
    partitions = tuple(
        PartitionRow(topic=t, partition=p, log_start=plog.log_start_offset, log_end=plog.log_end_offset)
        for (t, p), plog in sorted(plogs.items())
        if not plog.closed
    )
    ends = {(r.topic, r.partition): r.log_end for r in partitions}
    group_rows: list[GroupRow] = []
    offsets: list[OffsetRow] = []
    used: TimestampCache = {}
    rows = 0
    for group in groups.coordinator.groups():
        group_rows.append(
            GroupRow(
                group_id=group.group_id,
                state=group.state.value,
                protocol_type=group.protocol_type or "",
                generation=group.generation,
                members=len(group.members),
            )
        )
        for (topic, partition), committed in list(group.offsets.items()):
            end = ends.get((topic, partition))
            lag = time_lag = None
            if end is not None:
                lag = max(end - committed.offset, 0)
                if lag == 0:
                    time_lag = 0.0
                else:
                    appended = append_time(plogs[topic, partition], topic, partition, committed.offset, cache)
                    if appended is not None:
                        used[topic, partition, committed.offset] = appended
                        time_lag = max(now_ms - appended, 0) / 1000.0
            offsets.append(
                OffsetRow(
                    group_id=group.group_id,
                    topic=topic,
                    partition=partition,
                    committed=committed.offset,
                    log_end=end,
                    lag=lag,
                    time_lag_s=time_lag,
                )
            )
        rows += 1 + len(group.offsets)
        if rows >= _CHUNK:
            rows = 0
            busy += loop.time() - started
            await asyncio.sleep(0)
            started = loop.time()
    cache.clear()
    cache.update(used)
    busy += loop.time() - started
    return Snapshot(
        now_ms=now_ms,
        groups=tuple(group_rows),
        offsets=tuple(offsets),
        partitions=partitions,
        rebalances=rebalances,
        connections=connections,
        bytes_in=traffic.bytes_in,
        bytes_out=traffic.bytes_out,
        connections_accepted=traffic.accepted,
        connections_refused=traffic.refused,
        took_s=busy,
        uncleanable_partitions=len(broker.cleaner.uncleanable),
    )


def append_time(
    plog: PartitionLog, topic: str, partition: int, offset: int, cache: TimestampCache
) -> int | None:
    """The max timestamp of the batch holding ``offset`` (or of the first batch, when the
    offset was deleted from the log); None if it cannot be read."""
    hit = cache.get((topic, partition, offset))
    if hit is not None:
        return hit
    try:
        read = plog.read(max(offset, plog.log_start_offset), 0)
        if len(read.data) == 0:
            return None
        return parse_header(read.data).max_timestamp
    except Exception as exc:  # a log deleted or truncated meanwhile: no time lag this scrape
        log.debug("%s-%d: no append time for offset %d: %r", topic, partition, offset, exc)
        return None
