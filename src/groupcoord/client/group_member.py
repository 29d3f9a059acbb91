"""Group membership for custom protocol types: leader election and work distribution.

Kafka's group protocol is not only for consumers: Kafka Connect uses it (protocol type
``connect``) to elect a leader among its workers and let the leader hand out work. A
:class:`GroupMember` does the same for Python services. Every member sends its own metadata
(bytes of your choosing) for each protocol it supports; the coordinator elects a leader and
picks a protocol all members support; the leader's ``assign`` callback receives every member's
metadata and returns each member's assignment (bytes); every member then gets its own
assignment in ``on_assigned``. Before each rebalance (and when leaving) ``on_revoked`` tells
the member to stop the work of its previous assignment.

It runs over the same sans-I/O member core as the consumer (``AbstractCoordinator``: two-step
join, heartbeats with the ``enabled`` flag on a real thread (:class:`HeartbeatThread`) named
``kafka-coordinator-heartbeat-thread | <group.id>``, session and rebalance timeouts, static
membership with ``group.instance.id``, the error -> action table). Callbacks run on the
application's thread inside :meth:`GroupMember.poll`.

Leader election in a few lines::

    from groupcoord.client import GroupMember

    def assign(protocol, members):
        # members: [(member_id, group_instance_id, metadata)], the leader is whoever runs this
        leader = min(m[0] for m in members)
        return {member_id: (b"leader" if member_id == leader else b"follower")
                for member_id, _, _ in members}

    def on_assigned(assignment, generation):
        print("I am", assignment.decode(), "in generation", generation)

    with GroupMember(
        {"bootstrap.servers": "127.0.0.1:9092", "group.id": "schedulers"},
        protocol_type="election",
        protocols=[("v1", b"")],
        assign=assign,
        on_assigned=on_assigned,
        on_revoked=lambda: print("stepping down until the next assignment"),
    ) as member:
        while True:
            member.poll(1.0)   # keeps the membership alive and runs the callbacks
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from groupcoord.client import wire
from groupcoord.client.config import RebalanceConfig, field_values
from groupcoord.client.connection import ConnectionConfig, InFlight, NetworkClient
from groupcoord.client.engine import coordinator_node_id, now_ms
from groupcoord.client.errors import ConfigError, KafkaClientError
from groupcoord.client.events import Assigned, FatalErrorEvent, MemberEvent, Revoked
from groupcoord.client.heartbeat_thread import HeartbeatThread
from groupcoord.client.member import AbstractCoordinator
from groupcoord.client.messages import JoinGroupResponseMember
from groupcoord.client.outbox import Outbound

log = logging.getLogger(__name__)

MemberInfo = tuple[str, str | None, bytes]
AssignFn = Callable[[str, list[MemberInfo]], Mapping[str, bytes]]


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupMemberConfig:
    """Settings (Kafka key names with dots as underscores); defaults as Kafka Connect's."""

    bootstrap_servers: str = ""
    group_id: str = ""
    group_instance_id: str | None = None
    client_id: str = "groupcoord-member"
    session_timeout_ms: int = 10_000
    heartbeat_interval_ms: int = 3_000
    rebalance_timeout_ms: int = 60_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000
    request_timeout_ms: int = 30_000

    @classmethod
    def from_dict(cls, settings: Mapping[str, Any]) -> GroupMemberConfig:
        config = cls(**field_values(cls, settings, _coerce_loosely))
        if not config.bootstrap_servers:
            raise ConfigError("bootstrap.servers is required")
        if not config.group_id:
            raise ConfigError("group.id is required")
        if config.heartbeat_interval_ms >= config.session_timeout_ms:
            raise ConfigError("heartbeat.interval.ms must be lower than session.timeout.ms")
        return config


def _coerce_loosely(key: str, raw: Any, default: Any) -> Any:
    """A group member's settings: ``int()`` for the numbers, ``str()`` for the rest."""
    if isinstance(default, int):
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{key} must be an integer, got {raw!r}") from None
    return None if raw is None else str(raw)


