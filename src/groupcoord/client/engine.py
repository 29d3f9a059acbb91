"""What the blocking and the asyncio consumer share: everything but the I/O.

:class:`ConsumerEngine` sits between the sans-I/O member core (``consumer_core.py``), the
sans-I/O :class:`~groupcoord.client.fetcher.Fetcher` and the application's rebalance
callbacks; :class:`~groupcoord.client.consumer.Consumer` (threads, one lock) and
:class:`~groupcoord.client.aio.AsyncConsumer` (tasks) only move its requests over the network
and hand the answers back. The functions below route a core request to its node and apply an
answer, the same for both.
"""

from __future__ import annotations

import inspect
import logging
import re
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from groupcoord.client import events as ev
from groupcoord.client import wire
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.connection import ConnectionConfig
from groupcoord.client.errors import KafkaClientError
from groupcoord.client.events import FatalErrorEvent, MemberEvent
from groupcoord.client.fetcher import Fetcher, FetcherConfig, FetchOut
from groupcoord.client.heartbeat import heartbeat_wait_s
from groupcoord.client.messages import MetadataRequest
from groupcoord.client.outbox import Outbound
from groupcoord.client.types import OffsetAndMetadata, Record, TopicPartition
from groupcoord.protocol import codec

log = logging.getLogger(__name__)

Callback = Callable[[list[TopicPartition]], Any]

#: The coordinator gets its own connection (as Java's ``Integer.MAX_VALUE - nodeId``), so group
#: traffic never waits behind a long-polling Fetch to the same broker.
COORDINATOR_NODE_BASE = 2**31 - 1


def coordinator_node_id(node_id: int) -> int:
    return COORDINATOR_NODE_BASE - node_id


def now_ms() -> int:
    return int(time.monotonic() * 1000)


def fetcher_config(config: ConsumerConfig) -> FetcherConfig:
    return FetcherConfig(
        auto_offset_reset=config.auto_offset_reset,
        fetch_min_bytes=config.fetch_min_bytes,
        fetch_max_wait_ms=config.fetch_max_wait_ms,
        fetch_max_bytes=config.fetch_max_bytes,
        max_partition_fetch_bytes=config.max_partition_fetch_bytes,
        max_poll_records=config.max_poll_records,
        isolation_level=config.isolation_level,
        metadata_max_age_ms=config.metadata_max_age_ms,
        retry_backoff_ms=config.retry_backoff_ms,
        request_timeout_ms=config.request_timeout_ms,
    )


def connection_config(config: ConsumerConfig) -> ConnectionConfig:
    return ConnectionConfig(
        client_id=config.client_id or "groupcoord-client",
        request_timeout_ms=config.request_timeout_ms,
        reconnect_backoff_ms=50,
        reconnect_backoff_max_ms=1000,
    )


def make_core(config: ConsumerConfig) -> Any:
    """The member core for a consumer with a group id: the classic one, or KIP-848's for
    ``group.protocol=consumer`` (``consumer_group_adapter.py``, the same calls and events)."""
    if config.group_protocol == "consumer":
        from groupcoord.client import consumer_group_adapter

        return consumer_group_adapter.ConsumerGroupCoordinator(config)
    from groupcoord.client import consumer_core

    return vars(consumer_core)["ConsumerCoordinator"](config)


class _Callbacks:
    def __init__(self) -> None:
        self.on_assign: Callback | None = None
        self.on_revoke: Callback | None = None
        self.on_lost: Callback | None = None


