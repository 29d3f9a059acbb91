"""The admin tools' wire client: one connection per broker over ``groupcoord.protocol.client``,
speaking the highest version both sides know of each API.

:class:`AdminClient` holds the bootstrap connection and, on demand, one to each other broker
(the group's coordinator, a partition's leader). :func:`list_offsets` and
:func:`read_partition` (Fetch from the log start to a high watermark, record batches walked by
``groupcoord.formats.batch``) are what ``groupcoord groups``, ``groupcoord topics`` and
``groupcoord.testing`` read the log with. Errors the user must be told are :class:`AdminError`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from typing import Any

from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import BatchHeader, CorruptBatchError, decode_records, iter_batches
from groupcoord.formats.batch import Record as BatchRecord
from groupcoord.protocol.client import WireClient, WireError
from groupcoord.protocol.codec import (
    ApiVersionTable,
    ProtocolDecodeError,
    UnsupportedApiError,
    build_request,
    decode_api_versions,
    request_messages,
)
from groupcoord.protocol.registry import ApiMessages

log = logging.getLogger(__name__)

__all__ = [
    "EARLIEST_TIMESTAMP",
    "LATEST_TIMESTAMP",
    "AdminClient",
    "AdminError",
    "Connection",
    "UsageError",
    "check_error",
    "error_name",
    "list_offsets",
    "read_partition",
]
DEFAULT_BOOTSTRAP = "127.0.0.1:9092"

# API keys and the version ranges this tool can build requests for.
PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 0, 1, 2, 3, 8, 9, 10
DESCRIBE_GROUPS, LIST_GROUPS, API_VERSIONS = 15, 16, 18
CONSUMER_GROUP_DESCRIBE = 69
CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, ALTER_CONFIGS = 19, 20, 32, 33
CREATE_PARTITIONS, DELETE_GROUPS, INCREMENTAL_ALTER_CONFIGS, OFFSET_DELETE = 37, 42, 44, 47
DELETE_RECORDS = 21
_CLIENT_RANGES: dict[int, tuple[int, int]] = {
    PRODUCE: (3, 8),
    OFFSET_COMMIT: (2, 8),
    CREATE_TOPICS: (2, 7),
    DELETE_TOPICS: (1, 5),
    DESCRIBE_CONFIGS: (1, 4),
    ALTER_CONFIGS: (0, 2),
    DELETE_RECORDS: (0, 2),
    CREATE_PARTITIONS: (0, 3),
    DELETE_GROUPS: (0, 2),
    INCREMENTAL_ALTER_CONFIGS: (0, 1),
    OFFSET_DELETE: (0, 0),
    FETCH: (4, 11),
    LIST_OFFSETS: (1, 7),
    METADATA: (1, 9),
    OFFSET_FETCH: (2, 7),
    FIND_COORDINATOR: (0, 3),
    DESCRIBE_GROUPS: (0, 5),
    LIST_GROUPS: (0, 5),
    CONSUMER_GROUP_DESCRIBE: (0, 1),
    48: (0, 1),  # DescribeClientQuotas (admin.quotas)
    49: (0, 1),  # AlterClientQuotas (admin.quotas)
}
LATEST_TIMESTAMP = -1
EARLIEST_TIMESTAMP = -2
_FETCH_MAX_BYTES = 4 << 20


class AdminError(Exception):
    """Something the user must be told: unreachable broker, an error code, a missing API."""


class UsageError(AdminError):
    """A mistake in the command line itself (exit status 2)."""


def _parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise AdminError(f"bad address {address!r}: expected HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


class Connection:
    """One synchronous connection to one broker, speaking whatever versions it negotiated."""

    def __init__(self, host: str, port: int, *, client_id: str, timeout_s: float) -> None:
        self.address = f"{host}:{port}"
        try:
            self._wire = WireClient(host, port, client_id=client_id, timeout_s=timeout_s)
        except WireError as exc:
            raise AdminError(str(exc)) from exc
        self._versions = self._negotiate()

    def close(self) -> None:
        self._wire.close()

    def _roundtrip(self, messages: ApiMessages, fields: dict[str, Any]) -> Any:
        try:
            return self._wire.call_entity(messages, build_request(messages.request_type, fields))
        except WireError as exc:
            raise AdminError(str(exc)) from exc

    def _negotiate(self) -> ApiVersionTable:
        # ApiVersions v0: every broker reads it, and its answer lists every API (the codec's
        # negotiation, as the member client's, with this tool's own version ranges)
        messages = request_messages(API_VERSIONS, 0)
        self._wire.send_entity(messages, build_request(messages.request_type, {}))
        try:
            frame = self._wire.recv_frame()
            table, _ = decode_api_versions(frame, 0, _CLIENT_RANGES)
        except WireError as exc:
            raise AdminError(str(exc)) from exc
        except ProtocolDecodeError as exc:
            raise AdminError(f"{self.address}: {exc}") from exc
        if table is None:  # UNSUPPORTED_VERSION even to v0: nothing this tool can speak
            raise AdminError(f"{self.address}: ApiVersions v0 refused")
        return table

    def version(self, api_key: int) -> int:
        try:
            return self._versions.version(api_key)
        except UnsupportedApiError:
            raise AdminError(f"{self.address} offers no usable version of api key {api_key}") from None

    def serves(self, api_key: int) -> bool:
        """Whether the broker and this tool share a version of ``api_key``."""
        return self._versions.supports(api_key)

    def call(self, api_key: int, **fields: Any) -> Any:
        return self._roundtrip(request_messages(api_key, self.version(api_key)), fields)


def error_name(code: Any) -> str:
    try:
        return ErrorCode(int(code)).name
    except ValueError:
        return f"error {int(code)}"


def check_error(code: Any, what: str) -> None:
    if int(code) != 0:
        raise AdminError(f"{what}: {error_name(code)}")


class AdminClient:
    """The bootstrap connection plus, when it is another broker, the group's coordinator."""

    def __init__(
        self, bootstrap: str, *, client_id: str = "groupcoord-admin", timeout_s: float = 10.0
    ) -> None:
        host, port = _parse_address(bootstrap)
        self._client_id = client_id
        self._timeout_s = timeout_s
        self.bootstrap = Connection(host, port, client_id=client_id, timeout_s=timeout_s)
        self._others: dict[tuple[str, int], Connection] = {}

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.bootstrap.close()
        for c in self._others.values():
            c.close()

    def connection(self, host: str, port: int) -> Connection:
        if f"{host}:{port}" == self.bootstrap.address:
            return self.bootstrap
        conn = self._others.get((host, port))
        if conn is None:
            conn = self._others[(host, port)] = Connection(
                host, port, client_id=self._client_id, timeout_s=self._timeout_s
            )
        return conn

    def coordinator(self, group_id: str) -> Connection:
        return self.coordinator_node(group_id)[0]

    def coordinator_node(self, group_id: str) -> tuple[Connection, int]:
        """The group's coordinator: its connection and its node id (FindCoordinator)."""
        r = self.bootstrap.call(FIND_COORDINATOR, key=group_id, key_type=0)
        check_error(r.error_code, f"FindCoordinator({group_id!r})")
        return self.connection(r.host, int(r.port)), int(r.node_id)

    def metadata(self, topics: Iterable[str] | None) -> Any:
        """The bootstrap broker's Metadata answer for ``topics`` in that order (None: every
        topic; empty: only the brokers), creating none and asking for no authorized operations."""
        return self.bootstrap.call(
            METADATA,
            topics=None if topics is None else [{"name": t} for t in topics],
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )

    def brokers(self) -> list[Connection]:
        """A connection to every broker of the cluster, from Metadata."""
        r = self.metadata(())
        found = sorted((int(b.node_id), b.host, int(b.port)) for b in r.brokers)
        return [self.connection(host, port) for _, host, port in found] or [self.bootstrap]

    def leaders(self, topics: Iterable[str]) -> dict[tuple[str, int], Connection]:
        """The connection to each partition's leader, from Metadata."""
        r = self.metadata(sorted(set(topics)))
        brokers = {int(b.node_id): (b.host, int(b.port)) for b in r.brokers}
        out: dict[tuple[str, int], Connection] = {}
        for t in r.topics:
            if int(t.error_code) != 0:
                log.info("metadata for %s: %s", t.name, error_name(t.error_code))
                continue
            for p in t.partitions:
                where = brokers.get(int(p.leader_id))
                if int(p.error_code) == 0 and where is not None:
                    out[(t.name, int(p.partition_index))] = self.connection(*where)
        return out