class GroupMemberCore(AbstractCoordinator):
    """The sans-I/O member for a custom protocol type (Kafka Connect's ``WorkerCoordinator`` shape)."""

    def __init__(
        self,
        config: GroupMemberConfig,
        *,
        protocol_type: str,
        protocols: Callable[[], Sequence[tuple[str, bytes]]],
        assign: AssignFn,
    ) -> None:
        super().__init__(
            RebalanceConfig(
                group_id=config.group_id,
                group_instance_id=config.group_instance_id,
                session_timeout_ms=config.session_timeout_ms,
                rebalance_timeout_ms=config.rebalance_timeout_ms,
                heartbeat_interval_ms=config.heartbeat_interval_ms,
                retry_backoff_ms=config.retry_backoff_ms,
                retry_backoff_max_ms=config.retry_backoff_max_ms,
                request_timeout_ms=config.request_timeout_ms,
            )
        )
        self._protocol_type = protocol_type
        self._protocols = protocols
        self._assign = assign
        self.assignment: bytes | None = None
        self.is_leader = False
        self.active = True
        self.closing = False

    def protocol_type(self) -> str:
        return self._protocol_type

    def metadata(self) -> Sequence[tuple[str, bytes]]:
        return list(self._protocols())

    def group_active(self) -> bool:
        return self.active and not self.closing

    def on_join_prepare(self, now_ms: int, generation_id: int, member_id: str) -> bool:
        if self.assignment is not None:
            self._events.append(Revoked())
            self.assignment = None
        self.is_leader = False
        return True

    def perform_assignment(
        self,
        leader_id: str,
        protocol: str,
        members: Sequence[JoinGroupResponseMember],
        skip_assignment: bool,
        now_ms: int,
    ) -> Mapping[str, bytes] | None:
        self.is_leader = True
        if skip_assignment:
            return {}
        infos = [(m.member_id, m.group_instance_id, m.metadata) for m in members]
        try:
            result = dict(self._assign(protocol, infos))
        except Exception as exc:  # the application's assign failed: report it, retry the round
            raise KafkaClientError(f"assign callback failed: {exc!r}") from exc
        return {m.member_id: result.get(m.member_id, b"") for m in members}

    def on_join_complete(
        self, generation_id: int, member_id: str, protocol: str | None, assignment: bytes, now_ms: int
    ) -> None:
        self.assignment = assignment
        self._events.append(Assigned(assignment=assignment, generation_id=generation_id, protocol=protocol))

    def on_leave_prepare(self, now_ms: int) -> None:
        if self.assignment is not None:
            self._events.append(Revoked())
            self.assignment = None


