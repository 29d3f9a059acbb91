"""Broker connections for the client: a blocking network client and an asyncio one.

Both keep one connection per broker node, negotiate versions with ApiVersions when a
connection opens (:mod:`groupcoord.client.wire`), number requests with correlation ids, allow
several requests in flight per connection (answers are matched by correlation id, so their
order does not matter), time requests out (a timed-out request closes its connection, as
Kafka's NetworkClient does, because a later answer could no longer be trusted to match) and
reconnect with exponential backoff (``reconnect.backoff.ms`` doubling up to
``reconnect.backoff.max.ms``).

Nodes: bootstrap addresses get negative ids (-1, -2, ...) until a Metadata answer names the
real brokers; :meth:`least_loaded_node` picks the ready (or connectable) node with the fewest
requests in flight, which is where FindCoordinator and Metadata go.

Threads (blocking client): any thread may :meth:`NetworkClient.send`; socket reads happen
in :meth:`NetworkClient.poll`, run by one thread at a time. A thread that waits for an answer
either runs the poll itself or, if another thread is polling, waits on a condition that the
poller signals after every round, so the heartbeat thread gets its answers while the
application's thread is busy elsewhere, and vice versa.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
import selectors
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from groupcoord.client import wire
from groupcoord.protocol import codec
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.framing import FrameDecoder, FrameError
from groupcoord.protocol.registry import ApiMessages

log = logging.getLogger(__name__)

_MAX_FRAME = 512 * 1024 * 1024
_RECV = 1024 * 1024
_PROBE: Mapping[str, Any] = {}  # the fields of the ApiVersions a connection opens with


class RequestTimeoutError(ConnectionError):
    """No answer within the request's timeout (the connection was closed)."""


class BrokerUnavailableError(ConnectionError):
    """The connection to a node failed or was lost before the answer arrived."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionConfig:
    client_id: str = "groupcoord-client"
    request_timeout_ms: int = 30000
    connect_timeout_ms: int = 10000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1000


def parse_bootstrap(servers: str | Iterable[str]) -> list[tuple[str, int]]:
    """``"host:port,host2:port2"`` (or a list of such) as (host, port) pairs."""
    items = servers.split(",") if isinstance(servers, str) else list(servers)
    out: list[tuple[str, int]] = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        host, _, port = item.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"bad bootstrap server {item!r} (expected host:port)")
        out.append((host.strip("[]"), int(port)))
    if not out:
        raise ValueError("bootstrap.servers is empty")
    return out


class InFlight:
    """One request: queued, sent, then answered or failed."""

    __slots__ = ("_event", "api_key", "deadline", "done", "error", "fields", "node", "response", "version")

    def __init__(self, node: int, api_key: int, fields: Mapping[str, Any], deadline: float) -> None:
        self.node = node
        self.api_key = api_key
        self.fields = fields
        self.deadline = deadline
        self.response: Any = None
        self.error: BaseException | None = None
        self.done = False
        self.version = -1
        self._event: threading.Event | None = None

    def _finish(self, response: Any = None, error: BaseException | None = None) -> None:
        if self.done:
            return
        self.response = response
        self.error = error
        self.done = True

    def result(self) -> Any:
        """The response entity, or raise the failure."""
        if not self.done:
            raise RuntimeError("request still in flight")
        if self.error is not None:
            raise self.error
        return self.response


class _NodeLike(Protocol):
    node_id: int
    host: str
    port: int
    next_attempt: float

    def connected(self) -> bool: ...

    def load(self) -> int: ...


_N = TypeVar("_N", bound=_NodeLike)


class _NodeDirectory(Generic[_N]):
    """The nodes a client knows, shared by both clients: the bootstrap servers (ids -1, -2, ...)
    until a Metadata answer names the cluster's brokers, and which one is least loaded.
    The blocking client calls these with its lock held."""

    _nodes: dict[int, _N]

    def _init_nodes(
        self, bootstrap_servers: str | Iterable[str], make: Callable[[int, str, int], _N]
    ) -> None:
        self._make_node = make
        self._nodes = {}
        for i, (host, port) in enumerate(parse_bootstrap(bootstrap_servers)):
            self._nodes[-(i + 1)] = make(-(i + 1), host, port)
        self._bootstrap_ids = list(self._nodes)
        self._cluster: set[int] = set()

    def _learn_brokers(self, brokers: Iterable[wire.BrokerNode], cluster: bool) -> None:
        for b in brokers:
            if cluster:
                self._cluster.add(b.node_id)
            node = self._nodes.get(b.node_id)
            if node is None:
                self._nodes[b.node_id] = self._make_node(b.node_id, b.host, b.port)
            elif (node.host, node.port) != (b.host, b.port):
                self._disconnect(node, BrokerUnavailableError(f"node {b.node_id} moved"))
                node.host, node.port = b.host, b.port

    def _disconnect(self, node: _N, error: BaseException, *, backoff: bool = True) -> None:
        raise NotImplementedError

    def known_nodes_locked(self) -> list[int]:
        real = sorted(self._cluster)
        return real or list(self._bootstrap_ids)

    def _least_loaded(self, now: float) -> int:
        """The node with the fewest requests queued or in flight, preferring connected ones
        and skipping those in reconnect backoff (all in backoff: the one that leaves it first)."""
        candidates = [self._nodes[n] for n in self.known_nodes_locked()]
        usable = [n for n in candidates if n.connected() or n.next_attempt <= now]
        if not usable:
            return min(candidates, key=lambda n: n.next_attempt).node_id
        return min(usable, key=lambda n: (not n.connected(), n.load(), n.node_id)).node_id


class _Node:
    """Connection state of one node (blocking client); guarded by the client's lock."""

    def __init__(self, node_id: int, host: str, port: int) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.sock: socket.socket | None = None
        self.ready = False
        self.versions: codec.ApiVersionTable | None = None
        self.api_versions_version = wire.CLIENT_RANGES[ApiKey.API_VERSIONS][1]
        self.decoder = FrameDecoder(_MAX_FRAME)
        self.out = bytearray()
        self.queued: list[InFlight] = []
        self.in_flight: dict[int, tuple[InFlight, ApiMessages]] = {}
        self.failures = 0
        self.next_attempt = 0.0

    def connected(self) -> bool:
        return self.sock is not None

    def load(self) -> int:
        return len(self.queued) + len(self.in_flight)