def list_offsets(
    leaders: dict[tuple[str, int], Connection], wanted: Iterable[tuple[str, int]], timestamp: int
) -> dict[tuple[str, int], int]:
    """ListOffsets for each wanted partition at ``timestamp`` (:data:`LATEST_TIMESTAMP`: the
    log end, :data:`EARLIEST_TIMESTAMP`: the log start), asked of its leader in ``leaders``;
    a partition without a leader or with an error code is left out (logged)."""
    by_conn: dict[str, tuple[Connection, list[tuple[str, int]]]] = {}
    for tp in wanted:
        conn = leaders.get(tp)
        if conn is not None:
            by_conn.setdefault(conn.address, (conn, []))[1].append(tp)
    out: dict[tuple[str, int], int] = {}
    for conn, tps in by_conn.values():
        topics: dict[str, list[dict[str, Any]]] = {}
        for t, p in tps:
            topics.setdefault(t, []).append(
                {
                    "partition_index": p,
                    "current_leader_epoch": -1,
                    "timestamp": timestamp,
                    "max_num_offsets": 1,
                }
            )
        r = conn.call(
            LIST_OFFSETS,
            replica_id=-1,
            isolation_level=0,
            topics=[{"name": t, "partitions": ps} for t, ps in topics.items()],
        )
        for t in r.topics:
            for p in t.partitions:
                if int(p.error_code) == 0:
                    out[(t.name, int(p.partition_index))] = int(p.offset)
                else:
                    log.info(
                        "ListOffsets %s-%d: %s", t.name, int(p.partition_index), error_name(p.error_code)
                    )
    return out


