"""The composition root: the one place that wires server, broker, storage and coordinator runtime.

Every other layer imports only downward (``docs/architecture.md``; checked by
``tests/test_import_layers.py``). This module holds what needs them all:

* :func:`routes`, the one route table: :class:`~groupcoord.protocol.api_keys.ApiKey` ->
  versions and handler, for the broker's APIs and the group coordinator's (whose handlers,
  in :mod:`groupcoord.runtime.group_handlers`, are bound to the group runtime here). ApiVersions
  advertises exactly these ranges. Version ranges cover what confluent-kafka, kafka-python
  and aiokafka send (reference §3), and each starts where Kafka 3.9's does, for older clients
  (the versions Kafka 4.0 removed: ``protocol.old_versions``, ``docs/protocol-coverage.md``).
* :class:`BrokerApp`, which opens the broker on its data dir, puts the coordinator runtime on
  it, builds the dispatcher and the TCP server, and starts and stops them in order.
* :func:`run` / :func:`run_blocking`, what ``groupcoord serve`` runs.

Two parts of the wiring have their own modules beside this one: ``app_security`` (each listener's
TLS and SASL, the console's users, read from the configuration) and ``app_cluster`` (several
brokers in one process).

To add an API: write its handler (``handle(broker, ctx, request) -> response | None |
awaitable``, see :mod:`groupcoord.handling`) and add one :class:`~groupcoord.handling.Route`
line to :func:`routes`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib.metadata
import itertools
import logging
import os
import signal
import socket
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from groupcoord import native
from groupcoord.app_cluster import (
    CLUSTER_ROUTES,
    ClusterNodes,
    build_cluster,
    follow_leadership,
    node_interceptor,
    racks_of,
)
from groupcoord.app_security import console_users, listener_security
from groupcoord.broker import (
    acl_api,
    alter_configs,
    api_versions,
    authz,
    client_quotas,
    delete_records,
    describe_cluster,
    describe_configs,
    fetch,
    init_producer_id,
    list_offsets,
    metadata,
    produce,
    topics,
)
from groupcoord.broker import scram as scram_api
from groupcoord.broker.acl import Authorizer
from groupcoord.broker.cluster import ClusterMetadata
from groupcoord.broker.offsets_v0 import offset_commit_v0, offset_fetch_v0, old_or
from groupcoord.broker.state import Broker
from groupcoord.clock import Clock, SystemClock
from groupcoord.config import BrokerConfig
from groupcoord.config.listeners import ListenerSpec
from groupcoord.errors import ConfigError, DataDirError
from groupcoord.handling import Interceptor, Route
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.runtime import group_handlers as groups
from groupcoord.runtime import txn_handlers as txn
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.runtime.txn_runtime import TxnRuntime
from groupcoord.server import sasl
from groupcoord.server.app import KafkaServer
from groupcoord.server.client_quotas import ClientQuotas, quota_user
from groupcoord.server.connection_quotas import ConnectionQuotas
from groupcoord.server.dispatch import Dispatcher
from groupcoord.server.serve import event_loop_runner, settle, tune_malloc
from groupcoord.server.session import ListenerSecurity
from groupcoord.storage.manager import PartitionFilesError

if TYPE_CHECKING:  # imported when configured (BrokerApp.__init__): neither is needed to start
    from groupcoord.console.server import BrokerConsole
    from groupcoord.metrics.endpoint import BrokerMetrics

log = logging.getLogger(__name__)

K = ApiKey


def _table(routes: Iterable[Route[Broker]]) -> Mapping[ApiKey, Route[Broker]]:
    table: dict[ApiKey, Route[Broker]] = {}
    for route in routes:
        if route.api_key in table:
            raise ValueError(f"{route.api_key.name} routed twice")
        table[route.api_key] = route
    return MappingProxyType(table)


def routes(
    group_runtime: GroupRuntime | None, txn_runtime: TxnRuntime | None = None
) -> Mapping[ApiKey, Route[Broker]]:
    """The one route table: the broker's APIs and the coordinators', the group APIs' handlers
    bound to ``group_runtime`` and the transaction APIs' to ``txn_runtime``. Without a group
    runtime the table leaves out every API of :data:`GROUP_APIS`; without a transaction
    runtime, those of :data:`TXN_APIS` (and InitProducerId serves idempotent producers only).
    """
    base = _ROUTES if txn_runtime is None else tuple(_verifying(r, txn_runtime) for r in _ROUTES)
    if group_runtime is None:
        return _table([*(r for r in base if r.api_key not in GROUP_APIS), *_txn_routes(txn_runtime)])
    return _table([*base, *_group_routes(group_runtime, txn_runtime), *_txn_routes(txn_runtime)])


def _verifying(route: Route[Broker], rt: TxnRuntime) -> Route[Broker]:
    """Produce verifies transactional batches with the transaction runtime (KIP-890 part 1)."""
    if route.api_key is not K.PRODUCE:
        return route
    return dataclasses.replace(route, handler=partial(produce.handle, verify_txn=rt.verify_partition))


#: The routes whose handlers need no runtime. ``overlap``: requests of one class may wait
#: alongside each other on a connection (the rule is in ``server.dispatch``).
_ROUTES: tuple[Route[Broker], ...] = (
    # Produce: appends are done (and readable) before the handler returns; only the fsync
    # of acks=-1 is awaited, so pipelined produces may wait for their fsyncs together.
    Route(api_key=K.PRODUCE, min_version=0, max_version=10, handler=produce.handle, overlap="produce"),
    Route(api_key=K.FETCH, min_version=0, max_version=16, handler=fetch.handle),
    Route(api_key=K.LIST_OFFSETS, min_version=0, max_version=9, handler=list_offsets.handle),
    Route(api_key=K.METADATA, min_version=0, max_version=12, handler=metadata.handle),
    Route(api_key=K.FIND_COORDINATOR, min_version=0, max_version=6, handler=groups.find_coordinator),
    Route(api_key=K.API_VERSIONS, min_version=0, max_version=4, handler=api_versions.handle),
    Route(api_key=K.CREATE_TOPICS, min_version=0, max_version=7, handler=topics.create_topics),
    Route(api_key=K.DELETE_TOPICS, min_version=0, max_version=6, handler=topics.delete_topics),
    Route(api_key=K.DESCRIBE_CONFIGS, min_version=0, max_version=4, handler=describe_configs.handle),
    Route(api_key=K.ALTER_CONFIGS, min_version=0, max_version=2, handler=alter_configs.alter_configs),
    Route(
        api_key=K.INCREMENTAL_ALTER_CONFIGS,
        min_version=0,
        max_version=1,
        handler=alter_configs.incremental_alter_configs,
    ),
    Route(api_key=K.DELETE_RECORDS, min_version=0, max_version=2, handler=delete_records.handle),
    Route(api_key=K.CREATE_PARTITIONS, min_version=0, max_version=3, handler=topics.create_partitions),
    Route(api_key=K.DESCRIBE_CLUSTER, min_version=0, max_version=1, handler=describe_cluster.handle),
    # SASL: the exchange itself is the connection's (server.sasl); v0 of the handshake, whose
    # tokens follow without a Kafka header, is not served.
    Route(api_key=K.SASL_HANDSHAKE, min_version=1, max_version=1, handler=sasl.sasl_handshake),
    Route(api_key=K.SASL_AUTHENTICATE, min_version=0, max_version=2, handler=sasl.sasl_authenticate),
    Route(
        api_key=K.DESCRIBE_USER_SCRAM_CREDENTIALS,
        min_version=0,
        max_version=0,
        handler=scram_api.describe_user_scram_credentials,
    ),
    Route(
        api_key=K.ALTER_USER_SCRAM_CREDENTIALS,
        min_version=0,
        max_version=0,
        handler=scram_api.alter_user_scram_credentials,
    ),
    Route(api_key=K.DESCRIBE_ACLS, min_version=1, max_version=3, handler=acl_api.describe_acls),
    Route(api_key=K.CREATE_ACLS, min_version=1, max_version=3, handler=acl_api.create_acls),
    Route(api_key=K.DELETE_ACLS, min_version=1, max_version=3, handler=acl_api.delete_acls),
    Route(
        api_key=K.DESCRIBE_CLIENT_QUOTAS,
        min_version=0,
        max_version=1,
        handler=client_quotas.describe_client_quotas,
    ),
    Route(
        api_key=K.ALTER_CLIENT_QUOTAS, min_version=0, max_version=1, handler=client_quotas.alter_client_quotas
    ),
)


def _group_routes(rt: GroupRuntime, txn: TxnRuntime | None = None) -> list[Route[Broker]]:
    """The group coordinator's APIs, each handler bound to the runtime it calls (TxnOffsetCommit
    also to the transaction runtime, which verifies the producer's transaction)."""
    return [
        # OffsetCommit: pipelined commits on one connection may wait for their writes
        # together; anything else behind them waits for all.
        Route(
            api_key=K.OFFSET_COMMIT,
            min_version=0,
            max_version=9,
            handler=old_or(offset_commit_v0, partial(groups.offset_commit, rt)),
            overlap="offset-commit",
        ),
        Route(
            api_key=K.OFFSET_FETCH,
            min_version=0,
            max_version=9,
            handler=old_or(offset_fetch_v0, partial(groups.offset_fetch, rt)),
        ),
        Route(api_key=K.JOIN_GROUP, min_version=0, max_version=9, handler=partial(groups.join_group, rt)),
        Route(api_key=K.HEARTBEAT, min_version=0, max_version=4, handler=partial(groups.heartbeat, rt)),
        Route(api_key=K.LEAVE_GROUP, min_version=0, max_version=5, handler=partial(groups.leave_group, rt)),
        Route(api_key=K.SYNC_GROUP, min_version=0, max_version=5, handler=partial(groups.sync_group, rt)),
        Route(
            api_key=K.DESCRIBE_GROUPS,
            min_version=0,
            max_version=5,
            handler=partial(groups.describe_groups, rt),
        ),
        Route(api_key=K.LIST_GROUPS, min_version=0, max_version=5, handler=partial(groups.list_groups, rt)),
        Route(
            api_key=K.DELETE_GROUPS, min_version=0, max_version=2, handler=partial(groups.delete_groups, rt)
        ),
        Route(
            api_key=K.OFFSET_DELETE, min_version=0, max_version=0, handler=partial(groups.offset_delete, rt)
        ),
        Route(
            api_key=K.TXN_OFFSET_COMMIT,
            min_version=0,
            max_version=4,
            handler=partial(groups.txn_offset_commit, rt, txn),
        ),
        *_consumer_group_routes(rt),
    ]