class GroupMember:
    """A member of a group with a custom protocol type (see the module docstring)."""

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]] | Callable[[], Sequence[tuple[str, bytes]]],
        assign: AssignFn,
        on_assigned: Callable[[bytes, int], Any] | None = None,
        on_revoked: Callable[[], Any] | None = None,
    ) -> None:
        if protocol_type == "consumer":
            raise ConfigError("protocol type 'consumer' is the Consumer's; use groupcoord.client.Consumer")
        self.config = GroupMemberConfig.from_dict(config)
        fixed = list(protocols) if not callable(protocols) else None
        self.core = GroupMemberCore(
            self.config,
            protocol_type=protocol_type,
            protocols=(lambda: fixed) if fixed is not None else protocols,  # type: ignore[arg-type,return-value]
            assign=assign,
        )
        self._on_assigned = on_assigned
        self._on_revoked = on_revoked
        self._client = NetworkClient(
            self.config.bootstrap_servers,
            ConnectionConfig(
                client_id=self.config.client_id, request_timeout_ms=self.config.request_timeout_ms
            ),
        )
        self._lock = threading.RLock()
        self._app: list[tuple[InFlight, Outbound]] = []
        self._events: deque[MemberEvent] = deque()
        self._fatal: KafkaClientError | None = None
        self._closed = False
        self._stop = threading.Event()
        self._heartbeat = HeartbeatThread(
            group_id=self.config.group_id,
            lock=self._lock,
            client=self._client,
            poll=self.core.heartbeat_poll,
            next_deadline_ms=self.core.next_heartbeat_deadline_ms,
            send=self._send,
            deliver=self._deliver,
            now_ms=now_ms,
        )
        self._heartbeat.start()

    def __enter__(self) -> GroupMember:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- public -------------------------------------------------------------------------------

    @property
    def heartbeat_thread(self) -> threading.Thread:
        return self._heartbeat.thread

    @property
    def member_id(self) -> str:
        with self._lock:
            return self.core.generation.member_id

    @property
    def generation_id(self) -> int:
        with self._lock:
            return self.core.generation.generation_id

    @property
    def is_leader(self) -> bool:
        with self._lock:
            return self.core.is_leader

    @property
    def assignment(self) -> bytes | None:
        with self._lock:
            return self.core.assignment

    def poll(self, timeout_seconds: float = 0.0) -> None:
        """Keep the membership alive for up to ``timeout_seconds``; runs the callbacks.

        Call it at least every ``rebalance.timeout.ms``, or the member leaves the group."""
        if self._closed:
            raise KafkaClientError("the member is closed")
        deadline = time.monotonic() + max(0.0, timeout_seconds)
        while True:
            with self._lock:
                self._drive(app_poll=True)
            self._run_callbacks()
            if self._fatal is not None:
                raise self._fatal
            self._heartbeat.check()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._wait(min(remaining, self._next_wait_s()))

    def close(self, timeout_seconds: float = 30.0) -> None:
        """Revoke and leave the group (dynamic members), stop the heartbeat thread."""
        if self._closed:
            return
        self._stop.set()
        self._heartbeat.close(timeout_seconds)
        try:
            with self._lock:
                self.core.closing = True
                self.core.close_member(now_ms())
                self._drive(app_poll=False)
            deadline = time.monotonic() + min(timeout_seconds, 5.0)
            while time.monotonic() < deadline:
                with self._lock:
                    self._drive(app_poll=False)
                    if not self._app:
                        break
                self._wait(0.1)
            self._run_callbacks()
        finally:
            self._closed = True
            self._client.close()

    # -- internals ------------------------------------------------------------------------------

    def _drive(self, *, app_poll: bool) -> None:
        now = now_ms()
        done = [x for x in self._app if x[0].done]
        for item in done:
            self._app.remove(item)
            self._deliver(item[1], item[0], now)
        outs = self.core.poll(now) if app_poll else self.core.pending(now)
        self._take_events()
        for out in outs:
            self._app.append((self._send(out), out))

    def _send(self, out: Outbound) -> InFlight:
        api_key, fields_ = wire.request_fields(out.request)
        if out.node is None:
            node = self._client.least_loaded_node()
        else:
            node = coordinator_node_id(out.node.node_id)
            self._client.ensure_node(node, out.node.host, out.node.port)
        return self._client.send(node, api_key, fields_, timeout_ms=out.timeout_ms)

    def _deliver(self, out: Outbound, inflight: InFlight, now: int) -> None:
        if inflight.error is not None:
            self.core.on_failure(out.request_id, now)
        else:
            self.core.on_response(out.request_id, wire.read_response(out.request, inflight.response), now)
        self._take_events()

    def _take_events(self) -> None:
        for event in self.core.events():
            if isinstance(event, FatalErrorEvent):
                self._fatal = event.error
            else:
                self._events.append(event)

    def _run_callbacks(self) -> None:
        while True:
            with self._lock:
                if not self._events:
                    return
                event = self._events.popleft()
            if isinstance(event, Assigned) and self._on_assigned is not None:
                self._on_assigned(event.assignment, event.generation_id)
            elif isinstance(event, Revoked) and self._on_revoked is not None:
                self._on_revoked()

    def _next_wait_s(self) -> float:
        with self._lock:
            deadline = self.core.next_deadline_ms()
        if deadline is None:
            return 0.5
        # a deadline already due right after a drive means the core waits for an answer:
        # wait a little for it instead of spinning
        return max(0.005, min(0.5, (deadline - now_ms()) / 1000))

    def _wait(self, timeout_s: float) -> None:
        with self._lock:
            waiting = [x[0] for x in self._app]
        if waiting:
            self._client.wait(waiting, timeout_s)
        elif timeout_s > 0:
            self._stop.wait(timeout_s)
