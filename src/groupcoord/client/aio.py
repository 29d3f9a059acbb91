"""The asyncio consumer: the same API as :class:`~groupcoord.client.consumer.Consumer`, awaited.

::

    from groupcoord.client import AsyncConsumer

    async with AsyncConsumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "orders",
                              "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe(["orders"])
        while True:
            for record in await consumer.poll(1.0):
                await handle(record)

There are no threads. The heartbeat "thread" of the seeds is an asyncio task (named like the
thread, ``kafka-coordinator-heartbeat-thread | <group.id>``) started with the consumer's first
call inside a running loop; like the thread, it sends only while the core's ``enabled`` flag
is set, and it keeps heartbeating while the application awaits something else between polls.
Each request runs as its own task over :class:`~groupcoord.client.connection.AsyncNetworkClient`
and hands its answer to the core or the fetcher as soon as it arrives. Rebalance callbacks run
inside :meth:`AsyncConsumer.poll`; they may be plain functions or coroutine functions.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from groupcoord.client import wire
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.connection import AsyncNetworkClient
from groupcoord.client.engine import Callback, ConsumerEngine, connection_config, core_node, now_ms
from groupcoord.client.errors import KafkaClientError
from groupcoord.client.fetcher import FetchOut
from groupcoord.client.heartbeat import heartbeat_thread_name
from groupcoord.client.outbox import Outbound
from groupcoord.client.types import OffsetAndMetadata, Record, TopicPartition

log = logging.getLogger(__name__)


class AsyncConsumer:
    """A Kafka consumer for asyncio (see the module docstring)."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = ConsumerConfig.from_dict(config)
        if not self.config.bootstrap_servers:
            raise KafkaClientError("bootstrap.servers is required")
        self._client = AsyncNetworkClient(self.config.bootstrap_servers, connection_config(self.config))
        self._engine = ConsumerEngine(self.config)
        self._tasks: set[asyncio.Task[None]] = set()
        self._core_requests = 0
        self._waiters: list[asyncio.Future[None]] = []
        self._heartbeat_task: asyncio.Task[None] | None = None
        self._stopping = False

    async def __aenter__(self) -> AsyncConsumer:
        self._start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def heartbeat_task(self) -> asyncio.Task[None] | None:
        return self._heartbeat_task

    # -- public API (same names and meaning as Consumer) ---------------------------------------

    def subscribe(
        self,
        topics_or_pattern: str | Iterable[str] | re.Pattern[str],
        on_assign: Callback | None = None,
        on_revoke: Callback | None = None,
        on_lost: Callback | None = None,
    ) -> None:
        self._check_open()
        self._engine.subscribe(topics_or_pattern, on_assign, on_revoke, on_lost)
        self._start()

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self._check_open()
        lookup = self._engine.assign(partitions)
        if lookup:
            self._engine.start_lookups.add(self._engine.core.fetch_committed(tuple(lookup), now_ms()))
        self._start()

    async def unsubscribe(self) -> None:
        self._check_open()
        self._engine.unsubscribe()
        self._drive(app_poll=False)
        await self._run_callbacks()

    def assignment(self) -> set[TopicPartition]:
        return self._engine.assignment()

    async def poll(self, timeout_seconds: float = 0.0) -> list[Record]:
        self._check_open()
        self._start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0.0, timeout_seconds)
        waited = False
        while True:
            self._drive(app_poll=True)
            self._engine.raise_fatal()
            await self._run_callbacks()
            records = self._engine.take_records()
            if records:
                self._send_fetches()  # read ahead while the application works
                return records
            remaining = deadline - loop.time()
            if remaining <= 0 and waited:
                return []
            # poll(0) too runs one network round, so a caller polling with no timeout progresses
            await self._wait(max(0.0, min(remaining, self._next_wait_s())))
            waited = True

    async def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata | int] | None = None,
        asynchronous: bool = False,
    ) -> None:
        self._check_open()
        commit_id = self._engine.start_commit(offsets, asynchronous)
        self._drive(app_poll=False)
        if asynchronous:
            return
        await self._pump_until(
            lambda: commit_id in self._engine.commit_results, self.config.default_api_timeout_ms
        )
        self._engine.take_commit_result(commit_id)

    async def committed(
        self, partitions: Iterable[TopicPartition], timeout_seconds: float | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        self._check_open()
        fetch_id, parts = self._engine.start_committed(partitions)
        self._drive(app_poll=False)
        limit = self._engine.limit_ms(timeout_seconds)
        await self._pump_until(lambda: fetch_id in self._engine.committed_results, limit)
        return self._engine.take_committed(fetch_id, parts)

    async def position(self, partition: TopicPartition, timeout_seconds: float | None = None) -> int:
        self._check_open()
        tp = TopicPartition(partition[0], partition[1])
        limit = self._engine.limit_ms(timeout_seconds)
        await self._pump_until(lambda: self._engine.fetcher.position(tp) is not None, limit, fetch=True)
        pos = self._engine.fetcher.position(tp)
        assert pos is not None
        return pos

    def seek(self, partition: TopicPartition, offset: int) -> None:
        self._engine.seek(partition, offset)

    def seek_to_beginning(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._engine.seek_to(partitions, "earliest")

    def seek_to_end(self, partitions: Iterable[TopicPartition] | None = None) -> None:
        self._engine.seek_to(partitions, "latest")

    def pause(self, partitions: Iterable[TopicPartition]) -> None:
        self._engine.pause(partitions)

    def resume(self, partitions: Iterable[TopicPartition]) -> None:
        self._engine.resume(partitions)

    def paused(self) -> set[TopicPartition]:
        return self._engine.fetcher.paused()

    async def close(self, timeout_seconds: float = 30.0) -> None:
        if self._engine.closed:
            return
        try:
            core = self._engine.core
            self._stopping = True
            if self._heartbeat_task is not None:
                self._heartbeat_task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await self._heartbeat_task
            if core is not None:
                core.close(now_ms())
                self._drive(app_poll=False)
                try:
                    await self._pump_until(lambda: bool(core.closed), int(timeout_seconds * 1000))
                    # the LeaveGroup (if any) is out: give it a moment to be answered
                    await self._pump_until(lambda: self._core_requests == 0, 5000)
                except (KafkaClientError, TimeoutError) as exc:
                    log.info("close did not finish cleanly: %s", exc)
                self._engine.take_events(core.events())
                await self._run_callbacks(ignore_errors=True)
        finally:
            self._engine.closed = True
            for task in list(self._tasks):
                task.cancel()
            await self._client.close()

    # -- internals ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        self._engine.check_open()

    def _start(self) -> None:
        if self._heartbeat_task is None and self._engine.core is not None:
            assert self.config.group_id is not None
            self._heartbeat_task = asyncio.get_running_loop().create_task(
                self._heartbeat_loop(), name=heartbeat_thread_name(self.config.group_id)
            )

    def _notify(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    async def _wait(self, timeout_s: float) -> None:
        # call_later instead of asyncio.wait_for: on 3.11 wait_for can swallow a cancellation
        # that races with the waiter's completion, and close() cancels the heartbeat task
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        self._waiters.append(waiter)
        timer = loop.call_later(max(0.0, timeout_s), _resolve, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _next_wait_s(self) -> float:
        return self._engine.next_wait_s()

    def _drive(self, *, app_poll: bool) -> None:
        for out in self._engine.core_requests(app_poll=app_poll):
            self._send_core(out)
        self._send_fetches()

    def _send_fetches(self) -> None:
        for out in self._engine.fetch_requests():
            node = self._client.least_loaded_node() if out.node is None else out.node
            self._spawn(self._fetch_request(node, out))

    def _send_core(self, out: Outbound) -> None:
        api_key, fields = wire.request_fields(out.request)
        node = core_node(self._client, out)
        self._core_requests += 1
        self._spawn(self._core_request(node, api_key, fields, out))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fetch_request(self, node: int, out: FetchOut) -> None:
        try:
            response = await self._client.request(node, out.api_key, out.fields, timeout_ms=out.timeout_ms)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._engine.on_fetch_answer(self._client, out, None, exc)
        else:
            self._engine.on_fetch_answer(self._client, out, response, None)
        self._notify()

    async def _core_request(self, node: int, api_key: int, fields: Mapping[str, Any], out: Outbound) -> None:
        try:
            response = await self._client.request(node, api_key, fields, timeout_ms=out.timeout_ms)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._engine.on_core_answer(self._client, out, None, exc)
        else:
            self._engine.on_core_answer(self._client, out, response, None)
        finally:
            self._core_requests -= 1
        self._notify()

    async def _pump_until(self, condition: Callable[[], bool], limit_ms: int, *, fetch: bool = False) -> None:
        deadline = time.monotonic() + limit_ms / 1000
        while True:
            self._drive(app_poll=False)
            if self._engine.pump_done(condition, fetch=fetch):
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"timed out after {limit_ms} ms")
            await self._wait(min(remaining, self._next_wait_s()))

    async def _run_callbacks(self, *, ignore_errors: bool = False) -> None:
        for callback, parts in self._engine.deliver():
            try:
                result = callback(sorted(parts))
                if inspect.isawaitable(result):
                    await result
            except Exception:
                if not ignore_errors:
                    raise
                log.exception("rebalance callback failed during close")

    async def _heartbeat_loop(self) -> None:
        """The heartbeat thread of the seeds, as a task: sends only while the core is enabled."""
        core = self._engine.core
        while not self._stopping:
            for out in core.heartbeat_poll(now_ms()):
                self._send_core(out)
            await self._wait(self._engine.heartbeat_wait_s())


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