def _consumer_group_routes(rt: GroupRuntime) -> list[Route[Broker]]:
    """KIP-848's APIs: advertised whatever ``group.coordinator.rebalance.protocols`` says, as
    Kafka 4.x does; with ``consumer`` left out they answer UNSUPPORTED_VERSION."""
    return [
        Route(
            api_key=K.CONSUMER_GROUP_HEARTBEAT,
            min_version=0,
            max_version=1,
            handler=partial(groups.consumer_group_heartbeat, rt),
        ),
        Route(
            api_key=K.CONSUMER_GROUP_DESCRIBE,
            min_version=0,
            max_version=1,
            handler=partial(groups.consumer_group_describe, rt),
        ),
    ]


def _txn_routes(rt: TxnRuntime | None) -> list[Route[Broker]]:
    """InitProducerId, and with a transaction runtime the transaction APIs, bound to it."""
    if rt is None:
        return [
            Route(api_key=K.INIT_PRODUCER_ID, min_version=0, max_version=4, handler=init_producer_id.handle)
        ]
    return [
        Route(
            api_key=K.INIT_PRODUCER_ID,
            min_version=0,
            max_version=4,
            handler=partial(txn.init_producer_id, rt),
        ),
        Route(
            api_key=K.ADD_PARTITIONS_TO_TXN,
            min_version=0,
            max_version=3,
            handler=partial(txn.add_partitions, rt),
        ),
        Route(
            api_key=K.ADD_OFFSETS_TO_TXN,
            min_version=0,
            max_version=3,
            handler=partial(txn.add_offsets_to_txn, rt),
        ),
        Route(api_key=K.END_TXN, min_version=0, max_version=4, handler=partial(txn.end_txn, rt)),
        Route(
            api_key=K.DESCRIBE_TRANSACTIONS,
            min_version=0,
            max_version=0,
            handler=partial(txn.describe_txns, rt),
        ),
        Route(api_key=K.LIST_TRANSACTIONS, min_version=0, max_version=0, handler=partial(txn.list_txns, rt)),
    ]