class ConsumerEngine:
    """What both consumers share: event handling between the core, the fetcher and the
    application's callbacks. No I/O; the blocking and asyncio adapters do that."""

    def __init__(self, config: ConsumerConfig) -> None:
        self.config = config
        self.fetcher = Fetcher(fetcher_config(config))
        self.core: Any = make_core(config) if config.group_id else None
        self.callbacks = _Callbacks()
        self.subscribed = False
        self.manual = False
        self.pattern: re.Pattern[str] | None = None
        self.events: deque[MemberEvent] = deque()
        self.fatal: KafkaClientError | None = None
        self.commit_results: dict[int, KafkaClientError | None] = {}
        self.committed_results: dict[int, tuple[dict[TopicPartition, OffsetAndMetadata | None], Any]] = {}
        self.start_lookups: set[int] = set()
        self.early_starts: dict[TopicPartition, int | None] = {}
        self.closed = False

    # -- application calls that only change state ------------------------------------------

    def subscribe(
        self,
        topics_or_pattern: str | Iterable[str] | re.Pattern[str],
        on_assign: Callback | None,
        on_revoke: Callback | None,
        on_lost: Callback | None,
    ) -> None:
        if self.core is None:
            raise KafkaClientError("subscribe() needs a group.id")
        if self.manual:
            raise KafkaClientError("subscribe() after assign(): call unsubscribe() first")
        self.callbacks.on_assign = on_assign
        self.callbacks.on_revoke = on_revoke
        self.callbacks.on_lost = on_lost
        if isinstance(topics_or_pattern, re.Pattern):
            self.pattern = topics_or_pattern
            self.core.subscribe_pattern(topics_or_pattern.pattern)
            self.fetcher.want_topics((), all_topics=True)
        elif isinstance(topics_or_pattern, str) and topics_or_pattern.startswith("^"):
            self.pattern = re.compile(topics_or_pattern)
            self.core.subscribe_pattern(topics_or_pattern)
            self.fetcher.want_topics((), all_topics=True)
        else:
            topics = [topics_or_pattern] if isinstance(topics_or_pattern, str) else list(topics_or_pattern)
            self.pattern = None
            self.core.subscribe(tuple(topics))
            self.fetcher.want_topics(topics)
        self.subscribed = True

    def assign(self, partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
        """Manual assignment; returns the partitions whose starting offset must be looked up."""
        if self.subscribed:
            raise KafkaClientError("assign() after subscribe(): call unsubscribe() first")
        parts = [TopicPartition(tp[0], tp[1]) for tp in partitions]
        before = self.fetcher.assigned()
        self.fetcher.assign(parts)
        self.manual = True
        if self.core is not None:
            self.core.assign(tuple(parts))
        new = [tp for tp in parts if tp not in before]
        if self.core is None:
            for tp in new:
                self.fetcher.set_starting_offset(tp, None)
            return []
        return new

    # -- events -----------------------------------------------------------------------------

    def take_events(self, events: Iterable[MemberEvent]) -> None:
        """Record the core's events; results of commits and offset lookups are kept apart so a
        blocking call can find its own, rebalance events wait for :meth:`deliver`."""
        for event in events:
            if isinstance(event, ev.CommitCompleted):
                self.commit_results[event.commit_id] = event.error
            elif isinstance(event, ev.CommittedOffsets) and event.fetch_id in self.start_lookups:
                # starting positions of manually assigned partitions (assign() with a group.id)
                self.start_lookups.discard(event.fetch_id)
                found = dict(event.offsets)
                if event.error is not None:
                    log.info("committed offsets for assigned partitions unavailable: %s", event.error)
                for tp in self.fetcher.awaiting():
                    om = found.get(tp)
                    self.fetcher.set_starting_offset(tp, None if om is None else om.offset)
            elif isinstance(event, ev.CommittedOffsets):
                self.committed_results[event.fetch_id] = (dict(event.offsets), event.error)
            elif isinstance(event, ev.StartingPositions):
                assigned = self.fetcher.assigned()
                for tp, om in event.positions:
                    offset = None if om is None else om.offset
                    if tp in assigned:
                        self.fetcher.set_starting_offset(tp, offset)
                    else:  # its PartitionsAssigned is still queued for deliver()
                        self.early_starts[tp] = offset
            elif isinstance(event, FatalErrorEvent):
                self.fatal = event.error
            else:
                self.events.append(event)

    def deliver(self) -> list[tuple[Callback, list[TopicPartition]]]:
        """Apply queued rebalance events to the fetcher; the callbacks to run, in order."""
        calls: list[tuple[Callback, list[TopicPartition]]] = []

        def call(event: MemberEvent, callback: Callback | None, parts: list[TopicPartition]) -> None:
            callback = self._completing(event, callback)
            if callback is not None:
                calls.append((callback, parts))

        while self.events:
            event = self.events.popleft()
            if isinstance(event, ev.PartitionsRevoked):
                parts = list(event.partitions)
                call(event, self.callbacks.on_revoke, parts)
                self.fetcher.assign(self.fetcher.assigned() - set(parts))
            elif isinstance(event, ev.PartitionsLost):
                parts = list(event.partitions)
                # Java's default onPartitionsLost is onPartitionsRevoked
                call(event, self.callbacks.on_lost or self.callbacks.on_revoke, parts)
                self.fetcher.assign(self.fetcher.assigned() - set(parts))
            elif isinstance(event, ev.PartitionsAssigned):
                parts = list(event.partitions)
                self.fetcher.assign(self.fetcher.assigned() | set(parts))
                for tp in parts:
                    if tp in self.early_starts:
                        self.fetcher.set_starting_offset(tp, self.early_starts.pop(tp))
                call(event, self.callbacks.on_assign, parts)
        return calls

    def _completing(self, event: MemberEvent, callback: Callback | None) -> Callback | None:
        """The consumer-protocol member waits for its callbacks (events with a ``callback_id``):
        report each one back once it ran (at once when there is none to run)."""
        callback_id: int | None = getattr(event, "callback_id", None)
        done: Callable[[int, BaseException | None], None] | None = getattr(self.core, "callback_done", None)
        if callback_id is None or done is None:
            return callback
        if callback is None:
            done(callback_id, None)
            return None
        user = callback

        def run(parts: list[TopicPartition]) -> Any:
            try:
                result = user(parts)
            except BaseException as exc:
                done(callback_id, exc)
                raise
            if inspect.isawaitable(result):  # AsyncConsumer awaits it: report when it finished
                return _reported(result, callback_id, done)
            done(callback_id, None)
            return result

        return run

    def raise_fatal(self) -> None:
        if self.fatal is not None:
            raise self.fatal
        self.fetcher.raise_errors()

    def assignment(self) -> set[TopicPartition]:
        if self.core is not None and not self.manual:
            return set(self.core.assignment())
        return self.fetcher.assigned()

    def take_records(self) -> list[Record]:
        """What the fetcher has for the application (raising a pending error first); the
        core learns the positions they reach."""
        self.raise_fatal()
        records = self.fetcher.drain()
        self.consumed(records)
        return records

    def consumed(self, records: list[Record]) -> None:
        """Tell the core the positions reached by what the last drain handed out."""
        if records and self.core is not None:
            self.core.update_positions(
                {tp: OffsetAndMetadata(offset=pos) for tp, pos in self.fetcher.drained.items()}
            )

    # -- shared steps of the public API (the adapters add locking or awaiting) ---------------

    def check_open(self) -> None:
        if self.closed:
            raise KafkaClientError("the consumer is closed")

    def require_core(self, what: str) -> Any:
        if self.core is None:
            raise KafkaClientError(f"{what}() needs a group.id")
        return self.core

    def limit_ms(self, timeout_seconds: float | None) -> int:
        """A blocking call's limit: ``timeout_seconds``, or ``default.api.timeout.ms``."""
        if timeout_seconds is None:
            return self.config.default_api_timeout_ms
        return int(timeout_seconds * 1000)

    def unsubscribe(self) -> None:
        if self.core is not None:
            self.core.unsubscribe(now_ms())
            self.take_events(self.core.events())
        self.subscribed = False
        self.manual = False
        self.fetcher.assign(())

    def start_commit(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None, asynchronous: bool
    ) -> int:
        core = self.require_core("commit")
        normalised = None if offsets is None else normalise_offsets(offsets)
        commit_id: int = core.commit(normalised, now_ms(), asynchronous=asynchronous)
        return commit_id

    def take_commit_result(self, commit_id: int) -> None:
        error = self.commit_results.pop(commit_id)
        if error is not None:
            raise error

    def start_committed(self, partitions: Iterable[TopicPartition]) -> tuple[int, tuple[TopicPartition, ...]]:
        core = self.require_core("committed")
        parts = tuple(TopicPartition(tp[0], tp[1]) for tp in partitions)
        fetch_id: int = core.fetch_committed(parts, now_ms())
        return fetch_id, parts

    def take_committed(
        self, fetch_id: int, parts: tuple[TopicPartition, ...]
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        offsets, error = self.committed_results.pop(fetch_id)
        if error is not None:
            raise error
        return {tp: offsets.get(tp) for tp in parts}

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self.fetcher.seek(TopicPartition(partition[0], partition[1]), offset)

    def seek_to(self, partitions: Iterable[TopicPartition] | None, where: str) -> None:
        """``where`` is ``"earliest"`` or ``"latest"``; None: every assigned partition."""
        parts = self.fetcher.assigned() if partitions is None else partitions
        self.fetcher.seek_to([TopicPartition(p[0], p[1]) for p in parts], where)

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self.fetcher.pause(TopicPartition(p[0], p[1]) for p in partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self.fetcher.resume(TopicPartition(p[0], p[1]) for p in partitions)

    # -- one step of the drive loop -----------------------------------------------------------

    def core_requests(self, *, app_poll: bool) -> list[Outbound]:
        """What the core wants sent now: ``poll`` (the application polled an active consumer)
        or ``pending``; its events are taken."""
        core = self.core
        if core is None:
            return []
        now = now_ms()
        outs: list[Outbound] = (
            core.poll(now) if app_poll and (self.subscribed or self.manual) else core.pending(now)
        )
        self.take_events(core.events())
        return outs

    def fetch_requests(self) -> list[FetchOut]:
        return [] if self.closed else list(self.fetcher.requests(now_ms()))

    def pump_done(self, condition: Callable[[], bool], *, fetch: bool) -> bool:
        """True when ``condition`` holds; raises a fatal error (and, with ``fetch``, a fetch error)."""
        if condition():
            return True
        if self.fatal is not None:
            raise self.fatal
        if fetch:
            self.fetcher.raise_errors()
        return False

    def next_wait_s(self) -> float:
        core = self.core
        deadline: int | None = core.next_deadline_ms() if core is not None else None
        if deadline is None:
            return 0.5
        # a deadline already due right after a drive means the core waits for an answer:
        # wait a little for it instead of spinning
        return max(0.005, min(0.5, (deadline - now_ms()) / 1000))

    def heartbeat_wait_s(self) -> float:
        return heartbeat_wait_s(self.core.next_heartbeat_deadline_ms(), now_ms())

    # -- answers --------------------------------------------------------------------------------

    def on_fetch_answer(self, client: Any, out: FetchOut, response: Any, error: BaseException | None) -> None:
        """A fetcher request finished (``error`` set: it failed)."""
        now = now_ms()
        if error is not None:
            log.debug("%s failed: %s", out.kind, error)
            self.fetcher.on_failure(out, now)
            return
        if out.kind == "metadata":
            client.update_brokers(wire.read_metadata(response).brokers)
        self.fetcher.on_response(out, response, now)

    def on_core_answer(self, client: Any, out: Outbound, response: Any, error: BaseException | None) -> None:
        """A core request finished (``error`` set: it failed); the core's events are taken."""
        from groupcoord.client import consumer_group_wire

        core = self.core
        now = now_ms()
        if isinstance(error, codec.UnsupportedApiError) and consumer_group_wire.handles(out.request):
            # a broker without KIP-848's APIs: what Java's network client reports as
            # UnsupportedVersionException, fatal to the consumer-protocol member
            core.on_response(out.request_id, consumer_group_wire.unsupported(out.request), now)
        elif error is not None:
            log.debug("request %s failed: %s", type(out.request).__name__, error)
            core.on_failure(out.request_id, now)
        else:
            if isinstance(out.request, MetadataRequest):
                md = wire.read_metadata(response)
                client.update_brokers(md.brokers)
                self.fetcher.on_metadata(md, now)
            core.on_response(out.request_id, wire.read_response(out.request, response), now)
        self.take_events(core.events())


async def _reported(
    awaitable: Awaitable[Any], callback_id: int, done: Callable[[int, BaseException | None], None]
) -> Any:
    try:
        result = await awaitable
    except BaseException as exc:
        done(callback_id, exc)
        raise
    done(callback_id, None)
    return result


def core_node(client: Any, out: Outbound) -> int:
    """The node a core request goes to: the coordinator's own connection, or any broker."""
    if out.node is None:
        node: int = client.least_loaded_node()
        return node
    node = coordinator_node_id(out.node.node_id)
    client.ensure_node(node, out.node.host, out.node.port)
    return node


def normalise_offsets(
    offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
) -> dict[TopicPartition, OffsetAndMetadata]:
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, value in offsets.items():
        key = TopicPartition(tp[0], tp[1])
        out[key] = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(offset=int(value))
    return out