class NetworkClient(_NodeDirectory[_Node]):
    """Blocking, thread-safe network client (see the module docstring)."""

    def __init__(
        self,
        bootstrap_servers: str | Iterable[str],
        config: ConnectionConfig | None = None,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config or ConnectionConfig()
        self._now = monotonic
        self._cond = threading.Condition()
        self._poll_lock = threading.Lock()
        self._init_nodes(bootstrap_servers, _Node)
        self._correlation = itertools.count(1)
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        self._closed = False

    # -- nodes -----------------------------------------------------------------------------

    def update_brokers(self, brokers: Iterable[wire.BrokerNode], *, cluster: bool = True) -> None:
        """Learn the real brokers from a Metadata answer (connections to moved nodes are reset)."""
        with self._cond:
            self._learn_brokers(brokers, cluster)

    def ensure_node(self, node_id: int, host: str, port: int) -> None:
        """Know ``node_id`` at host:port (the coordinator's own connection id, for instance)."""
        self.update_brokers([wire.BrokerNode(node_id=node_id, host=host, port=port)], cluster=False)

    def known_nodes(self) -> list[int]:
        with self._cond:
            return self.known_nodes_locked()

    def least_loaded_node(self) -> int:
        """The node with the fewest requests queued or in flight, preferring connected ones
        and skipping those in reconnect backoff (all in backoff: the one that leaves it first)."""
        now = self._now()
        with self._cond:
            return self._least_loaded(now)

    def versions(self, node_id: int) -> codec.ApiVersionTable | None:
        with self._cond:
            node = self._nodes.get(node_id)
            return node.versions if node is not None else None

    def in_flight_count(self, node_id: int | None = None) -> int:
        with self._cond:
            nodes = self._nodes.values() if node_id is None else [self._nodes[node_id]]
            return sum(n.load() for n in nodes)

    # -- requests --------------------------------------------------------------------------

    def send(
        self, node_id: int, api_key: int, fields: Mapping[str, Any], *, timeout_ms: int | None = None
    ) -> InFlight:
        """Queue a request for ``node_id``; the answer arrives through :meth:`poll`."""
        timeout = self.config.request_timeout_ms if timeout_ms is None else timeout_ms
        with self._cond:
            if self._closed:
                raise BrokerUnavailableError("client closed")
            node = self._nodes.get(node_id)
            if node is None:
                raise BrokerUnavailableError(f"unknown node {node_id}")
            request = InFlight(node_id, api_key, fields, self._now() + timeout / 1000)
            node.queued.append(request)
            if node.ready:
                self._encode_queued(node)
                self._flush(node)
        self._wake()
        return request

    def request(
        self,
        node_id: int,
        api_key: int,
        fields: Mapping[str, Any],
        *,
        timeout_ms: int | None = None,
    ) -> Any:
        """Send and wait: the response entity, or raise the failure."""
        inflight = self.send(node_id, api_key, fields, timeout_ms=timeout_ms)
        self.wait([inflight], None)
        return inflight.result()

    def wait(self, requests: Iterable[InFlight], timeout_s: float | None) -> bool:
        """Poll until any of ``requests`` is done (True) or ``timeout_s`` passes (False).

        ``None`` waits until one finishes (every request has its own timeout)."""
        reqs = list(requests)
        deadline = None if timeout_s is None else self._now() + timeout_s
        polled = False
        while True:
            if any(r.done for r in reqs):
                return True
            remaining = None if deadline is None else deadline - self._now()
            if remaining is not None and remaining <= 0 and polled:
                return False
            # at least one round even with no time left: I/O must progress on every call
            self.poll(0.5 if remaining is None else max(0.0, min(remaining, 0.5)), until=reqs)
            polled = True

    def poll(self, timeout_s: float, *, until: Iterable[InFlight] = ()) -> None:
        """One round of network I/O lasting at most ``timeout_s`` (less when something arrives).

        If another thread is polling, wait for its round instead (or for one of ``until``)."""
        watch = list(until)
        if not self._poll_lock.acquire(blocking=False):
            with self._cond:
                if not any(r.done for r in watch):
                    self._cond.wait(max(0.0, min(timeout_s, 0.05)))
            return
        try:
            self._poll_round(timeout_s)
        finally:
            self._poll_lock.release()
            with self._cond:
                self._cond.notify_all()

    def wakeup(self) -> None:
        """Cut a poll round short (another thread has work for the poller)."""
        self._wake()

    def close(self) -> None:
        with self._cond:
            if self._closed:
                return
            self._closed = True
            for node in self._nodes.values():
                self._disconnect(node, BrokerUnavailableError("client closed"), backoff=False)
            self._cond.notify_all()
        with self._poll_lock:
            self._selector.close()
            self._wake_r.close()
            self._wake_w.close()

    # -- internals (the poller) ------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    def _poll_round(self, timeout_s: float) -> None:
        now = self._now()
        with self._cond:
            if self._closed:
                return
            pending_connect = [
                n for n in self._nodes.values() if n.sock is None and n.queued and n.next_attempt <= now
            ]
        for node in pending_connect:
            self._connect(node)
        with self._cond:
            wait_s = timeout_s
            for node in self._nodes.values():
                if node.sock is None:
                    if node.queued:
                        wait_s = min(wait_s, max(0.0, node.next_attempt - now))
                    continue
                events = selectors.EVENT_READ | (selectors.EVENT_WRITE if node.out else 0)
                try:
                    self._selector.modify(node.sock, events, node)
                except KeyError:
                    self._selector.register(node.sock, events, node)
                for request, _ in node.in_flight.values():
                    wait_s = min(wait_s, max(0.0, request.deadline - now))
                for request in node.queued:
                    wait_s = min(wait_s, max(0.0, request.deadline - now))
        try:
            ready = self._selector.select(max(0.0, wait_s))
        except (OSError, ValueError):
            ready = []
        with self._cond:
            for key, mask in ready:
                node = key.data
                if node is None:
                    with contextlib.suppress(OSError):
                        while self._wake_r.recv(4096):
                            pass
                    continue
                if node.sock is None or key.fileobj is not node.sock:
                    continue
                if mask & selectors.EVENT_WRITE:
                    self._flush(node)
                if mask & selectors.EVENT_READ and node.sock is not None:
                    self._read(node)
            self._expire(self._now())

    def _connect(self, node: _Node) -> None:
        try:
            sock = socket.create_connection(
                (node.host, node.port), timeout=self.config.connect_timeout_ms / 1000
            )
        except OSError as exc:
            log.debug("connect to node %s (%s:%s) failed: %s", node.node_id, node.host, node.port, exc)
            with self._cond:
                self._fail_node(node, BrokerUnavailableError(f"connect to {node.host}:{node.port}: {exc}"))
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        with self._cond:
            if self._closed:
                sock.close()
                return
            node.sock = sock
            node.ready = False
            node.decoder = FrameDecoder(_MAX_FRAME)
            node.out.clear()
            self._send_api_versions(node)
            self._selector.register(sock, selectors.EVENT_READ | selectors.EVENT_WRITE, node)

    def _send_api_versions(self, node: _Node) -> None:
        c = codec.request_messages(ApiKey.API_VERSIONS, node.api_versions_version)
        cid = next(self._correlation)
        probe = InFlight(
            node.node_id, ApiKey.API_VERSIONS, _PROBE, self._now() + self.config.request_timeout_ms / 1000
        )
        node.in_flight[cid] = (probe, c)
        node.out += codec.encode_request(c, cid, codec.api_versions_request(c.version), self.config.client_id)

    def _encode_queued(self, node: _Node) -> None:
        assert node.versions is not None
        queued, node.queued = node.queued, []
        for request in queued:
            try:
                c = node.versions.messages(request.api_key)
                entity = codec.build_request(c.request_type, request.fields)
                cid = next(self._correlation)
                frame = codec.encode_request(c, cid, entity, self.config.client_id)
            except Exception as exc:  # unsupported API or a request the schema refuses
                request._finish(error=exc)
                continue
            request.version = c.version
            node.in_flight[cid] = (request, c)
            node.out += frame

    def _flush(self, node: _Node) -> None:
        if node.sock is None or not node.out:
            return
        try:
            sent = node.sock.send(node.out)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as exc:
            self._disconnect(node, BrokerUnavailableError(f"send to node {node.node_id}: {exc}"))
            return
        del node.out[:sent]

    def _read(self, node: _Node) -> None:
        assert node.sock is not None
        while True:
            try:
                data = node.sock.recv(_RECV)
            except (BlockingIOError, InterruptedError):
                break
            except OSError as exc:
                self._disconnect(node, BrokerUnavailableError(f"recv from node {node.node_id}: {exc}"))
                return
            if not data:
                self._disconnect(node, BrokerUnavailableError(f"node {node.node_id} closed the connection"))
                return
            node.decoder.feed(data)
            if len(data) < _RECV:
                break
        try:
            for frame in node.decoder.frames():
                self._on_frame(node, frame)
                if node.sock is None:
                    return
        except (FrameError, codec.ProtocolDecodeError) as exc:
            log.warning("bad answer from node %s: %s", node.node_id, exc)
            self._disconnect(node, BrokerUnavailableError(str(exc)))

    def _on_frame(self, node: _Node, frame: bytes) -> None:
        cid = codec.peek_correlation_id(frame)
        entry = node.in_flight.pop(cid, None)
        if entry is None:
            raise codec.ProtocolDecodeError(f"answer with unknown correlation id {cid}")
        request, c = entry
        if request.fields is _PROBE:
            table, retry = codec.decode_api_versions(frame, c.version, wire.CLIENT_RANGES)
            if table is None:
                assert retry is not None
                node.api_versions_version = retry
                self._send_api_versions(node)
                return
            node.versions = table
            node.ready = True
            node.failures = 0
            self._encode_queued(node)
            self._flush(node)
            return
        request._finish(response=codec.decode_response(c, frame)[1])

    def _expire(self, now: float) -> None:
        for node in self._nodes.values():
            expired = [r for r, _ in node.in_flight.values() if r.deadline <= now]
            if expired and node.sock is not None:
                log.info("request to node %s timed out; closing the connection", node.node_id)
                self._disconnect(node, RequestTimeoutError(f"request to node {node.node_id} timed out"))
            for request in [r for r in node.queued if r.deadline <= now]:
                node.queued.remove(request)
                request._finish(error=RequestTimeoutError(f"node {node.node_id} unreachable before timeout"))

    def _fail_node(self, node: _Node, error: BaseException) -> None:
        node.failures += 1
        base = self.config.reconnect_backoff_ms * (2 ** min(node.failures - 1, 16))
        backoff = min(base, self.config.reconnect_backoff_max_ms) * random.uniform(0.8, 1.2)
        node.next_attempt = self._now() + backoff / 1000
        queued, node.queued = node.queued, []
        for request in queued:
            request._finish(error=error)

    def _disconnect(self, node: _Node, error: BaseException, *, backoff: bool = True) -> None:
        if node.sock is not None:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._selector.unregister(node.sock)
            node.sock.close()
            node.sock = None
        node.ready = False
        node.out.clear()
        in_flight, node.in_flight = node.in_flight, {}
        for request, _ in in_flight.values():
            request._finish(error=error)
        if backoff:
            self._fail_node(node, error)
        else:
            queued, node.queued = node.queued, []
            for request in queued:
                request._finish(error=error)
        self._cond.notify_all()


# -- asyncio ------------------------------------------------------------------------------------


class _AsyncNode:
    def __init__(self, node_id: int, host: str, port: int) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.writer: asyncio.StreamWriter | None = None
        self.reader_task: asyncio.Task[None] | None = None
        self.ready: asyncio.Future[codec.ApiVersionTable] | None = None
        self.in_flight: dict[int, tuple[asyncio.Future[Any], ApiMessages]] = {}
        self.failures = 0
        self.next_attempt = 0.0
        self.connecting: asyncio.Task[None] | None = None

    def connected(self) -> bool:
        return self.writer is not None

    def load(self) -> int:
        return len(self.in_flight)


class AsyncNetworkClient(_NodeDirectory[_AsyncNode]):
    """The asyncio counterpart of :class:`NetworkClient`: same nodes, negotiation, correlation
    ids, timeouts and backoff; one reader task per connection, no threads."""

    def __init__(
        self, bootstrap_servers: str | Iterable[str], config: ConnectionConfig | None = None
    ) -> None:
        self.config = config or ConnectionConfig()
        self._init_nodes(bootstrap_servers, _AsyncNode)
        self._correlation = itertools.count(1)
        self._closed = False

    def update_brokers(self, brokers: Iterable[wire.BrokerNode], *, cluster: bool = True) -> None:
        self._learn_brokers(brokers, cluster)

    def ensure_node(self, node_id: int, host: str, port: int) -> None:
        self.update_brokers([wire.BrokerNode(node_id=node_id, host=host, port=port)], cluster=False)

    def known_nodes(self) -> list[int]:
        return self.known_nodes_locked()

    def least_loaded_node(self) -> int:
        return self._least_loaded(time.monotonic())

    def versions(self, node_id: int) -> codec.ApiVersionTable | None:
        node = self._nodes.get(node_id)
        if node is None or node.ready is None or not node.ready.done() or node.ready.exception():
            return None
        return node.ready.result()

    async def request(
        self, node_id: int, api_key: int, fields: Mapping[str, Any], *, timeout_ms: int | None = None
    ) -> Any:
        """Send one request and await its answer (raises on failure or timeout)."""
        if self._closed:
            raise BrokerUnavailableError("client closed")
        node = self._nodes.get(node_id)
        if node is None:
            raise BrokerUnavailableError(f"unknown node {node_id}")
        timeout = (self.config.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        table = await asyncio.wait_for(self._ensure_ready(node), timeout)
        c = table.messages(api_key)
        entity = codec.build_request(c.request_type, fields)
        cid = next(self._correlation)
        future: asyncio.Future[Any] = loop.create_future()
        node.in_flight[cid] = (future, c)
        assert node.writer is not None
        node.writer.write(codec.encode_request(c, cid, entity, self.config.client_id))
        try:
            return await asyncio.wait_for(asyncio.shield(future), max(0.0, deadline - loop.time()))
        except TimeoutError:
            log.info("request to node %s timed out; closing the connection", node_id)
            self._disconnect(node, RequestTimeoutError(f"request to node {node_id} timed out"))
            raise RequestTimeoutError(f"request to node {node_id} timed out") from None

    async def _ensure_ready(self, node: _AsyncNode) -> codec.ApiVersionTable:
        while True:
            if node.ready is not None and node.ready.done() and not node.ready.exception():
                return node.ready.result()
            if node.connecting is None:
                delay = node.next_attempt - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)  # reconnect backoff
                if node.connecting is None:
                    node.connecting = asyncio.create_task(self._connect(node))
            task = node.connecting
            await asyncio.shield(task)
            if node.connecting is task:
                node.connecting = None
            if node.ready is not None and node.ready.done() and node.ready.exception() is not None:
                exc = node.ready.exception()
                assert exc is not None
                raise exc

    async def _connect(self, node: _AsyncNode) -> None:
        loop = asyncio.get_running_loop()
        node.ready = loop.create_future()
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(node.host, node.port), self.config.connect_timeout_ms / 1000
            )
        except (OSError, TimeoutError) as exc:
            self._backoff(node)
            node.ready.set_exception(BrokerUnavailableError(f"connect to {node.host}:{node.port}: {exc}"))
            node.ready.exception()  # retrieved: nobody else may look
            return
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        node.writer = writer
        node.reader_task = asyncio.create_task(self._read_loop(node, reader))
        version = wire.CLIENT_RANGES[ApiKey.API_VERSIONS][1]
        try:
            for _ in range(2):
                c = codec.request_messages(ApiKey.API_VERSIONS, version)
                cid = next(self._correlation)
                raw: asyncio.Future[Any] = loop.create_future()
                node.in_flight[cid] = (raw, c)
                writer.write(
                    codec.encode_request(c, cid, codec.api_versions_request(version), self.config.client_id)
                )
                frame = await asyncio.wait_for(raw, self.config.request_timeout_ms / 1000)
                table, retry = codec.decode_api_versions(frame, version, wire.CLIENT_RANGES)
                if table is not None:
                    node.failures = 0
                    node.ready.set_result(table)
                    return
                assert retry is not None
                version = retry
            raise codec.ProtocolDecodeError("ApiVersions negotiation did not converge")
        except (OSError, TimeoutError, codec.ProtocolDecodeError) as exc:
            self._disconnect(node, BrokerUnavailableError(f"ApiVersions with node {node.node_id}: {exc}"))
            if not node.ready.done():
                node.ready.set_exception(BrokerUnavailableError(str(exc)))
                node.ready.exception()

    async def _read_loop(self, node: _AsyncNode, reader: asyncio.StreamReader) -> None:
        decoder = FrameDecoder(_MAX_FRAME)
        try:
            while True:
                data = await reader.read(_RECV)
                if not data:
                    raise BrokerUnavailableError(f"node {node.node_id} closed the connection")
                decoder.feed(data)
                for frame in decoder.frames():
                    cid = codec.peek_correlation_id(frame)
                    entry = node.in_flight.pop(cid, None)
                    if entry is None:
                        raise codec.ProtocolDecodeError(f"answer with unknown correlation id {cid}")
                    future, c = entry
                    if future.done():
                        continue
                    if c.api_key == ApiKey.API_VERSIONS and node.ready is not None and not node.ready.done():
                        future.set_result(frame)
                    else:
                        future.set_result(codec.decode_response(c, frame)[1])
        except asyncio.CancelledError:
            raise
        except (OSError, FrameError, codec.ProtocolDecodeError) as exc:
            if not isinstance(exc, BrokerUnavailableError):
                log.warning("connection to node %s failed: %s", node.node_id, exc)
            self._disconnect(
                node, exc if isinstance(exc, ConnectionError) else BrokerUnavailableError(str(exc))
            )

    def _backoff(self, node: _AsyncNode) -> None:
        node.failures += 1
        base = self.config.reconnect_backoff_ms * (2 ** min(node.failures - 1, 16))
        delay = min(base, self.config.reconnect_backoff_max_ms) * random.uniform(0.8, 1.2)
        node.next_attempt = time.monotonic() + delay / 1000

    def _disconnect(self, node: _AsyncNode, error: BaseException, *, backoff: bool = True) -> None:
        if node.writer is not None:
            node.writer.close()
            node.writer = None
            if backoff:
                self._backoff(node)
        task = node.reader_task
        node.reader_task = None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
        node.ready = None
        in_flight, node.in_flight = node.in_flight, {}
        for future, _ in in_flight.values():
            if not future.done():
                future.set_exception(error)
                future.exception()

    async def close(self) -> None:
        self._closed = True
        for node in self._nodes.values():
            writer = node.writer
            self._disconnect(node, BrokerUnavailableError("client closed"), backoff=False)
            if writer is not None:
                with contextlib.suppress(Exception):
                    await writer.wait_closed()
