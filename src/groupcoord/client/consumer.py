"""The blocking consumer: the application's thread plus the real heartbeat thread.

::

    from groupcoord.client import Consumer

    with Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "orders",
                   "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe(["orders"], on_assign=lambda parts: print("got", parts))
        while True:
            for record in consumer.poll(1.0):
                handle(record)

:class:`Consumer` drives the sans-I/O member core (``ConsumerCoordinator`` of
``consumer_core.py``) and the sans-I/O :class:`~groupcoord.client.fetcher.Fetcher` over one
:class:`~groupcoord.client.connection.NetworkClient`. Two threads touch the core, under one
lock, as in Kafka's Java client:

* **the application's thread**, inside :meth:`Consumer.poll`, :meth:`Consumer.commit`,
  :meth:`Consumer.close` and friends: it joins the group, fetches, commits, and runs the
  rebalance callbacks (``on_assign`` / ``on_revoke`` / ``on_lost``, each called with a list
  of :class:`TopicPartition`), always on this thread, inside ``poll``;
* **the heartbeat thread**, named ``kafka-coordinator-heartbeat-thread | <group.id>``,
  created and started with the consumer (for a consumer with a ``group.id``). It runs
  ``core.heartbeat_poll`` and sends what the core returns, which is nothing unless the
  core's ``enabled`` flag is set (from the JoinGroup answer until the member leaves STABLE
  or a heartbeat fails). It also applies the session timeout (coordinator unknown) and the
  poll timeout (``maybe_leave_group``) while the application is busy.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from groupcoord.client import wire
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.connection import ConnectionConfig, InFlight, NetworkClient
from groupcoord.client.errors import KafkaClientError
from groupcoord.client.fetcher import Fetcher, FetcherConfig, FetchOut
from groupcoord.client.member import FatalErrorEvent, MemberEvent, Outbound, heartbeat_thread_name
from groupcoord.client.messages import MetadataRequest
from groupcoord.client.types import OffsetAndMetadata, Record, TopicPartition

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
    """The member core for a consumer with a group id."""
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
        from groupcoord.client import consumer_core as cc

        for event in events:
            if isinstance(event, cc.CommitCompleted):
                self.commit_results[event.commit_id] = event.error
            elif isinstance(event, cc.CommittedOffsets) and event.fetch_id in self.start_lookups:
                # starting positions of manually assigned partitions (assign() with a group.id)
                self.start_lookups.discard(event.fetch_id)
                found = dict(event.offsets)
                if event.error is not None:
                    log.info("committed offsets for assigned partitions unavailable: %s", event.error)
                for tp in self.fetcher.awaiting():
                    om = found.get(tp)
                    self.fetcher.set_starting_offset(tp, None if om is None else om.offset)
            elif isinstance(event, cc.CommittedOffsets):
                self.committed_results[event.fetch_id] = (dict(event.offsets), event.error)
            elif isinstance(event, cc.StartingPositions):
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
        from groupcoord.client import consumer_core as cc

        calls: list[tuple[Callback, list[TopicPartition]]] = []
        while self.events:
            event = self.events.popleft()
            if isinstance(event, cc.PartitionsRevoked):
                parts = list(event.partitions)
                if self.callbacks.on_revoke is not None:
                    calls.append((self.callbacks.on_revoke, parts))
                self.fetcher.assign(self.fetcher.assigned() - set(parts))
            elif isinstance(event, cc.PartitionsLost):
                parts = list(event.partitions)
                if self.callbacks.on_lost is not None:
                    calls.append((self.callbacks.on_lost, parts))
                elif self.callbacks.on_revoke is not None:
                    calls.append((self.callbacks.on_revoke, parts))  # Java's default onPartitionsLost
                self.fetcher.assign(self.fetcher.assigned() - set(parts))
            elif isinstance(event, cc.PartitionsAssigned):
                parts = list(event.partitions)
                self.fetcher.assign(self.fetcher.assigned() | set(parts))
                for tp in parts:
                    if tp in self.early_starts:
                        self.fetcher.set_starting_offset(tp, self.early_starts.pop(tp))
                if self.callbacks.on_assign is not None:
                    calls.append((self.callbacks.on_assign, parts))
        return calls

    def raise_fatal(self) -> None:
        if self.fatal is not None:
            raise self.fatal
        self.fetcher.raise_errors()

    def assignment(self) -> set[TopicPartition]:
        if self.core is not None and not self.manual:
            return set(self.core.assignment())
        return self.fetcher.assigned()

    def consumed(self, records: list[Record]) -> None:
        """Tell the core the positions reached by what the last drain handed out."""
        if records and self.core is not None:
            self.core.update_positions(
                {tp: OffsetAndMetadata(offset=pos) for tp, pos in self.fetcher.drained.items()}
            )


class Consumer:
    """A Kafka consumer (blocking). See the module docstring; methods follow the Java client."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = ConsumerConfig.from_dict(config)
        if not self.config.bootstrap_servers:
            raise KafkaClientError("bootstrap.servers is required")
        self._client = NetworkClient(self.config.bootstrap_servers, connection_config(self.config))
        self._lock = threading.RLock()
        self._engine = ConsumerEngine(self.config)
        self._app: dict[int, tuple[InFlight, Outbound | FetchOut]] = {}
        self._seq = 0
        self._stop = threading.Event()
        self._heartbeat_thread: threading.Thread | None = None
        self._heartbeat_error: BaseException | None = None
        if self._engine.core is not None:
            assert self.config.group_id is not None
            self._heartbeat_thread = threading.Thread(
                target=self._heartbeat_loop, name=heartbeat_thread_name(self.config.group_id), daemon=True
            )
            self._heartbeat_thread.start()

    # -- context manager --------------------------------------------------------------------

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public API -------------------------------------------------------------------------

    @property
    def heartbeat_thread(self) -> threading.Thread | None:
        return self._heartbeat_thread

    def subscribe(
        self,
        topics_or_pattern: str | Iterable[str] | re.Pattern[str],
        on_assign: Callback | None = None,
        on_revoke: Callback | None = None,
        on_lost: Callback | None = None,
    ) -> None:
        """Join the group for these topics (or a regex; a string starting with ``^`` is one)."""
        self._check_open()
        with self._lock:
            self._engine.subscribe(topics_or_pattern, on_assign, on_revoke, on_lost)

    def unsubscribe(self) -> None:
        self._check_open()
        with self._lock:
            if self._engine.core is not None:
                self._engine.core.unsubscribe(now_ms())
                self._engine.take_events(self._engine.core.events())
            self._engine.subscribed = False
            self._engine.manual = False
            self._engine.fetcher.assign(())
            self._drive(app_poll=False)  # the LeaveGroup of a dynamic member goes out now
        self._run_callbacks()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        """Consume exactly these partitions, without group membership."""
        self._check_open()
        with self._lock:
            lookup = self._engine.assign(partitions)
            if lookup:
                self._engine.start_lookups.add(self._engine.core.fetch_committed(tuple(lookup), now_ms()))

    def assignment(self) -> set[TopicPartition]:
        with self._lock:
            return self._engine.assignment()

    def poll(self, timeout_seconds: float = 0.0) -> list[Record]:
        """Records from the assigned partitions, waiting up to ``timeout_seconds`` for some.

        Runs the group protocol (joins, rebalances, auto-commit) and the rebalance callbacks."""
        self._check_open()
        deadline = time.monotonic() + max(0.0, timeout_seconds)
        waited = False
        while True:
            self._check_heartbeat_thread()
            with self._lock:
                self._drive(app_poll=True)
                self._engine.raise_fatal()
            self._run_callbacks()
            with self._lock:
                self._engine.raise_fatal()
                records = self._engine.fetcher.drain()
                if records:
                    self._engine.consumed(records)
                    self._send_fetches()  # read ahead while the application works
                    return records
            remaining = deadline - time.monotonic()
            if remaining <= 0 and waited:
                return []
            # poll(0) too runs one network round, so a caller polling with no timeout progresses
            self._wait(max(0.0, min(remaining, self._next_wait_s())))
            waited = True

    def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        asynchronous: bool = False,
    ) -> None:
        """Commit ``offsets`` (None: the positions of what poll returned). A synchronous commit
        waits for the answer and raises its error (``CommitFailedError`` after a rebalance)."""
        self._check_open()
        core = self._require_core("commit")
        normalised = None if offsets is None else _normalise_offsets(offsets)
        with self._lock:
            commit_id = core.commit(normalised, now_ms(), asynchronous=asynchronous)
            self._drive(app_poll=False)
        if asynchronous:
            return
        self._pump_until(lambda: commit_id in self._engine.commit_results, self.config.default_api_timeout_ms)
        with self._lock:
            error = self._engine.commit_results.pop(commit_id)
        if error is not None:
            raise error

    def committed(
        self, partitions: Iterable[TopicPartition], timeout_seconds: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets for ``partitions`` (None where nothing is committed)."""
        self._check_open()
        core = self._require_core("committed")
        parts = tuple(TopicPartition(tp[0], tp[1]) for tp in partitions)
        with self._lock:
            fetch_id = core.fetch_committed(parts, now_ms())
            self._drive(app_poll=False)
        limit = self.config.default_api_timeout_ms if timeout_seconds is None else int(timeout_seconds * 1000)
        self._pump_until(lambda: fetch_id in self._engine.committed_results, limit)
        with self._lock:
            offsets, error = self._engine.committed_results.pop(fetch_id)
        if error is not None:
            raise error
        return {tp: offsets.get(tp) for tp in parts}

    def position(self, partition: TopicPartition, timeout_seconds: float | None = None) -> int:
        """The offset of the next record poll will return for ``partition`` (looked up if unknown)."""
        self._check_open()
        tp = TopicPartition(partition[0], partition[1])
        limit = self.config.default_api_timeout_ms if timeout_seconds is None else int(timeout_seconds * 1000)
        self._pump_until(lambda: self._engine.fetcher.position(tp) is not None, limit, fetch=True)
        with self._lock:
            pos = self._engine.fetcher.position(tp)
        assert pos is not None
        return pos

    def seek(self, partition: TopicPartition, offset: int) -> None:
        with self._lock:
            self._engine.fetcher.seek(TopicPartition(partition[0], partition[1]), offset)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        with self._lock:
            parts = self._engine.fetcher.assigned() if partitions is None else partitions
            self._engine.fetcher.seek_to([TopicPartition(p[0], p[1]) for p in parts], "earliest")

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        with self._lock:
            parts = self._engine.fetcher.assigned() if partitions is None else partitions
            self._engine.fetcher.seek_to([TopicPartition(p[0], p[1]) for p in parts], "latest")

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._engine.fetcher.pause(TopicPartition(p[0], p[1]) for p in partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._engine.fetcher.resume(TopicPartition(p[0], p[1]) for p in partitions)

    def paused(self) -> set[TopicPartition]:
        with self._lock:
            return self._engine.fetcher.paused()

    def close(self, timeout_seconds: float = 30.0) -> None:
        """Commit (if auto-commit), revoke, leave the group (dynamic members), stop the thread."""
        if self._engine.closed:
            return
        try:
            core = self._engine.core
            if core is not None:
                # Java stops the heartbeat thread first, then commits and leaves.
                self._stop.set()
                if self._heartbeat_thread is not None:
                    self._client.wakeup()
                    self._heartbeat_thread.join(timeout_seconds)
                with self._lock:
                    core.close(now_ms())
                    self._drive(app_poll=False)
                try:
                    self._pump_until(lambda: bool(core.closed), int(timeout_seconds * 1000))
                    # the LeaveGroup (if any) is out: give it a moment to be answered
                    self._pump_until(self._no_core_requests, 5000)
                except (KafkaClientError, TimeoutError) as exc:
                    log.info("close did not finish cleanly: %s", exc)
                with self._lock:
                    self._engine.take_events(core.events())
                self._run_callbacks(ignore_errors=True)
        finally:
            self._engine.closed = True
            self._stop.set()
            self._client.close()

    # -- the drive loop (application's thread) ------------------------------------------------

    def _check_open(self) -> None:
        if self._engine.closed:
            raise KafkaClientError("the consumer is closed")

    def _require_core(self, what: str) -> Any:
        if self._engine.core is None:
            raise KafkaClientError(f"{what}() needs a group.id")
        return self._engine.core

    def _check_heartbeat_thread(self) -> None:
        if self._heartbeat_error is not None:
            error = self._heartbeat_error
            raise KafkaClientError(f"the heartbeat thread failed: {error!r}") from error

    def _drive(self, *, app_poll: bool) -> None:
        """One step (lock held): collect finished requests, ask the core and the fetcher what
        to send, send it."""
        self._collect()
        now = now_ms()
        core = self._engine.core
        if core is not None:
            outs = (
                core.poll(now)
                if app_poll and (self._engine.subscribed or self._engine.manual)
                else core.pending(now)
            )
            self._engine.take_events(core.events())
            for out in outs:
                self._send_core(out)
        self._send_fetches()

    def _send_fetches(self) -> None:
        if self._engine.closed:
            return
        for out in self._engine.fetcher.requests(now_ms()):
            node = self._client.least_loaded_node() if out.node is None else out.node
            inflight = self._client.send(node, out.api_key, out.fields, timeout_ms=out.timeout_ms)
            self._seq += 1
            self._app[self._seq] = (inflight, out)

    def _send_core(self, out: Outbound) -> None:
        api_key, fields = wire.request_fields(out.request)
        if out.node is None:
            node = self._client.least_loaded_node()
        else:
            node = coordinator_node_id(out.node.node_id)
            self._client.ensure_node(node, out.node.host, out.node.port)
        inflight = self._client.send(node, api_key, fields, timeout_ms=out.timeout_ms)
        self._seq += 1
        self._app[self._seq] = (inflight, out)

    def _collect(self) -> None:
        """Hand finished requests to the core or the fetcher (lock held)."""
        done = [(k, v) for k, v in self._app.items() if v[0].done]
        now = now_ms()
        for key, (inflight, out) in done:
            del self._app[key]
            if isinstance(out, FetchOut):
                if inflight.error is not None:
                    self._engine.fetcher.on_failure(out, now)
                else:
                    if out.kind == "metadata":
                        self._client.update_brokers(wire.read_metadata(inflight.response).brokers)
                    self._engine.fetcher.on_response(out, inflight.response, now)
            else:
                _deliver_core(self._client, self._engine, out, inflight, now)

    def _no_core_requests(self) -> bool:
        return not any(isinstance(out, Outbound) for _, out in self._app.values())

    def _next_wait_s(self) -> float:
        with self._lock:
            core = self._engine.core
            deadline: int | None = core.next_deadline_ms() if core is not None else None
        if deadline is None:
            return 0.5
        # a deadline already due right after a drive means the core waits for an answer:
        # wait a little for it instead of spinning
        return max(0.005, min(0.5, (deadline - now_ms()) / 1000))

    def _wait(self, timeout_s: float) -> None:
        with self._lock:
            waiting = [inflight for inflight, _ in self._app.values()]
        if waiting:
            self._client.wait(waiting, timeout_s)
        elif timeout_s > 0:
            self._stop.wait(timeout_s)

    def _pump_until(self, condition: Callable[[], bool], limit_ms: int, *, fetch: bool = False) -> None:
        deadline = time.monotonic() + limit_ms / 1000
        while True:
            with self._lock:
                self._drive(app_poll=False)
                if condition():
                    return
                if self._engine.fatal is not None:
                    raise self._engine.fatal
                if fetch:
                    self._engine.fetcher.raise_errors()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"timed out after {limit_ms} ms")
            self._wait(min(remaining, self._next_wait_s()))

    def _run_callbacks(self, *, ignore_errors: bool = False) -> None:
        with self._lock:
            calls = self._engine.deliver()
        for callback, parts in calls:
            try:
                callback(sorted(parts))
            except Exception:
                if not ignore_errors:
                    raise
                log.exception("rebalance callback failed during close")

    # -- the heartbeat thread ----------------------------------------------------------------

    def _heartbeat_loop(self) -> None:
        core = self._engine.core
        mine: list[tuple[InFlight, Outbound]] = []
        try:
            while not self._stop.is_set():
                with self._lock:
                    now = now_ms()
                    for inflight, out in [x for x in mine if x[0].done]:
                        mine.remove((inflight, out))
                        _deliver_core(self._client, self._engine, out, inflight, now)
                    for out in core.heartbeat_poll(now):
                        api_key, fields = wire.request_fields(out.request)
                        if out.node is None:
                            node = self._client.least_loaded_node()
                        else:
                            node = coordinator_node_id(out.node.node_id)
                            self._client.ensure_node(node, out.node.host, out.node.port)
                        mine.append(
                            (self._client.send(node, api_key, fields, timeout_ms=out.timeout_ms), out)
                        )
                    deadline = core.next_heartbeat_deadline_ms()
                wait_s = 0.1 if deadline is None else max(0.005, min(0.1, (deadline - now_ms()) / 1000))
                if mine:
                    self._client.wait([x[0] for x in mine], wait_s)
                else:
                    self._stop.wait(wait_s)
        except Exception as exc:  # surfaces on the application's thread (Java does the same)
            log.exception("heartbeat thread failed")
            self._heartbeat_error = exc


def _deliver_core(client: Any, engine: ConsumerEngine, out: Outbound, inflight: InFlight, now: int) -> None:
    core = engine.core
    if inflight.error is not None:
        core.on_failure(out.request_id, now)
    else:
        response = wire.read_response(out.request, inflight.response)
        if isinstance(out.request, MetadataRequest):
            md = wire.read_metadata(inflight.response)
            client.update_brokers(md.brokers)
            engine.fetcher.on_metadata(md, now)
        core.on_response(out.request_id, response, now)
    engine.take_events(core.events())


def _normalise_offsets(
    offsets: Mapping[TopicPartition, OffsetAndMetadata | int],
) -> dict[TopicPartition, OffsetAndMetadata]:
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, value in offsets.items():
        key = TopicPartition(tp[0], tp[1])
        out[key] = value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(offset=int(value))
    return out