#: The group coordinator's APIs: served only where the coordinator runtime is installed.
GROUP_APIS = frozenset(
    {
        K.OFFSET_COMMIT,
        K.OFFSET_FETCH,
        K.FIND_COORDINATOR,
        K.JOIN_GROUP,
        K.HEARTBEAT,
        K.LEAVE_GROUP,
        K.SYNC_GROUP,
        K.DESCRIBE_GROUPS,
        K.LIST_GROUPS,
        K.DELETE_GROUPS,
        K.OFFSET_DELETE,
        K.TXN_OFFSET_COMMIT,
        K.CONSUMER_GROUP_HEARTBEAT,
        K.CONSUMER_GROUP_DESCRIBE,
    }
)

#: The transaction coordinator's APIs: served only where its runtime is installed (the broker
#: then accepts transactional ids and batches: :attr:`Broker.serves_transactions`).
TXN_APIS = frozenset(
    {K.ADD_PARTITIONS_TO_TXN, K.ADD_OFFSETS_TO_TXN, K.END_TXN, K.DESCRIBE_TRANSACTIONS, K.LIST_TRANSACTIONS}
)


def build_dispatcher(
    broker: Broker,
    group_runtime: GroupRuntime | None,
    txn_runtime: TxnRuntime | None = None,
    *,
    extra: Iterable[Route[Broker]] = (),
    interceptor: Interceptor | None = None,
) -> Dispatcher[Broker]:
    """The dispatcher over :func:`routes` (the group APIs bound to ``group_runtime``, the
    transaction APIs to ``txn_runtime``, each left out without its runtime) and ``extra``,
    filling ``broker.registry`` (what ApiVersions answers from)."""
    table = routes(group_runtime, txn_runtime)
    served = [*table.values(), *extra]
    if broker.authorizer.enabled:  # authorizer.class.name: each API checks what Kafka's does
        served = [dataclasses.replace(r, handler=authz.guarded(r.api_key, r.handler)) for r in served]
    return Dispatcher(broker, served, registry=broker.registry, interceptor=interceptor)


