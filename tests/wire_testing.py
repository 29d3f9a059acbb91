"""Raw-wire helpers shared by the tests that speak Kafka's protocol with the package's own
``WireClient`` or with hand-built frames (old versions, the cleaner through Fetch)."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker

FETCH = 1
MAX = 1 << 20


@contextmanager
def wire_client(broker: Broker) -> Iterator[WireClient]:
    """A ``WireClient`` connected to the broker's bootstrap address, closed on exit."""
    host, port = broker.bootstrap.split(":")
    with WireClient(host, int(port)) as c:
        yield c


def fetch_partition(client: WireClient, version: int, topic: str, offset: int) -> Any:
    """Fetch (at ``version``) partition 0 of ``topic`` from ``offset``, read_uncommitted, no
    wait, up to 1 MiB; the answer's one partition."""
    r = client.call(
        FETCH,
        version,
        replica_id=-1,
        max_wait=0,
        min_bytes=1,
        max_bytes=MAX,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        forgotten_topics_data=[],
        rack_id="",
        topics=[
            {
                "topic": topic,
                "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": MAX}],
            }
        ],
    )
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
