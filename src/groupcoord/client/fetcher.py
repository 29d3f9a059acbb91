"""The consumer's fetcher: metadata, positions, offset resets and Fetch with read-ahead.

:class:`Fetcher` is sans-I/O, shared by the blocking and the asyncio consumer: it says which
requests to send (:meth:`Fetcher.requests`, each a :class:`FetchOut` naming a node, an API and
version-neutral fields for :mod:`groupcoord.client.wire`) and takes the answers
(:meth:`Fetcher.on_response`, :meth:`Fetcher.on_failure`). The adapter does the I/O.

What it does, as Kafka's Java ``Fetcher`` / ``SubscriptionState`` / ``OffsetFetcher`` do:

* **Positions.** Every assigned partition is *awaiting* (its starting position is not known
  yet: the group's committed offset is being fetched), *resetting* (``auto.offset.reset``:
  ListOffsets for the earliest or latest offset; ``none`` raises
  :class:`NoOffsetForPartitionError` to the application), or has a *position*, the offset
  of the next record to hand out.
* **Read-ahead across partitions.** One Fetch per leader node is kept in flight for every
  fetchable partition (position known, not paused, nothing buffered for it). Answers are
  decoded into a buffer; :meth:`drain` hands out up to ``max.poll.records`` from it and the
  adapter sends the next Fetch before the application processes what it got, so the next
  batch is on its way while the application works on this one.
* **Fetch settings.** ``fetch.min.bytes``, ``fetch.max.wait.ms``, ``fetch.max.bytes``,
  ``max.partition.fetch.bytes`` and ``isolation.level`` go into every Fetch.
* **read_committed.** Batches of aborted transactions (the answer's aborted-transaction
  list: a producer's batches from its ``first_offset`` up to its ABORT marker) and every
  control batch are skipped; the position still moves past them.
* **Decompression** of gzip, snappy, lz4 and zstd by the project's record-batch reader
  (:mod:`groupcoord.formats.batch`).
* **Errors.** OFFSET_OUT_OF_RANGE resets the partition with the reset policy; leader and
  topic errors (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, ...) ask for a metadata
  refresh and retry.
* **seek / pause / resume**: a seek drops buffered data for the partition; a paused
  partition is neither fetched nor drained (its buffered data stays for after resume).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from groupcoord.client import wire
from groupcoord.client.errors import KafkaClientError
from groupcoord.client.types import Record, TopicPartition
from groupcoord.errors import ErrorCode
from groupcoord.formats import batch as rb
from groupcoord.protocol.api_keys import ApiKey

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1

_CONTROL_ABORT = 0
_REFRESH_ERRORS = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)


class NoOffsetForPartitionError(KafkaClientError):
    """No position for a partition and ``auto.offset.reset`` is ``none``."""

    def __init__(self, partitions: Iterable[TopicPartition]) -> None:
        parts = sorted(partitions)
        super().__init__(
            f"no offset for {parts} and auto.offset.reset is none", ErrorCode.OFFSET_OUT_OF_RANGE
        )
        self.partitions = parts


@dataclass(frozen=True, slots=True, kw_only=True)
class FetcherConfig:
    auto_offset_reset: str = "latest"
    fetch_min_bytes: int = 1
    fetch_max_wait_ms: int = 500
    fetch_max_bytes: int = 52_428_800
    max_partition_fetch_bytes: int = 1_048_576
    max_poll_records: int = 500
    isolation_level: str = "read_uncommitted"
    metadata_max_age_ms: int = 300_000
    retry_backoff_ms: int = 100
    request_timeout_ms: int = 30_000


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchOut:
    """A request the fetcher wants sent: ``node`` None = any broker (Metadata)."""

    kind: str  # "metadata", "list_offsets", "fetch"
    node: int | None
    api_key: int
    fields: Mapping[str, Any]
    timeout_ms: int
    # the partitions (and, for Fetch, the positions) the request was made for
    partitions: tuple[tuple[TopicPartition, int], ...] = ()


@dataclass(slots=True)
class _Partition:
    position: int | None = None
    reset: str | None = None  # pending reset strategy ("earliest"/"latest"/"none")
    awaiting: bool = True  # waiting for the committed offset
    paused: bool = False
    buffer: list[Record] = field(default_factory=list)
    high_watermark: int = -1
    leader_epoch: int | None = None
    next_fetch: int | None = None  # where the next Fetch starts while records are buffered

    def fetch_offset(self) -> int | None:
        return self.next_fetch if self.buffer and self.next_fetch is not None else self.position


class Fetcher:
    def __init__(self, config: FetcherConfig) -> None:
        self.config = config
        self._parts: dict[TopicPartition, _Partition] = {}
        self._topics: set[str] = set()
        self._all_topics = False
        self._leaders: dict[TopicPartition, int] = {}
        self._topic_ids: dict[uuid.UUID, str] = {}
        self._ids_by_name: dict[str, uuid.UUID] = {}
        self.metadata: wire.ClusterMetadata | None = None
        self._metadata_at_ms: int | None = None
        self._metadata_wanted = True
        self._metadata_in_flight = False
        self._fetching: set[int] = set()  # nodes with a Fetch in flight
        self._listing: set[TopicPartition] = set()  # partitions with a ListOffsets in flight
        self._retry_at_ms = 0
        self._errors: list[KafkaClientError] = []
        self.drained: dict[TopicPartition, int] = {}
        """Positions after the last :meth:`drain`, for the partitions it returned records of."""

    # -- metadata ---------------------------------------------------------------------------

    def want_topics(self, topics: Iterable[str], *, all_topics: bool = False) -> None:
        """Topics whose metadata the consumer needs (``all_topics`` for pattern subscriptions)."""
        topics = set(topics)
        if topics - self._topics or all_topics != self._all_topics:
            self._metadata_wanted = True
        self._topics = topics
        self._all_topics = all_topics

    def request_metadata_update(self) -> None:
        self._metadata_wanted = True

    def on_metadata(self, metadata: wire.ClusterMetadata, now_ms: int) -> None:
        self.metadata = metadata
        self._metadata_at_ms = now_ms
        self._metadata_in_flight = False
        for t in metadata.topics:
            if t.error is not ErrorCode.NONE:
                continue
            if isinstance(t.topic_id, uuid.UUID) and t.topic_id.int:
                self._topic_ids[t.topic_id] = t.name
                self._ids_by_name[t.name] = t.topic_id
            for p in t.partitions:
                self._leaders[TopicPartition(t.name, p.partition)] = p.leader
        if self._all_topics or all(any(t.name == n for t in metadata.topics) for n in self._topics):
            self._metadata_wanted = False

    def partitions_for(self, topic: str) -> int | None:
        if self.metadata is None:
            return None
        for t in self.metadata.topics:
            if t.name == topic and t.error is ErrorCode.NONE:
                return len(t.partitions)
        return None

    # -- assignment and positions -----------------------------------------------------------

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """The new assignment; retained partitions keep their position, paused flag and buffer."""
        new = set(partitions)
        self._parts = {tp: self._parts.get(tp) or _Partition() for tp in new}
        self._listing &= new
        self.want_topics({tp.topic for tp in new} | self._topics, all_topics=self._all_topics)

    def assigned(self) -> set[TopicPartition]:
        return set(self._parts)

    def awaiting(self) -> list[TopicPartition]:
        """Assigned partitions still waiting for their starting (committed) offset."""
        return sorted(tp for tp, st in self._parts.items() if st.awaiting and st.position is None)

    def set_starting_offset(self, tp: TopicPartition, offset: int | None) -> None:
        """The committed offset (or ``None``: nothing committed, so reset by the policy)."""
        st = self._parts.get(tp)
        if st is None or not st.awaiting:
            return
        st.awaiting = False
        if offset is None or offset < 0:
            st.reset = self.config.auto_offset_reset
        else:
            st.position = offset

    def seek(self, tp: TopicPartition, offset: int) -> None:
        st = self._state(tp)
        st.position = offset
        st.reset = None
        st.awaiting = False
        st.buffer.clear()
        st.next_fetch = None

    def seek_to(self, tps: Iterable[TopicPartition], where: str) -> None:
        """``where`` "earliest" or "latest": reset lazily with ListOffsets."""
        for tp in tps:
            st = self._state(tp)
            st.position = None
            st.reset = where
            st.awaiting = False
            st.buffer.clear()
            st.next_fetch = None

    def position(self, tp: TopicPartition) -> int | None:
        return self._state(tp).position

    def positions(self) -> dict[TopicPartition, int]:
        return {tp: st.position for tp, st in self._parts.items() if st.position is not None}

    def pause(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self._state(tp).paused = True

    def resume(self, tps: Iterable[TopicPartition]) -> None:
        for tp in tps:
            self._state(tp).paused = False

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, st in self._parts.items() if st.paused}

    def _state(self, tp: TopicPartition) -> _Partition:
        st = self._parts.get(tp)
        if st is None:
            raise KafkaClientError(f"{tp} is not assigned to this consumer")
        return st

    # -- what to send -----------------------------------------------------------------------

    def requests(self, now_ms: int) -> list[FetchOut]:
        out: list[FetchOut] = []
        if (
            self._metadata_at_ms is not None
            and now_ms - self._metadata_at_ms >= self.config.metadata_max_age_ms
        ):
            self._metadata_wanted = True
        if self._metadata_wanted and not self._metadata_in_flight and now_ms >= self._retry_at_ms:
            topics = None if self._all_topics else sorted(self._topics | {tp.topic for tp in self._parts})
            self._metadata_in_flight = True
            out.append(
                FetchOut(
                    kind="metadata",
                    node=None,
                    api_key=ApiKey.METADATA,
                    fields=wire.metadata_request(topics),
                    timeout_ms=self.config.request_timeout_ms,
                )
            )
        # offset resets, grouped by leader
        resets: dict[int, list[TopicPartition]] = {}
        none_policy: list[TopicPartition] = []
        for tp, st in self._parts.items():
            if st.reset is None or tp in self._listing:
                continue
            if st.reset == "none":
                none_policy.append(tp)
                continue
            leader = self._leader(tp)
            if leader is None:
                continue
            resets.setdefault(leader, []).append(tp)
        if none_policy:
            for tp in none_policy:
                self._parts[tp].reset = None
            self._errors.append(NoOffsetForPartitionError(none_policy))
        for node, tps in sorted(resets.items()):
            if now_ms < self._retry_at_ms:
                break
            by_topic: dict[str, list[dict[str, Any]]] = {}
            pairs: list[tuple[TopicPartition, int]] = []
            for tp in sorted(tps):
                ts = EARLIEST_TIMESTAMP if self._parts[tp].reset == "earliest" else LATEST_TIMESTAMP
                by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, "timestamp": ts})
                pairs.append((tp, ts))
                self._listing.add(tp)
            out.append(
                FetchOut(
                    kind="list_offsets",
                    node=node,
                    api_key=ApiKey.LIST_OFFSETS,
                    fields={
                        "replica_id": -1,
                        "isolation_level": self._isolation(),
                        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
                    },
                    timeout_ms=self.config.request_timeout_ms,
                    partitions=tuple(pairs),
                )
            )
        # fetches, one per leader without one in flight
        fetchable: dict[int, list[tuple[TopicPartition, int]]] = {}
        for tp, st in sorted(self._parts.items()):
            # Read ahead: a partition is fetched again once what is buffered for it fits in
            # one poll, so the next records are on their way while the application works.
            offset = st.fetch_offset()
            if offset is None or st.paused or len(st.buffer) > self.config.max_poll_records:
                continue
            leader = self._leader(tp)
            if leader is None or leader in self._fetching:
                continue
            fetchable.setdefault(leader, []).append((tp, offset))
        for node, pairs in sorted(fetchable.items()):
            fetch_topics: dict[str, list[dict[str, Any]]] = {}
            for tp, pos in pairs:
                fetch_topics.setdefault(tp.topic, []).append(
                    {
                        "partition": tp.partition,
                        "fetch_offset": pos,
                        "partition_max_bytes": self.config.max_partition_fetch_bytes,
                    }
                )
            self._fetching.add(node)
            out.append(
                FetchOut(
                    kind="fetch",
                    node=node,
                    api_key=ApiKey.FETCH,
                    fields={
                        "replica_id": -1,
                        "max_wait": self.config.fetch_max_wait_ms,
                        "min_bytes": self.config.fetch_min_bytes,
                        "max_bytes": self.config.fetch_max_bytes,
                        "isolation_level": self._isolation(),
                        "session_id": 0,
                        "session_epoch": -1,
                        "topics": [
                            {"topic": t, "topic_id": self._ids_by_name.get(t, _ZERO), "partitions": ps}
                            for t, ps in fetch_topics.items()
                        ],
                        "forgotten_topics_data": [],
                        "rack_id": "",
                    },
                    # the broker may hold the fetch for max_wait
                    timeout_ms=self.config.request_timeout_ms + self.config.fetch_max_wait_ms,
                    partitions=tuple(pairs),
                )
            )
        return out

    def _leader(self, tp: TopicPartition) -> int | None:
        """The partition's leader; None (and fresh metadata wanted) while it is unknown."""
        leader = self._leaders.get(tp, -1)
        if leader < 0:
            self._metadata_wanted = True
            return None
        return leader

    def _isolation(self) -> int:
        return 1 if self.config.isolation_level == "read_committed" else 0

    # -- answers ----------------------------------------------------------------------------

    def on_failure(self, out: FetchOut, now_ms: int) -> None:
        if out.kind == "metadata":
            self._metadata_in_flight = False
        elif out.kind == "list_offsets":
            self._listing.difference_update(tp for tp, _ in out.partitions)
        elif out.kind == "fetch" and out.node is not None:
            self._fetching.discard(out.node)
        self._retry_at_ms = now_ms + self.config.retry_backoff_ms
        self._metadata_wanted = True

    def on_response(self, out: FetchOut, response: Any, now_ms: int) -> None:
        if out.kind == "metadata":
            self.on_metadata(wire.read_metadata(response), now_ms)
        elif out.kind == "list_offsets":
            self._on_list_offsets(out, response, now_ms)
        elif out.kind == "fetch":
            assert out.node is not None
            self._fetching.discard(out.node)
            self._on_fetch(out, response, now_ms)

    def _on_list_offsets(self, out: FetchOut, response: Any, now_ms: int) -> None:
        asked = dict(out.partitions)
        self._listing.difference_update(asked)
        for t in response.topics:
            for p in t.partitions:
                tp = TopicPartition(str(t.name), int(p.partition_index))
                st = self._parts.get(tp)
                if st is None or tp not in asked or st.reset is None:
                    continue
                code = wire.error_code(p.error_code)
                if code is ErrorCode.NONE:
                    st.position = int(p.offset)
                    st.reset = None
                    log.debug("reset %s to offset %d", tp, st.position)
                else:
                    log.info("ListOffsets for %s failed: %s", tp, code.name)
                    self._metadata_wanted = True
                    self._retry_at_ms = now_ms + self.config.retry_backoff_ms

    def _on_fetch(self, out: FetchOut, response: Any, now_ms: int) -> None:
        top = wire.error_code(getattr(response, "error_code", 0))
        if top is not ErrorCode.NONE:
            log.info("Fetch from node %s failed: %s", out.node, top.name)
            self._metadata_wanted = True
            self._retry_at_ms = now_ms + self.config.retry_backoff_ms
            return
        asked = dict(out.partitions)
        for t in response.responses:
            topic = str(t.topic) if hasattr(t, "topic") else self._topic_ids.get(t.topic_id, "")
            for p in t.partitions:
                tp = TopicPartition(topic, int(p.partition_index))
                st = self._parts.get(tp)
                if st is None or tp not in asked or st.fetch_offset() != asked[tp]:
                    continue  # revoked or sought meanwhile: the data is stale
                code = wire.error_code(p.error_code)
                if code is ErrorCode.NONE:
                    st.high_watermark = int(p.high_watermark)
                    self._take_records(tp, st, p, asked[tp])
                elif code is ErrorCode.OFFSET_OUT_OF_RANGE:
                    log.info(
                        "offset %s out of range for %s; resetting (%s)",
                        st.position,
                        tp,
                        self.config.auto_offset_reset,
                    )
                    st.position = None
                    st.reset = self.config.auto_offset_reset
                    st.buffer.clear()
                    st.next_fetch = None
                elif code in _REFRESH_ERRORS:
                    self._metadata_wanted = True
                    self._retry_at_ms = now_ms + self.config.retry_backoff_ms
                else:
                    self._errors.append(KafkaClientError(f"fetch of {tp} failed: {code.name}", code))

    def _take_records(self, tp: TopicPartition, st: _Partition, p: Any, position: int) -> None:
        data = p.records
        if not data:
            return
        read_committed = self.config.isolation_level == "read_committed"
        aborted: list[tuple[int, int]] = []
        if read_committed:
            aborted = sorted(
                (int(a.first_offset), int(a.producer_id))
                for a in (getattr(p, "aborted_transactions", None) or ())
            )
        aborted_producers: set[int] = set()
        out = st.buffer
        next_position = position
        for pos, header in rb.iter_batches(data):
            if header.last_offset < position:
                continue
            next_position = max(next_position, header.last_offset + 1)
            if read_committed:
                while aborted and aborted[0][0] <= header.last_offset:
                    aborted_producers.add(aborted.pop(0)[1])
                if header.is_control:
                    if header.producer_id in aborted_producers and _control_type(data, pos) == _CONTROL_ABORT:
                        aborted_producers.discard(header.producer_id)
                    continue
                if header.is_transactional and header.producer_id in aborted_producers:
                    continue
            elif header.is_control:
                continue
            epoch = header.partition_leader_epoch
            _h, rows = rb.decode_record_tuples(data, pos)
            for offset, ts, key, value, headers, _attrs in rows:
                if offset < position:
                    continue
                out.append(
                    Record(
                        topic=tp.topic,
                        partition=tp.partition,
                        offset=offset,
                        timestamp=ts,
                        key=key,
                        value=value,
                        headers=headers,
                        leader_epoch=epoch if epoch >= 0 else None,
                    )
                )
        if not out:
            # nothing to hand out (only control batches or aborted data): move past them
            st.position = max(next_position, st.position or 0)
            st.next_fetch = None
        elif next_position > position:
            st.next_fetch = next_position

    # -- handing records to the application -------------------------------------------------

    def raise_errors(self) -> None:
        if self._errors:
            error = self._errors.pop(0)
            raise error

    def has_buffered(self) -> bool:
        return any(st.buffer and not st.paused for st in self._parts.values())

    def drain(self, max_records: int | None = None) -> list[Record]:
        """Up to ``max.poll.records`` buffered records (partition by partition), advancing positions."""
        limit = self.config.max_poll_records if max_records is None else max_records
        out: list[Record] = []
        self.drained = {}
        for tp, st in sorted(self._parts.items()):
            if not st.buffer or st.paused:
                continue
            take = st.buffer[: limit - len(out)]
            del st.buffer[: len(take)]
            out.extend(take)
            if take:
                st.position = take[-1].offset + 1
                self.drained[tp] = st.position
            if not st.buffer and st.next_fetch is not None:
                st.position = max(st.position or 0, st.next_fetch)
                st.next_fetch = None
            if len(out) >= limit:
                break
        return out


_ZERO = uuid.UUID(int=0)


def _control_type(data: bytes, pos: int) -> int:
    """The type of the control record in the batch at ``pos`` (0 ABORT, 1 COMMIT)."""
    try:
        _h, rows = rb.decode_record_tuples(data, pos)
    except rb.CorruptBatchError:
        return -1
    if not rows or rows[0][2] is None or len(rows[0][2]) < 4:
        return -1
    key = rows[0][2]
    return int.from_bytes(key[2:4], "big", signed=True)