class StartupError(Exception):
    """The broker cannot start; the message is one line for the operator (the CLI exits 2)."""


def _reason(exc: OSError, subject: Path | None = None) -> str:
    """An OSError as a short phrase: its strerror, and the file it names unless that is ``subject``."""
    if isinstance(exc, socket.gaierror) or not exc.errno:  # a resolver error has no errno's text
        reason = exc.strerror or str(exc)
    else:
        reason = os.strerror(exc.errno)
    if exc.filename is None or (subject is not None and Path(exc.filename) == subject):
        return reason
    return f"{reason}: {exc.filename}"


def _open_broker(config: BrokerConfig, data_dir: Path, clock: Clock) -> Broker:
    try:
        if data_dir.exists() and not data_dir.is_dir():
            raise StartupError(f"data dir {data_dir} is not a directory")
        return Broker.open(config, data_dir, clock)
    except DataDirError as exc:
        raise StartupError(str(exc)) from None
    except PartitionFilesError as exc:
        raise StartupError(f"cannot open data dir {data_dir}: {exc}") from None
    except OSError as exc:
        raise StartupError(f"cannot open data dir {data_dir}: {_reason(exc, data_dir)}") from None


class BrokerApp:
    """One broker process's parts, wired: broker (storage inside), coordinator runtime,
    dispatcher over :func:`routes`, TCP server.

    Every argument is keyword-only, so that seams can be added without breaking callers.

    Args:
        config: the broker's configuration (Kafka property names).
        data_dir: the log directory; created if missing.
        clock: the clock of every protocol deadline (``ManualClock`` in tests); the system
            clock if not given.
        interceptor: called in front of every handler (:data:`groupcoord.handling.Interceptor`),
            e.g. by ``groupcoord.testing`` to inject faults.
        extra_routes: routes served besides :func:`routes` (keys not already routed).

    Raises:
        StartupError: the data dir cannot be opened (one line for the operator).

    Resource handling: the constructor opens the data dir; :meth:`start` listens and starts
    the background work; :meth:`stop` undoes both, and :meth:`close` only the first (for a
    failed start). Call them from one event loop.
    """

    def __init__(
        self,
        *,
        config: BrokerConfig,
        data_dir: Path,
        clock: Clock | None = None,
        interceptor: Interceptor | None = None,
        extra_routes: Iterable[Route[Broker]] = (),
        brokers: int = 1,
        node_ports: Sequence[int] = (),
    ) -> None:
        self.config = config
        #: each node's port of the first listener, if given (a test cluster restarting on the
        #: ports it had); else node i listens on each listener's port + i
        self._node_ports = tuple(node_ports)
        self._connection_ids = itertools.count(1)
        if brokers < 1:
            raise StartupError(f"--brokers must be at least 1, not {brokers}")
        #: the broker nodes this process serves (0..N-1; ``docs/cluster.md``)
        self.node_ids = tuple(range(brokers)) if brokers > 1 else (config.node_id,)
        self.data_dir = data_dir
        self.clock: Clock = clock if clock is not None else SystemClock()
        #: one server per listener (``listeners``), in order; :attr:`server` is the first
        self.listeners = config.listener_specs()
        try:  # the keystores and SASL settings first: a bad one touches no data dir
            securities = [listener_security(config, spec, self._scram_lookup) for spec in self.listeners]
            settings = config.security_settings
            Authorizer.from_settings(
                None,
                settings.get("authorizer.class.name"),
                settings.get("super.users"),
                settings.get("allow.everyone.if.no.acl.found"),
            )
            console_auth = console_users(config, securities, lambda m, u: self.broker.scram.get(m, u))
            config.check_nodes(self.node_ids)
            racks_of(config, brokers)
            if config.default_replication_factor > brokers:
                raise ConfigError(
                    f"bad value for default.replication.factor: {config.default_replication_factor} "
                    f"(at most the number of brokers, {brokers})"
                )
        except (ConfigError, ValueError) as exc:
            raise StartupError(str(exc)) from None
        self.broker = _open_broker(config, data_dir, self.clock)
        self.groups = GroupRuntime(self.broker)
        self.transactions = TxnRuntime(self.broker, on_offsets_marker=self.groups.complete_transaction)
        #: client quotas: configured (broker.quota_store, the APIs) and enforced (server.client_quotas)
        self.client_quotas = self.broker.client_quotas
        self.quota_enforcer = ClientQuotas(
            quota_window_num=config.quota_window_num,
            quota_window_size_seconds=config.quota_window_size_seconds,
            controller_window_num=config.controller_quota_window_num,
            controller_window_size_seconds=config.controller_quota_window_size_seconds,
        )
        self.quota_enforcer.update(self.client_quotas.quotas)
        self.client_quotas.listeners.append(self.quota_enforcer.update)
        enforcer = self.quota_enforcer
        self.broker.fetch_bytes_cap = lambda principal, client_id: enforcer.max_fetch_bytes(
            quota_user(principal), client_id
        )
        clock = self.broker.timers.clock
        self.broker.mutation_quota = lambda ctx: enforcer.mutation_quota(
            quota_user(ctx.principal), ctx.client_id, ctx.api_key, ctx.api_version, clock.now_ms
        )
        #: several brokers in one process (None: one)
        self.cluster: ClusterMetadata | None = None
        if brokers > 1:
            self.cluster = build_cluster(config, self.broker, brokers, data_dir)
            self.broker.cluster = self.cluster
            follow_leadership(self.cluster, self.broker, self.groups, self.transactions)
            interceptor = node_interceptor(self.groups, self.transactions, interceptor)
            extra_routes = [*extra_routes, *CLUSTER_ROUTES]
        self.dispatcher = build_dispatcher(
            self.broker,
            self.groups,
            self.transactions,
            extra=extra_routes,
            interceptor=interceptor,
        )
        #: each node's servers, one per listener (node i listens on each listener's port + i);
        #: one ConnectionQuotas per node for all its listeners: max.connections and the per-IP
        #: counts are each broker's, listener.name.<l>.max.connections each listener's (Kafka's
        #: ConnectionQuotas)
        self.node_servers: dict[int, list[KafkaServer]] = {}
        for i, node in enumerate(self.node_ids):
            quotas = self._connection_quotas()
            own = config.node_listener_specs(node) if brokers > 1 else None  # node.<id>.listeners
            self.node_servers[node] = [
                self._server(
                    spec if own is None else own[j],
                    dataclasses.replace(security, node_id=node),
                    i,
                    quotas,
                    first=j == 0,
                    own=own is not None,
                )
                for j, (spec, security) in enumerate(zip(self.listeners, securities, strict=True))
            ]
        #: every server, the first node's first
        self.servers = [server for node in self.node_ids for server in self.node_servers[node]]
        self.server = self.servers[0]
        #: stopping, starting and moving things between the nodes (``app_cluster.ClusterNodes``)
        self.nodes = (
            ClusterNodes(self.cluster, self.broker, self.groups, self.node_servers)
            if self.cluster is not None
            else None
        )
        #: the Prometheus endpoint, when ``metrics.listen`` is set (its bound address:
        #: ``metrics.address`` after :meth:`start`)
        self.metrics: BrokerMetrics | None = None
        metrics_at = config.metrics_listener()
        if metrics_at is not None:
            from groupcoord.metrics.endpoint import BrokerMetrics  # prometheus_client: only when asked for

            self.metrics = BrokerMetrics(
                broker=self.broker,
                groups=self.groups,
                server=self.server,
                dispatcher=self.dispatcher,
                host=metrics_at.host,
                port=metrics_at.port,
            )
        #: the live web console, when ``console.listen`` is set (its bound address:
        #: ``console.address`` after :meth:`start`)
        self.console: BrokerConsole | None = None
        console_at = config.console_listener()
        if console_at is not None:
            from groupcoord.console.server import BrokerConsole  # the web console: only when asked for

            self.console = BrokerConsole(
                broker=self.broker,
                groups=self.groups,
                host=console_at.host,
                port=console_at.port,
                auth=console_auth if config.console_auth == "basic" else None,
            )

    def _connection_quotas(self) -> ConnectionQuotas:
        """One node's connection limits, shared by all its listeners."""
        config = self.config
        quotas = ConnectionQuotas(
            max_connections=config.max_connections,
            max_connections_per_ip=config.max_connections_per_ip,
            overrides=config.connections_per_ip_overrides(),
            max_connection_creation_rate=config.max_connection_creation_rate,
            quota_window_num=config.quota_window_num,
            quota_window_size_seconds=config.quota_window_size_seconds,
            ip_connection_rate=self.quota_enforcer.ip_connection_rate,
        )
        quotas.listener_max = config.listener_max_connections()
        return quotas

    def _server(
        self,
        spec: ListenerSpec,
        security: ListenerSecurity,
        index: int,
        connection_quotas: ConnectionQuotas,
        *,
        first: bool,
        own: bool = False,
    ) -> KafkaServer:
        """One listener of one node: the ``index``-th node listens on the listener's port + index,
        or, ``own``, on the node's own listener ``spec`` (``node.<id>.listeners``)."""
        config = self.config
        port = spec.port if own else spec.port + index if spec.port else 0
        if first and index < len(self._node_ports):
            port = self._node_ports[index]
        return KafkaServer(
            self.dispatcher,
            host=spec.host or "0.0.0.0",
            port=port,
            max_frame_bytes=config.socket_request_max_bytes,
            connections_max_idle_ms=config.connections_max_idle_ms,
            max_connections=config.max_connections,
            timers=self.broker.timers,
            security=security,
            queued_max_request_bytes=config.queued_max_request_bytes,
            connection_quotas=connection_quotas,
            client_quotas=self.quota_enforcer,
            connection_ids=self._connection_ids,
        )

    async def start(self) -> tuple[str, int]:
        """Listen and start the background work; the bound (host, port).

        Raises:
            StartupError: for what an operator can fix (address in use, unwritable data dir).
        """
        config, broker, server = self.config, self.broker, self.server
        bound: list[tuple[str, int]] = []
        for each in self.servers:
            try:
                bound.append(await each.start())
            except OSError as exc:
                for started in self.servers[: len(bound)]:
                    await started.stop()
                # asyncio's message for a bind failure repeats the address; the errno says it all.
                raise StartupError(f"cannot listen on {each.host}:{each.port}: {_reason(exc)}") from None
        host, port = bound[0]
        advertised = config.advertised_specs()
        for spec, (_h, p) in zip(self.listeners[1:], bound[1 : len(self.listeners)], strict=True):
            given = advertised[spec.name]
            shown = given.host if given.host not in ("0.0.0.0", "::", "") else "127.0.0.1"
            broker.endpoints[spec.name] = (shown, given.port or p)
        if self.metrics is not None:
            try:
                self.metrics.start()
            except OSError as exc:
                await server.stop()
                where = config.metrics_listen
                raise StartupError(f"cannot listen on metrics.listen={where}: {_reason(exc)}") from None
        if self.console is not None:
            try:
                self.console.start()
            except OSError as exc:
                if self.metrics is not None:
                    await self.metrics.stop()
                await server.stop()
                where = config.console_listen
                raise StartupError(f"cannot listen on console.listen={where}: {_reason(exc)}") from None
        try:
            if not config.advertised_listeners:
                broker.advertised_host = host if host not in ("0.0.0.0", "::", "") else "127.0.0.1"
            if broker.advertised_port == 0 or not config.advertised_listeners:
                broker.advertised_port = port
            broker.start_maintenance()
            self.groups.start()  # creates the internal topics in a new data dir
            self.transactions.start()  # replays __transaction_state if there is one
            if self.nodes is not None:
                self.nodes.started(config)
        except (OSError, PartitionFilesError) as exc:
            for each in self.servers:
                await each.stop()
            why = exc.message if isinstance(exc, PartitionFilesError) else _reason(exc, self.data_dir)
            raise StartupError(f"cannot start in data dir {self.data_dir}: {why}") from None
        return host, port

    def _scram_lookup(self, mechanism: str, user: str) -> sasl.ScramCredential | None:
        cred = self.broker.scram.get(mechanism, user)
        if cred is None:
            return None
        return sasl.ScramCredential(
            salt=cred.salt, stored_key=cred.stored_key, server_key=cred.server_key, iterations=cred.iterations
        )

    async def stop(self, grace_s: float = 5.0) -> None:
        """Stop accepting, answer what is in flight, resign the groups, flush, close."""
        # Parked fetches would otherwise hold the drain until their max_wait, and parked
        # joins and syncs until the end of a rebalance.
        if self.metrics is not None:
            await self.metrics.stop()
        if self.console is not None:
            await self.console.stop()
        self.broker.fetch_waiters.wake_all()
        self.groups.resign()
        for server in self.servers:
            await server.stop(grace_s)
        await self.close()

    async def close(self) -> None:
        """Close the coordinator runtime and the broker (after a failed :meth:`start`)."""
        if self.metrics is not None:
            await self.metrics.stop()
        if self.console is not None:
            await self.console.stop()
        await self.groups.close()
        await self.transactions.close()
        await self.broker.close()


