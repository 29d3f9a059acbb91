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
* **the heartbeat thread**, a :class:`~groupcoord.client.heartbeat_thread.HeartbeatThread`
  named ``kafka-coordinator-heartbeat-thread | <group.id>``, created and started with the
  consumer (for a consumer with a ``group.id``). It runs
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
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from groupcoord.client import wire
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.connection import InFlight, NetworkClient
from groupcoord.client.engine import Callback, ConsumerEngine, connection_config, core_node, now_ms
from groupcoord.client.errors import KafkaClientError
from groupcoord.client.fetcher import FetchOut
from groupcoord.client.heartbeat_thread import HeartbeatThread
from groupcoord.client.outbox import Outbound
from groupcoord.client.types import OffsetAndMetadata, Record, TopicPartition

log = logging.getLogger(__name__)


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
        self._heartbeat: HeartbeatThread | None = None
        core = self._engine.core
        if core is not None:
            assert self.config.group_id is not None
            self._heartbeat = HeartbeatThread(
                group_id=self.config.group_id,
                lock=self._lock,
                client=self._client,
                poll=core.heartbeat_poll,
                next_deadline_ms=core.next_heartbeat_deadline_ms,
                send=self._send_request,
                deliver=self._deliver_core,
                now_ms=now_ms,
            )
            self._heartbeat.start()

    # -- context manager --------------------------------------------------------------------

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public API -------------------------------------------------------------------------

    @property
    def heartbeat_thread(self) -> threading.Thread | None:
        return None if self._heartbeat is None else self._heartbeat.thread

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
            self._engine.unsubscribe()
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
                records = self._engine.take_records()
                if records:
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
        with self._lock:
            commit_id = self._engine.start_commit(offsets, asynchronous)
            self._drive(app_poll=False)
        if asynchronous:
            return
        self._pump_until(lambda: commit_id in self._engine.commit_results, self.config.default_api_timeout_ms)
        with self._lock:
            self._engine.take_commit_result(commit_id)

    def committed(
        self, partitions: Iterable[TopicPartition], timeout_seconds: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """The group's committed offsets for ``partitions`` (None where nothing is committed)."""
        self._check_open()
        with self._lock:
            fetch_id, parts = self._engine.start_committed(partitions)
            self._drive(app_poll=False)
        self._pump_until(
            lambda: fetch_id in self._engine.committed_results, self._engine.limit_ms(timeout_seconds)
        )
        with self._lock:
            return self._engine.take_committed(fetch_id, parts)

    def position(self, partition: TopicPartition, timeout_seconds: float | None = None) -> int:
        """The offset of the next record poll will return for ``partition`` (looked up if unknown)."""
        self._check_open()
        tp = TopicPartition(partition[0], partition[1])
        limit = self._engine.limit_ms(timeout_seconds)
        self._pump_until(lambda: self._engine.fetcher.position(tp) is not None, limit, fetch=True)
        with self._lock:
            pos = self._engine.fetcher.position(tp)
        assert pos is not None
        return pos

    def seek(self, partition: TopicPartition, offset: int) -> None:
        with self._lock:
            self._engine.seek(partition, offset)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        with self._lock:
            self._engine.seek_to(partitions, "earliest")

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        with self._lock:
            self._engine.seek_to(partitions, "latest")

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._engine.pause(partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        with self._lock:
            self._engine.resume(partitions)

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
                if self._heartbeat is not None:
                    self._heartbeat.close(timeout_seconds)
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
        self._engine.check_open()

    def _check_heartbeat_thread(self) -> None:
        if self._heartbeat is not None:
            self._heartbeat.check()

    def _drive(self, *, app_poll: bool) -> None:
        """One step (lock held): collect finished requests, ask the core and the fetcher what
        to send, send it."""
        self._collect()
        for out in self._engine.core_requests(app_poll=app_poll):
            self._send_core(out)
        self._send_fetches()

    def _send_fetches(self) -> None:
        for out in self._engine.fetch_requests():
            node = self._client.least_loaded_node() if out.node is None else out.node
            inflight = self._client.send(node, out.api_key, out.fields, timeout_ms=out.timeout_ms)
            self._seq += 1
            self._app[self._seq] = (inflight, out)

    def _send_core(self, out: Outbound) -> None:
        self._seq += 1
        self._app[self._seq] = (self._send_request(out), out)

    def _send_request(self, out: Outbound) -> InFlight:
        api_key, fields = wire.request_fields(out.request)
        return self._client.send(core_node(self._client, out), api_key, fields, timeout_ms=out.timeout_ms)

    def _collect(self) -> None:
        """Hand finished requests to the core or the fetcher (lock held)."""
        done = [(k, v) for k, v in self._app.items() if v[0].done]
        for key, (inflight, out) in done:
            del self._app[key]
            if isinstance(out, FetchOut):
                self._engine.on_fetch_answer(self._client, out, inflight.response, inflight.error)
            else:
                self._engine.on_core_answer(self._client, out, inflight.response, inflight.error)

    def _no_core_requests(self) -> bool:
        return not any(isinstance(out, Outbound) for _, out in self._app.values())

    def _next_wait_s(self) -> float:
        with self._lock:
            return self._engine.next_wait_s()

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
                if self._engine.pump_done(condition, fetch=fetch):
                    return
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

    def _deliver_core(self, out: Outbound, inflight: InFlight, now: int) -> None:
        """Hand a finished request of the heartbeat thread to the core (lock held)."""
        self._engine.on_core_answer(self._client, out, inflight.response, inflight.error)