def read_partition(
    conn: Connection, topic: str, partition: int, start: int, end: int
) -> Iterator[tuple[BatchHeader, BatchRecord]]:
    """Each data record of ``topic``-``partition`` from ``start`` up to ``end`` (a high
    watermark read before), with its batch's header, read with Fetch from the partition's
    leader ``conn``. Control batches (transaction markers) are skipped. A start below the log
    start moves to the log start; a fetch that returns no complete batch ends the read.

    Raises:
        AdminError: an error code in the Fetch answer, or a corrupt batch.
    """
    position = start
    while position < end:
        r = conn.call(
            FETCH,
            replica_id=-1,
            max_wait=0,
            min_bytes=0,
            max_bytes=_FETCH_MAX_BYTES,
            isolation_level=0,
            session_id=0,
            session_epoch=-1,
            topics=[
                {
                    "topic": topic,
                    "partitions": [
                        {
                            "partition": partition,
                            "current_leader_epoch": -1,
                            "fetch_offset": position,
                            "log_start_offset": -1,
                            "partition_max_bytes": _FETCH_MAX_BYTES,
                        }
                    ],
                }
            ],
            forgotten_topics_data=[],
            rack_id="",
        )
        part = r.responses[0].partitions[0]
        code = int(part.error_code)
        log_start = int(getattr(part, "log_start_offset", -1))  # Fetch v5+
        if code == ErrorCode.OFFSET_OUT_OF_RANGE and position < log_start:
            position = log_start
            continue
        check_error(code, f"Fetch {topic}-{partition} at {position}")
        data = bytes(part.records or b"")
        advanced = position
        try:
            for pos, header in iter_batches(data):
                if header.last_offset < position:
                    continue
                advanced = header.last_offset + 1
                if header.is_control:
                    continue
                for rec in decode_records(data, pos):
                    if rec.offset >= position:
                        yield header, rec
        except CorruptBatchError as exc:
            raise AdminError(f"{topic}-{partition}: corrupt batch in Fetch answer: {exc}") from exc
        if advanced == position:
            break  # nothing complete came back (a batch larger than the fetch size)
        position = advanced