async def run(
    config: BrokerConfig,
    data_dir: Path,
    *,
    on_listening: Callable[[str, int], None] | None = None,
    stop: asyncio.Event | None = None,
    extra_routes: Iterable[Route[Broker]] = (),
    brokers: int = 1,
) -> None:
    """Serve until ``stop`` is set (or SIGTERM/SIGINT); :class:`StartupError` if it cannot start."""
    started = time.monotonic()
    app = BrokerApp(config=config, data_dir=data_dir, extra_routes=extra_routes, brokers=brokers)
    try:
        host, port = await app.start()
    except BaseException:
        await app.close()
        raise
    broker = app.broker
    log.info("event loop: %s", event_loop_name(asyncio.get_running_loop()))
    log.info("request path: %s", native.status().describe())
    log.info(
        "listening on %s:%d (cluster %s, node %d, data %s) after %.0f ms",
        host,
        port,
        broker.cluster_id,
        broker.node_id,
        data_dir,
        (time.monotonic() - started) * 1000,
    )
    for node, servers in app.node_servers.items():
        for spec, server in zip(app.listeners, servers, strict=True):
            shown = f"broker {node} " if app.cluster is not None else ""
            log.info("%slistener %s (%s) on %s:%d", shown, spec.name, spec.protocol, server.host, server.port)
    stop_event = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop_event.set)
    if on_listening is not None:
        on_listening(host, port)
    warm = loop.create_task(
        settle(app.dispatcher.registry, app.groups.loaded, lambda: app.server.traffic.bytes_in)
    )
    try:
        await stop_event.wait()
    finally:
        warm.cancel()
        log.info("shutting down: stop accepting, answer in-flight requests, flush, close")
        await app.stop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)
        log.info("stopped")


def event_loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``uvloop <version>`` or ``asyncio (<class>)``: what the broker logs at start and benchmarks record."""
    module = type(loop).__module__.split(".")[0]
    if module == "uvloop":
        return f"uvloop {importlib.metadata.version('uvloop')}"
    return f"{module} ({type(loop).__name__})"


def run_blocking(
    config: BrokerConfig,
    data_dir: Path,
    on_listening: Callable[[str, int], None] | None = None,
    brokers: int = 1,
) -> None:
    """``groupcoord serve``: tune malloc, then :func:`run` on uvloop (or asyncio)."""
    if not tune_malloc():
        log.debug("mallopt not available: default malloc thresholds")
    event_loop_runner()(run(config, data_dir, on_listening=on_listening, brokers=brokers))
