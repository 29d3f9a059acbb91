"""Raw-wire helpers shared by the tests that speak Kafka's protocol with the package's own
``WireClient`` or with hand-built frames (old versions, the cleaner through Fetch, floods,
quotas, authorization): the one home of the Produce and Fetch request fields they send."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker

PRODUCE, FETCH, SASL_HANDSHAKE, SASL_AUTHENTICATE = 0, 1, 17, 36
MAX = 1 << 20


@contextmanager
def wire_client(broker: Broker) -> Iterator[WireClient]:
    """A ``WireClient`` connected to the broker's bootstrap address, closed on exit."""
    host, port = broker.bootstrap.split(":")
    with WireClient(host, int(port)) as c:
        yield c


def sasl_plain_login(client: WireClient, user: str, password: str) -> None:
    """SaslHandshake v1 for PLAIN and SaslAuthenticate v2 as ``user``, both answered NONE."""
    assert client.call(SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
    assert client.call(SASL_AUTHENTICATE, 2, auth_bytes=f"\0{user}\0{password}".encode()).error_code == 0


def produce_fields(topic: str, records: bytes, *, acks: int = 1) -> dict[str, Any]:
    """The fields of a Produce request (any version from v3) of ``records``, one record batch, to
    partition 0 of ``topic``: no transactional id, a 30 s timeout."""
    return {
        "transactional_id": None,
        "acks": acks,
        "timeout": 30_000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
    }


def produce(client: WireClient, topic: str, records: bytes, *, acks: int = 1) -> None:
    """Produce v9 of ``records`` to partition 0 of ``topic``, answered NONE."""
    r = client.call(PRODUCE, 9, **produce_fields(topic, records, acks=acks))
    assert r.responses[0].partition_responses[0].error_code == 0, r


def fetch_fields(topic: str, offset: int, max_bytes: int = MAX) -> dict[str, Any]:
    """The fields of a Fetch request (any version) of partition 0 of ``topic`` from ``offset``:
    read_uncommitted, no wait, no session, ``max_bytes`` for the request and the partition
    (leader epochs and log start left at the schema's -1)."""
    return {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": max_bytes,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "forgotten_topics_data": [],
        "rack_id": "",
        "topics": [
            {
                "topic": topic,
                "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": max_bytes}],
            }
        ],
    }


def fetch_partition(client: WireClient, version: int, topic: str, offset: int) -> Any:
    """Fetch (at ``version``) partition 0 of ``topic`` from ``offset``, read_uncommitted, no
    wait, up to 1 MiB; the answer's one partition."""
    r = client.call(FETCH, version, **fetch_fields(topic, offset))
    return r.responses[0].partitions[0]


class WireReader:
    """Reads a hand-parsed answer body front to back."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, fmt: str) -> int:
        """One ``struct`` integer of format ``fmt``."""
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str:
        n = self.take(">h")
        s = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def raw(self, n: int) -> bytes:
        b = self.data[self.pos : self.pos + n]
        self.pos += n
        return b

    def done(self) -> bool:
        return self.pos == len(self.data)
