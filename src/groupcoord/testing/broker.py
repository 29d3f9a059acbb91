"""``Broker``: a real groupcoord broker for a test, with time control and fault injection.

In-process by default: the broker runs on its own thread with its own event loop, listening
on 127.0.0.1 (port 0 unless given), its data in a temporary directory removed on exit (unless
``data_dir=`` is given). Clients talk to it over TCP exactly as to Kafka.
``Broker(subprocess=True)`` runs the same broker in a child process
(``python -m groupcoord.testing``, :mod:`groupcoord.testing.broker_process`), stopped by PID
(SIGTERM; SIGKILL for a hard stop).
Time control and fault injection reach it over a control channel on 127.0.0.1
(:mod:`groupcoord.testing.control`), so every method works alike in both modes; the
observation helpers go over the Kafka wire in both.

Time. Protocol time comes from :class:`AdvancingClock`: the system clock plus an offset that
only grows. :meth:`Broker.advance` grows it and then, on the broker's loop, fires every timer
now due (session expiry, join and rebalance timeouts, the initial rebalance delay,
pending-sync, offset retention, log retention, idle connections). It does **not** move the
clients' clocks: a client's ``max.poll.interval.ms``, its heartbeat interval, request
timeouts and backoffs all run on the client's own clock. Advancing by ``s`` is therefore
"``s`` seconds in which no client sent anything": every member whose session is shorter is
expired, including ones that would have heartbeated meanwhile. A Fetch parked for new data
whose wait falls inside the advanced span is answered at once (empty), as when its wait ends.

Faults. One interceptor (:class:`~groupcoord.testing.faults.FaultInjector`) sits in front of
every handler; see that module for what each injection does.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import os
import shutil
import tempfile
import threading
import time
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from groupcoord.admin import quotas as admin_quotas
from groupcoord.admin.client import AdminClient
from groupcoord.broker.acl import STANDARD_AUTHORIZER
from groupcoord.config import BrokerConfig
from groupcoord.coordinator.events import GroupEvent
from groupcoord.errors import ErrorCode
from groupcoord.testing import wire
from groupcoord.testing.broker_process import BrokerProcess, log_path, log_tail, process_argv
from groupcoord.testing.broker_thread import (
    CRASHED,
    LogTail,
    abandon_flusher,
    call_soon,
    capture_logs,
    close_metrics,
    console_url,
    crash,
    finish_loop,
    metrics_url,
    release_logs,
    sever,
)
from groupcoord.testing.faults import FaultInjector, FaultsView, RemoteFaults
from groupcoord.testing.security import TestCA, broker_settings, client_config
from groupcoord.testing.wire import GroupView, Record, TopicPartition

if typing.TYPE_CHECKING:
    from groupcoord.app import BrokerApp

log = logging.getLogger(__name__)

__all__ = ["DEFAULT_ENTITY", "DEFAULT_SETTINGS", "AdvancingClock", "Broker"]

#: names a quota entity type's default in :meth:`Broker.set_quota` (``--entity-default``)
DEFAULT_ENTITY = "<default>"


def _quota_entity(user: str | None, client_id: str | None, ip: str | None) -> dict[str, str | None]:
    entity: dict[str, str | None] = {}
    for entity_type, name in (("user", user), ("client-id", client_id), ("ip", ip)):
        if name is not None:
            entity[entity_type] = None if name == DEFAULT_ENTITY else name
    return entity


#: Test-friendly defaults, by Kafka's property names; every one can be overridden.
#:
#: * ``group.min.session.timeout.ms`` 100 (Kafka: 6,000) so a test can use short sessions;
#: * ``group.initial.rebalance.delay.ms`` 300 (Kafka: 3,000): members started together still
#:   form one generation (at 0 the first member forms generation 1 alone and the next one's
#:   join revokes it), while an empty group takes 0.3 s instead of 3 s to form. The figures
#:   behind it are in docs/testing.md ("The initial rebalance delay"); ``advance()`` ends the
#:   delay at once when a test wants it over sooner;
#: * ``offsets.topic.num.partitions`` 1 (Kafka: 50): fewer files to create at start-up; one
#:   partition holds every group's offsets and events.
DEFAULT_SETTINGS: dict[str, str] = {
    "group.min.session.timeout.ms": "100",
    "group.initial.rebalance.delay.ms": "300",
    "offsets.topic.num.partitions": "1",
}


class AdvancingClock:
    """The system clock plus an offset that :meth:`advance` grows (time never goes back)."""

    def __init__(self) -> None:
        self._offset_ms = 0
        self._lock = threading.Lock()

    @property
    def offset_ms(self) -> int:
        return self._offset_ms

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self._offset_ms

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("time does not go backwards")
        with self._lock:
            self._offset_ms += ms
        return self.now_ms()


class Broker:
    """A groupcoord broker for tests: ``with Broker() as broker: ... broker.bootstrap``.

    Args:
        settings: broker properties by Kafka's names (``{"group.initial.rebalance.delay.ms":
            0}``), over :data:`DEFAULT_SETTINGS`.
        data_dir: where the data lives; kept on exit. A temporary directory (removed on exit)
            if not given.
        subprocess: run the broker in a child process, ``python -m groupcoord.testing`` (see
            the module docstring); every method works the same.
        port: the port to listen on (0: a free one; :meth:`restart` keeps the one bound).
        log_level: the level of the broker's log records kept for :meth:`log_tail`.
        security_protocol: the listener's protocol (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL);
            with TLS a throwaway CA (:attr:`ca`, ``trustme``) signs the broker's certificate.
        users: SASL users and passwords: PLAIN's (the listener's JAAS line) and SCRAM-SHA-256/512
            credentials in the data dir.
        ssl_client_auth: ``ssl.client.auth`` (``none``, ``requested``, ``required``).
        acls: turn the authorizer on (``authorizer.class.name``, Kafka's StandardAuthorizer);
            :meth:`add_acl` grants, ``super_users`` (``"User:admin"`` ...) may do everything.

    :meth:`client_config` gives each client's settings to connect.
    """

    def __init__(
        self,
        settings: Mapping[str, object] | None = None,
        *,
        data_dir: str | os.PathLike[str] | None = None,
        subprocess: bool = False,
        port: int = 0,
        log_level: int = logging.INFO,
        start_timeout: float = 30.0,
        security_protocol: str = "PLAINTEXT",
        users: Mapping[str, str] | None = None,
        ssl_client_auth: str = "none",
        acls: bool = False,
        super_users: Sequence[str] = (),
    ) -> None:
        self.security_protocol = security_protocol.upper()
        self.users = dict(users or {})
        #: the throwaway CA of a TLS listener (``trustme``); None without TLS
        self.ca: TestCA | None = TestCA() if self.security_protocol in ("SSL", "SASL_SSL") else None
        self.settings: dict[str, str] = {
            **DEFAULT_SETTINGS,
            **broker_settings(
                self.security_protocol, ca=self.ca, plain_users=self.users, client_auth=ssl_client_auth
            ),
            **(
                {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": ";".join(super_users)}
                if acls
                else {}
            ),
            **{k: _prop(v) for k, v in (settings or {}).items()},
        }
        self.subprocess = subprocess
        self.port = port
        self.host = "127.0.0.1"
        self.clock = AdvancingClock()
        self._injector = FaultInjector()
        self.faults: FaultsView = RemoteFaults(self._remote) if subprocess else self._injector
        self.start_timeout = start_timeout
        self.log_level = log_level
        self._own_dir = data_dir is None
        self._data_dir: Path | None = None if data_dir is None else Path(data_dir)
        self._tmp: str | None = None
        self._tail = LogTail(2000)
        # in-process
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._app: BrokerApp | None = None
        self._stop_event: asyncio.Event | None = None
        self._started = threading.Event()
        self._start_error: BaseException | None = None
        # subprocess
        self._child: BrokerProcess | None = None
        self._log_path: Path | None = None
        self._metrics_url: str | None = None
        self._console_url: str | None = None
        self.starts = 0
        BrokerConfig.from_properties(self._properties())  # reject bad settings now, in the test

    # ------------------------------------------------------------------ lifecycle
    @property
    def bootstrap(self) -> str:
        """``"127.0.0.1:PORT"``, for ``bootstrap.servers``."""
        if not self.running:
            raise RuntimeError("the broker is not running")
        return f"{self.host}:{self.port}"

    @property
    def wire_address(self) -> str:
        """The one ``host:port`` the observation helpers talk to (a running broker's)."""
        return self.bootstrap

    @property
    def metrics_url(self) -> str | None:
        """``"http://127.0.0.1:PORT/metrics"``, the Prometheus endpoint of ``metrics.listen``
        (the port it bound, if given as 0); None when ``metrics.listen`` is not set. A wildcard
        host (``:PORT``, ``0.0.0.0``) is named as 127.0.0.1 (``::``: as ::1)."""
        if not self.running:
            raise RuntimeError("the broker is not running")
        return self._metrics_url

    @property
    def console_url(self) -> str | None:
        """``"http://127.0.0.1:PORT/"``, the web console of ``console.listen`` (the port it
        bound, if given as 0); None when ``console.listen`` is not set, or when the broker runs
        in a subprocess (the console is served there, but its address is not reported)."""
        if not self.running:
            raise RuntimeError("the broker is not running")
        return self._console_url

    @property
    def data_dir(self) -> Path:
        if self._data_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="groupcoord-test-")
            self._data_dir = Path(self._tmp) / "data"
        return self._data_dir

    @property
    def pid(self) -> int | None:
        """The child process's PID with ``subprocess=True`` while it runs; None otherwise."""
        return None if self._child is None else self._child.proc.pid

    @property
    def running(self) -> bool:
        return self._child is not None or self._app is not None

    def __enter__(self) -> Broker:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> Broker:
        if self.running:
            raise RuntimeError("already running")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._write_scram_users()
        if self.subprocess:
            self._start_process()
        else:
            self._start_thread()
        self.starts += 1
        return self

    def stop(self, *, hard: bool = False) -> None:
        """Stop the broker; ``hard=True`` as in a crash: no flush, no clean-shutdown marker."""
        if self.subprocess:
            self._stop_process(hard)
        else:
            self._stop_thread(hard)

    def restart(self, *, hard: bool = False) -> None:
        """Stop and start again on the same port with the same data (``hard``: see :meth:`stop`)."""
        self.stop(hard=hard)
        self.start()

    def close(self) -> None:
        """Stop (if running) and remove the temporary data dir, if this broker made it."""
        try:
            if self.running:
                self.stop()
        finally:
            if self._own_dir and self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
                self._tmp = None
                self._data_dir = None

    # ------------------------------------------------------------------ hooks (Cluster's)
    def _app_options(self) -> dict[str, Any]:
        """Further keyword arguments of the ``BrokerApp``."""
        return {}

    def _started_app(self, app: BrokerApp) -> None:
        """The in-process app is listening."""

    def _process_args(self) -> list[str]:
        """Further arguments of ``python -m groupcoord.testing``."""
        return []

    def _listening(self, addresses: str) -> None:
        """The child's listening line (``host:port``)."""
        self.port = int(addresses.rsplit(":", 1)[1])

    def _properties(self) -> dict[str, str]:
        return {**self.settings, "listeners": f"{self.security_protocol}://{self.host}:{self.port}"}

    def client_config(
        self,
        user: str | None = None,
        *,
        client: str = "confluent",
        mechanism: str = "PLAIN",
        password: str | None = None,
        cert: str | None = None,
    ) -> dict[str, Any]:
        """Settings for ``client`` (``confluent``, ``kafka-python``, ``aiokafka``) to connect
        as ``user`` (SASL; its password from ``users`` unless given) and/or with a client
        certificate whose CN is ``cert`` (TLS, made by :attr:`ca`)."""
        return client_config(
            bootstrap=self.bootstrap,
            protocol=self.security_protocol,
            client=client,
            ca=self.ca,
            user=user,
            password=password if password is not None else self.users.get(user or ""),
            mechanism=mechanism,
            cert_name=cert,
        )

    def add_acl(
        self,
        principal: str,
        operation: str,
        resource_type: str,
        name: str,
        *,
        pattern: str = "LITERAL",
        permission: str = "ALLOW",
        host: str = "*",
    ) -> None:
        """Add one ACL binding (``add_acl("User:bob", "READ", "TOPIC", "orders")``), in effect
        for the next request. Names are Kafka's (``AclOperation``, ``ResourceType``,
        ``PatternType``, ``AclPermissionType``)."""
        from groupcoord.broker.acl import AclBinding, Op, Pattern, Permission, Resource

        binding = AclBinding(
            resource_type=Resource[resource_type.upper()],
            resource_name=name,
            pattern_type=Pattern[pattern.upper()],
            principal=principal,
            host=host,
            operation=Op[operation.upper()],
            permission=Permission[permission.upper()],
        )
        problem = binding.validate()
        if problem is not None:
            raise ValueError(problem)
        app = self._app
        if app is None or self._loop is None:
            raise RuntimeError("add_acl needs a running in-process broker (use the CreateAcls API otherwise)")
        store = app.broker.authorizer.store
        asyncio.run_coroutine_threadsafe(call_soon(lambda: store.add([binding])), self._loop).result(30)

    def remove_acls(self, principal: str | None = None) -> None:
        """Remove every ACL binding (of ``principal``, if given)."""
        app = self._app
        if app is None or self._loop is None:
            raise RuntimeError(
                "remove_acls needs a running in-process broker (use the DeleteAcls API otherwise)"
            )
        store = app.broker.authorizer.store
        gone = [b for b in store.bindings if principal is None or b.principal == principal]
        asyncio.run_coroutine_threadsafe(call_soon(lambda: store.remove(gone)), self._loop).result(30)

    def _write_scram_users(self) -> None:
        """The SCRAM credentials of :attr:`users`, salted into the data dir before a start."""
        if not self.users or not self.security_protocol.startswith("SASL_"):
            return
        from groupcoord.broker.scram import ScramStore

        store = ScramStore(self.data_dir)
        for user, password in self.users.items():
            for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
                if store.get(mechanism, user) is None:
                    store.set_password(user, mechanism, password)
        store.save()

    # ------------------------------------------------------------------ in-process
    def _start_thread(self) -> None:
        config = BrokerConfig.from_properties(self._properties())
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._started.clear()
        self._start_error = None
        capture_logs(self._tail, self.log_level)
        thread = threading.Thread(
            target=self._serve, args=(config,), name=f"groupcoord-broker-{self.port}", daemon=True
        )
        self._thread = thread
        thread.start()
        if not self._started.wait(self.start_timeout):
            release_logs(self._tail)
            raise RuntimeError(f"the broker did not start within {self.start_timeout}s")
        if self._start_error is not None:
            thread.join(5)
            release_logs(self._tail)
            raise RuntimeError(f"the broker did not start: {self._start_error}") from self._start_error

    def _serve(self, config: BrokerConfig) -> None:
        from groupcoord.app import BrokerApp

        ident = threading.get_ident()
        self._tail.thread_ids.add(ident)
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)

        async def main() -> None:
            app = BrokerApp(
                config=config,
                data_dir=self.data_dir,
                clock=self.clock,
                interceptor=self._injector,
                **self._app_options(),
            )
            try:
                host, port = await app.start()
            except BaseException:
                await app.close()
                raise
            self._injector.response_type = lambda k, v: app.dispatcher.registry.lookup(k, v).response_type
            self._injector.sever = lambda connection_id: sever(app, connection_id)
            self._stop_event = asyncio.Event()
            self.port = port
            self._metrics_url = None if app.metrics is None else metrics_url(app.metrics.address)
            self._console_url = None if app.console is None else console_url(app.console.address)
            self._app = app
            self._started_app(app)
            log.info("test broker listening on %s:%d (data %s)", host, port, self.data_dir)
            self._started.set()
            try:
                await self._stop_event.wait()
            finally:
                await app.stop()

        task = loop.create_task(main())
        crashed = False
        try:
            loop.run_until_complete(task)
        except RuntimeError as exc:
            if "stopped before" not in str(exc):
                self._start_error = exc
            else:
                crashed = True
        except BaseException as exc:
            self._start_error = exc
        finally:
            app, self._app = self._app, None
            if crashed:
                # A crashed process's sockets are closed by the kernel: the metrics
                # endpoint's too (its own thread, outside the loop); its fsync thread
                # dies with it, flushing nothing; nothing else is closed.
                close_metrics(app)
                abandon_flusher(app)
            self._started.set()
            if crashed:
                CRASHED.append((loop, task))
            else:
                finish_loop(loop)
            self._tail.thread_ids.discard(ident)

    def _stop_thread(self, hard: bool) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None or self._app is None:
            return
        if hard:
            loop.call_soon_threadsafe(crash, self._app, loop)
        else:
            stop_event = self._stop_event
            assert stop_event is not None
            loop.call_soon_threadsafe(stop_event.set)
        thread.join(60)
        if thread.is_alive():
            raise RuntimeError("the broker thread did not stop within 60 s")
        release_logs(self._tail)
        self._thread = None
        self._loop = None

    def _on_loop(self, fn: Callable[[], Any], timeout: float = 30.0) -> Any:
        """Run ``fn`` on the broker's loop and return its result (a coroutine is awaited)."""
        loop = self._loop
        if loop is None or self._app is None:
            raise RuntimeError("time control and fault injection need a running in-process broker")

        async def call() -> Any:
            result = fn()
            if asyncio.iscoroutine(result):
                result = await result
            return result

        fut: concurrent.futures.Future[Any] = asyncio.run_coroutine_threadsafe(call(), loop)
        return fut.result(timeout)

    # ------------------------------------------------------------------ subprocess
    def _start_process(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        argv = process_argv(
            port=self.port,
            data_dir=self.data_dir,
            log_level=self.log_level,
            security_protocol=self.security_protocol,
            settings=self.settings,
            extra=self._process_args(),
        )
        self._log_path = log_path(self.data_dir)
        child = BrokerProcess.start(argv, self._log_path, self.start_timeout)
        self._child = child
        self._listening(child.listening)
        self._metrics_url = child.metrics_url

    def _stop_process(self, hard: bool) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.stop(hard)

    def _remote(self, op: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``op`` on the child's broker (see :mod:`groupcoord.testing.control`)."""
        if self._child is None:
            raise RuntimeError("the broker process is not running")
        return self._child.call(op, *args, **kwargs)

    # ------------------------------------------------------------------ time
    def advance(self, seconds: float) -> None:
        """Move the broker's clock forward and fire every timer now due (module docstring)."""
        if seconds < 0:
            raise ValueError("time only moves forward")
        if self.subprocess:
            self._remote("advance", seconds)
            return
        self.clock.advance(round(seconds * 1000))

        async def fire() -> None:
            assert self._app is not None
            timers = self._app.broker.timers
            # Timers that complete writes may arm further timers due now: fire until quiet.
            for _ in range(5):
                timers.run_due()
                for _ in range(3):
                    await asyncio.sleep(0)

        self._on_loop(fire)

    # ------------------------------------------------------------------ faults
    def fail_next(
        self,
        api: str | int,
        error: str | int | ErrorCode,
        count: int = 1,
        *,
        group: str | None = None,
        client_id: str | None = None,
    ) -> None:
        """Answer the next ``count`` matching requests with ``error`` (Kafka's names or numbers)."""
        if self.subprocess:
            self._remote("fail_next", api, _plain(error), count, group=group, client_id=client_id)
            return
        self._injector.fail_next(api, error, count, group=group, client_id=client_id)

    def delay(
        self,
        api: str | int,
        seconds: float,
        count: int | None = None,
        *,
        group: str | None = None,
        client_id: str | None = None,
    ) -> None:
        """Hold the answers of matching requests for ``seconds`` (of wall time); all of them
        until :meth:`clear_faults` unless ``count`` is given."""
        if self.subprocess:
            self._remote("delay", api, seconds, count, group=group, client_id=client_id)
            return
        self._injector.delay(api, seconds, count, group=group, client_id=client_id)

    def drop_heartbeats(self, group: str, member_or_client_id: str) -> None:
        """Make one member's heartbeats vanish (by member id, client id or group instance id):
        its session runs out by the protocol's own timers while the client, answered as if all
        were well, keeps believing it is a member (see ``groupcoord.testing.faults``)."""
        if self.subprocess:
            self._remote("drop_heartbeats", group, member_or_client_id)
            return
        self._injector.drop_heartbeats(group, member_or_client_id)

    def disconnect(
        self,
        client_id: str | None = None,
        *,
        api: str | int | None = None,
        count: int = 1,
        group: str | None = None,
    ) -> int:
        """Sever connections. Without ``api``: now, those of ``client_id`` (every connection if
        None); returns how many. With ``api``: the connection of each of the next ``count``
        requests of that API (matching ``client_id`` and ``group`` if given) is severed when
        the request arrives, instead of handling it; returns 0."""
        if self.subprocess:
            return int(self._remote("disconnect", client_id, api=api, count=count, group=group))
        if api is not None:
            self._injector.disconnect_next(api, count, group=group, client_id=client_id)
            return 0
        if group is not None:
            raise ValueError("group= needs api=: a connection belongs to no group")
        wanted = self._injector.connections_of(client_id)

        def sever() -> int:
            n = 0
            assert self._app is not None
            live = [conn for server in self._app.servers for conn in server.connections]
            self._injector.retain_connections({conn.connection_id for conn in live})
            for conn in live:
                if client_id is None or conn.connection_id in wanted:
                    conn.abort("disconnected by the test")
                    n += 1
            return n

        severed: int = self._on_loop(sever)
        return severed

    def clear_faults(self) -> None:
        """Remove every injected failure, disconnection, delay and dropped heartbeat."""
        if self.subprocess:
            self._remote("clear_faults")
            return
        self._injector.clear()

    clear = clear_faults

    # ------------------------------------------------------------------ observation
    def describe_group(self, group: str) -> GroupView:
        return wire.describe(self.wire_address, group)

    def committed(self, group: str) -> dict[TopicPartition, int]:
        return wire.committed(self.wire_address, group)

    def events(self, group: str) -> list[GroupEvent]:
        return wire.events(self.wire_address, group)

    def wait_for_group(
        self,
        group: str,
        *,
        state: str | None = "Stable",
        members: int | None = None,
        generation_at_least: int | None = None,
        timeout: float = 30.0,
    ) -> GroupView:
        """Poll until the group is in ``state`` with ``members`` members and at least that
        generation (a consumer group's: its group epoch); the description that satisfied it
        (AssertionError with the last one if ``timeout`` passes)."""
        deadline = time.monotonic() + timeout
        last: GroupView | None = None
        while True:
            with contextlib.suppress(Exception):
                last = self.describe_group(group)
                generation = last.group_epoch if last.group_type == "consumer" else last.generation
                if (
                    (state is None or last.state == state)
                    and (members is None or len(last.members) == members)
                    and (
                        generation_at_least is None
                        or (generation is not None and generation >= generation_at_least)
                    )
                ):
                    return last
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"group {group!r} did not reach state={state} members={members} "
                    f"generation>={generation_at_least} within {timeout}s; last: {last}"
                )
            time.sleep(0.05)

    def create_topic(self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None) -> None:
        wire.create_topic(self.wire_address, name, partitions, dict(configs or {}))

    def produce(
        self,
        topic: str,
        values: Iterable[bytes | str | None],
        *,
        key: bytes | str | None = None,
        partition: int = 0,
        headers: Sequence[tuple[str, bytes | None]] = (),
    ) -> list[int]:
        """Append ``values`` to one partition (acks=all); their offsets."""
        return wire.produce(self.wire_address, topic, values, key=key, partition=partition, headers=headers)

    def records(self, topic: str, partition: int | None = None) -> list[Record]:
        return wire.records(self.wire_address, topic, partition)

    # ------------------------------------------------------------------ client quotas
    def set_quota(
        self,
        *,
        user: str | None = None,
        client_id: str | None = None,
        ip: str | None = None,
        **quotas: float | None,
    ) -> None:
        """Set (or, with None, remove) client quotas of one entity, over the wire
        (AlterClientQuotas), as ``kafka-configs.sh --alter --add-config`` would.

        The entity is ``user``, ``client_id`` (alone or both) or ``ip``; :data:`DEFAULT_ENTITY`
        names a type's default (``kafka-configs.sh --entity-default``). The quotas are Kafka's:
        ``producer_byte_rate``, ``consumer_byte_rate`` (bytes/s), ``request_percentage``,
        ``connection_creation_rate`` (of an ``ip``). Without SASL every client's user is
        ``ANONYMOUS``. A refused change raises ``AdminError`` with Kafka's message::

            broker.set_quota(client_id="slow-producer", producer_byte_rate=1_000_000)
            broker.set_quota(client_id="slow-producer", producer_byte_rate=None)  # removed
        """
        entity = _quota_entity(user, client_id, ip)
        add = {k: float(v) for k, v in quotas.items() if v is not None}
        delete = [k for k, v in quotas.items() if v is None]
        with AdminClient(self.wire_address, client_id="groupcoord-testing") as admin:
            admin_quotas.alter_quotas(admin, entity, add=add, delete=delete)

    def quotas(
        self, *, user: str | None = None, client_id: str | None = None, ip: str | None = None
    ) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
        """The configured quotas of the entities matching the filter (DescribeClientQuotas;
        no filter: every entity), keyed by entity ((type, name or None) pairs)."""
        entity = _quota_entity(user, client_id, ip)
        with AdminClient(self.wire_address, client_id="groupcoord-testing") as admin:
            return dict(admin_quotas.describe_quotas(admin, entity or None))

    def log_tail(self, lines: int = 50) -> str:
        """The broker's newest log lines (in-process: its thread's records; subprocess: stderr)."""
        if self.subprocess:
            return log_tail(self._log_path, lines)
        return "\n".join(list(self._tail.lines)[-lines:])


def _plain(error: str | int | ErrorCode) -> str | int:
    """An error as JSON carries it (an ErrorCode by its number)."""
    return int(error) if isinstance(error, int) else error


def _prop(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
