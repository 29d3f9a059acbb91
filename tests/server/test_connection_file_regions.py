"""Responses made of bytes and file regions (sendfile) over real loopback sockets: order with
other answers, exact bytes, the connection's back-pressure, descriptors closed on every path.

The test routes are added in one overlap class so that a request may be handled while an
earlier one is still parked (the connection's ordering rule allows that only within a run of
one overlap class): that is what puts ready answers and file regions in the queue behind a parked one.
Descriptors are checked on the regions the handler itself opened (each must be closed by the
connection), never by counting the process's open descriptors, which other threads change.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import random
import socket
import struct
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from groupcoord.handling import PreEncoded, RequestContext
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.entities import child, err, make
from groupcoord.protocol.fetch_response import PartitionOut, TopicOut, encode_fetch_body
from groupcoord.protocol.registry import load_messages
from groupcoord.server.app import KafkaServer
from groupcoord.server.dispatch import Dispatcher
from groupcoord.server.output import OUTPUT_HIGH_WATER, WriteGate, send_region
from groupcoord.storage.log import FileRegion

ZERO = datetime.timedelta(0)
FETCH, METADATA, HEARTBEAT = 1, 3, 12
BIG = 16 << 20  # more than the socket buffers hold: the send stays pending until read
#: A high-water mark above two BIG answers: with it, a request behind a BIG answer is handled
#: while the region is still being sent (the scenarios about what happens to a region queued
#: behind another). With the default mark (OUTPUT_HIGH_WATER, below BIG), a BIG answer owed
#: stops the connection until the client has taken most of it
#: (test_a_large_region_owed_stops_the_connection_until_the_client_reads_it).
PIPELINED = 64 << 20


class State:
    def __init__(self, files: dict[int, tuple[Path, int, int]]) -> None:
        #: fetch_offset asked by the request -> (file, position, length) answered
        self.files = files
        self.calls: list[str] = []
        self.parked: dict[int, asyncio.Future[None]] = {}
        self.region_last = False
        #: every file region the fetch handler handed to the connection (it must close each)
        self.regions: list[FileRegion] = []


def fetch_handler(state: State, ctx: RequestContext, req: Any) -> Any:
    part = req.topics[0].partitions[0]
    state.calls.append(f"fetch{ctx.correlation_id}")
    path, position, length = state.files[int(part.fetch_offset)]
    fd = os.open(path, os.O_RDONLY)
    head = b"inline-before"
    parts = (
        PartitionOut(
            partition=0,
            error_code=0,
            high_watermark=1,
            last_stable_offset=1,
            log_start_offset=0,
            records=head,
        ),
        PartitionOut(
            partition=1,
            error_code=0,
            high_watermark=2,
            last_stable_offset=2,
            log_start_offset=0,
            records=FileRegion(fd, position, length),
        ),
        PartitionOut(
            partition=2,
            error_code=0,
            high_watermark=3,
            last_stable_offset=3,
            log_start_offset=0,
            records=FileRegion(os.dup(fd), 0, 10),
        ),
    )
    state.regions += [p.records for p in parts if isinstance(p.records, FileRegion)]
    if ctx.api_version < 12 and state.region_last:
        # the big region is the very end of the frame (no tagged fields after it before v12)
        parts = (parts[0], parts[2], parts[1])
    pieces = encode_fetch_body(
        ctx.api_version, [TopicOut(name="t", topic_id=uuid.UUID(int=0), partitions=parts)]
    )
    return PreEncoded(pieces=tuple(p for p in pieces if isinstance(p, bytes | FileRegion)))


def metadata(state: State, ctx: RequestContext, req: Any) -> Any:
    state.calls.append(f"md{ctx.correlation_id}")
    m = load_messages(METADATA, ctx.api_version)
    return make(m.response_type, throttle_time=ZERO, brokers=(), cluster_id="c", controller_id=0, topics=())


def heartbeat(state: State, ctx: RequestContext, req: Any) -> Awaitable[Any]:
    state.calls.append(f"hb{ctx.correlation_id}")
    fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    state.parked[ctx.correlation_id] = fut
    m = load_messages(HEARTBEAT, ctx.api_version)

    async def answer() -> Any:
        await fut
        return make(m.response_type, throttle_time=ZERO, error_code=err(0))

    return answer()


Scenario = Callable[[State, KafkaServer], Awaitable[None]]


def open_regions(state: State) -> list[FileRegion]:
    """The regions the handler opened that the connection has not closed yet."""
    return [r for r in state.regions if not r.closed]


def run(
    files: dict[int, tuple[Path, int, int]],
    scenario: Scenario,
    loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None,
    high_water: int = OUTPUT_HIGH_WATER,
) -> State:
    async def main() -> State:
        state = State(files)
        d: Dispatcher[State] = Dispatcher(state)
        d.add(FETCH, 4, 16, fetch_handler, overlap="test")
        d.add(METADATA, 0, 12, metadata, overlap="test")
        d.add(HEARTBEAT, 0, 4, heartbeat, overlap="test")
        server = KafkaServer(
            d, host="127.0.0.1", port=0, max_frame_bytes=1 << 20, output_high_water=high_water
        )
        await server.start()
        try:
            await asyncio.wait_for(scenario(state, server), timeout=60)
        finally:
            await server.stop(grace_s=1)
        return state

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(main())


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, server: KafkaServer) -> Client:
        # A small fixed receive buffer (no autotuning): what is in flight stays well under BIG.
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
        r, w = await asyncio.open_connection(sock=sock, limit=1 << 16)
        return cls(r, w)

    async def send(self, key: int, version: int, corr: int, **body: Any) -> None:
        m = load_messages(key, version)
        self.writer.write(encode_request(m, corr, make(m.request_type, **body), client_id="t"))
        await self.writer.drain()

    async def fetch(self, corr: int, offset: int, version: int = 16) -> None:
        m = load_messages(FETCH, version)
        topic_t = child(m.request_type, "topics")
        part_t = child(topic_t, "partitions")
        part = part_t(partition=0, fetch_offset=offset, partition_max_bytes=1 << 30)
        t = (
            topic_t(topic="t", partitions=(part,))
            if version < 13
            else topic_t(topic_id=uuid.UUID(int=1), partitions=(part,))
        )
        await self.send(
            FETCH,
            version,
            corr,
            max_wait=ZERO,
            min_bytes=1,
            max_bytes=1 << 30,
            isolation_level=0,
            topics=(t,),
            forgotten_topics_data=(),
            replica_id=-1,
        )

    async def md(self, corr: int) -> None:
        await self.send(METADATA, 12, corr, topics=(), include_topic_authorized_operations=False)

    async def recv(self, key: int, version: int) -> tuple[int, Any]:
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        return decode_response(load_messages(key, version), await self.reader.readexactly(size))

    async def closed_by_server(self) -> bool:
        try:
            while await self.reader.read(1 << 20):
                pass
        except ConnectionError:
            pass
        return True

    def close(self) -> None:
        self.writer.close()


async def until(pred: Callable[[], bool]) -> None:
    while not pred():
        await asyncio.sleep(0.001)


def make_file(path: Path, size: int, seed: int) -> bytes:
    data = random.Random(seed).randbytes(size)
    path.write_bytes(data)
    return data


def test_regions_and_bytes_arrive_in_order_and_exact_between_other_answers(tmp_path: Path) -> None:
    a = make_file(tmp_path / "a", 3 << 20, 1)
    b = make_file(tmp_path / "b", 600_000, 2)
    files = {0: (tmp_path / "a", 12_345, 2_000_000), 1: (tmp_path / "b", 0, 600_000)}

    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        # a parked answer first: the regions must wait for it, and the answers after them too
        await c.send(HEARTBEAT, 4, 1, group_id="g", generation_id=1, member_id="m", group_instance_id=None)
        await c.fetch(2, 0)
        await c.md(3)
        await c.fetch(4, 1, version=11)
        await c.md(5)
        await until(lambda: "md5" in state.calls)
        state.parked[1].set_result(None)
        assert (await c.recv(HEARTBEAT, 4))[0] == 1
        corr, resp = await c.recv(FETCH, 16)
        parts = resp.responses[0].partitions
        assert corr == 2
        assert [p.records for p in parts] == [b"inline-before", a[12_345 : 12_345 + 2_000_000], a[:10]]
        assert (await c.recv(METADATA, 12))[0] == 3
        corr, resp = await c.recv(FETCH, 11)
        assert corr == 4
        assert [p.records for p in resp.responses[0].partitions] == [b"inline-before", b, b[:10]]
        assert (await c.recv(METADATA, 12))[0] == 5
        assert state.calls == ["hb1", "fetch2", "md3", "fetch4", "md5"]
        assert len(state.regions) == 4
        await until(lambda: not open_regions(state))  # each closed once sent
        c.close()

    run(files, scenario)


def test_connection_reads_no_request_while_a_region_waits_for_a_slow_reader(tmp_path: Path) -> None:
    big = make_file(tmp_path / "big", BIG, 3)
    files = {0: (tmp_path / "big", 0, BIG)}

    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.fetch(1, 0)
        await until(lambda: "fetch1" in state.calls)
        await c.md(2)
        for _ in range(50):
            await asyncio.sleep(0)
        # the client has not read: the region is still on its way, so md2 was not even read
        assert state.calls == ["fetch1"]
        corr, resp = await c.recv(FETCH, 16)
        assert corr == 1 and resp.responses[0].partitions[1].records == big
        assert (await c.recv(METADATA, 12))[0] == 2
        assert state.calls == ["fetch1", "md2"]
        c.close()

    run(files, scenario)


def test_regions_reach_a_slow_reader_whole_and_in_order_on_uvloop(tmp_path: Path) -> None:
    """``groupcoord serve`` runs on uvloop: its transports are not ``asyncio.Transport``
    subclasses and its loop has no ``loop.sendfile``; a region the socket does not take at
    once is still sent whole, before the answers behind it."""
    uvloop = pytest.importorskip("uvloop")
    big = make_file(tmp_path / "big", BIG, 6)
    files = {0: (tmp_path / "big", 0, BIG)}

    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.fetch(1, 0)
        await until(lambda: "fetch1" in state.calls)
        await c.md(2)
        for _ in range(50):
            await asyncio.sleep(0)
        # not read yet: the rest of the region waits for the socket in the sender task
        assert state.calls == ["fetch1"]
        corr, resp = await c.recv(FETCH, 16)
        assert corr == 1 and resp.responses[0].partitions[1].records == big
        assert (await c.recv(METADATA, 12))[0] == 2
        assert state.calls == ["fetch1", "md2"]
        c.close()
        await until(lambda: not open_regions(state))

    run(files, scenario, loop_factory=uvloop.new_event_loop)


def test_region_of_a_deleted_file_is_still_sent_whole(tmp_path: Path) -> None:
    make_file(tmp_path / "big", BIG, 4)
    small = make_file(tmp_path / "small", 500_000, 5)
    files = {0: (tmp_path / "big", 0, BIG), 1: (tmp_path / "small", 0, 500_000)}

    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.fetch(1, 0)
        await c.fetch(2, 1)
        await until(lambda: "fetch2" in state.calls)
        (tmp_path / "small").unlink()
        (tmp_path / "small").write_bytes(b"replaced")  # a new file under the old name
        assert (await c.recv(FETCH, 16))[0] == 1
        corr, resp = await c.recv(FETCH, 16)
        assert corr == 2 and resp.responses[0].partitions[1].records == small
        c.close()

    run(files, scenario, high_water=PIPELINED)


def test_region_cut_short_by_truncation_closes_the_connection_and_frees_descriptors(tmp_path: Path) -> None:
    make_file(tmp_path / "big", BIG, 6)
    make_file(tmp_path / "small", 500_000, 7)
    files = {0: (tmp_path / "big", 0, BIG), 1: (tmp_path / "small", 0, 500_000)}

    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.fetch(1, 0)
        await c.fetch(2, 1)
        await until(lambda: "fetch2" in state.calls)
        (conn,) = server.connections
        os.truncate(tmp_path / "small", 1_000)  # in place, as truncate_to does to a segment
        assert (await c.recv(FETCH, 16))[0] == 1
        # the second frame promised 500,000 record bytes that no longer exist: no answer, closed
        assert await c.closed_by_server()
        c.close()
        # the connection closed its socket and every descriptor it was handed (the region
        # cut short included), and the server forgot it
        assert len(state.regions) == 4
        await until(lambda: not open_regions(state) and not server.connections)
        assert conn.closed

    run(files, scenario, high_water=PIPELINED)


def test_client_gone_mid_send_releases_every_pending_region(tmp_path: Path) -> None:
    make_file(tmp_path / "big", BIG, 8)
    files = {0: (tmp_path / "big", 0, BIG)}

    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        for corr in range(1, 4):
            await c.fetch(corr, 0)
        await until(lambda: len(state.calls) >= 1)
        assert await c.reader.readexactly(1 << 20)  # the first response is under way
        c.writer.transport.abort()
        # connection_lost takes the connection out of the server's set at once and cancels the
        # sender task, which closes the region it was sending when it next runs: wait for both
        # (a region never closed fails the scenario's 60 s limit)
        await until(lambda: not server.connections and not open_regions(state))
        assert state.regions and not open_regions(state)

    run(files, scenario)


@pytest.mark.parametrize("version", [11, 16])
def test_parked_answer_completed_during_a_region_send_waits_behind_it(tmp_path: Path, version: int) -> None:
    big = make_file(tmp_path / "big", BIG, 9)
    files = {0: (tmp_path / "big", 0, BIG)}

    async def scenario(state: State, server: KafkaServer) -> None:
        state.region_last = True
        c = await Client.connect(server)
        await c.send(HEARTBEAT, 4, 1, group_id="g", generation_id=1, member_id="m", group_instance_id=None)
        await c.fetch(2, 0, version=version)
        await c.send(HEARTBEAT, 4, 3, group_id="g", generation_id=1, member_id="m", group_instance_id=None)
        await until(lambda: "hb3" in state.calls)
        state.parked[1].set_result(None)
        assert (await c.recv(HEARTBEAT, 4))[0] == 1
        size = struct.unpack(">i", await c.reader.readexactly(4))[0]
        first = await c.reader.readexactly(1 << 20)  # the region of fetch 2 is under way ...
        state.parked[3].set_result(None)  # ... when the answer to 3 becomes ready
        for _ in range(20):
            await asyncio.sleep(0)
        rest = await c.reader.readexactly(size - len(first))
        corr, resp = decode_response(load_messages(FETCH, version), first + rest)
        assert corr == 2
        assert [p.records for p in resp.responses[0].partitions] == (
            [b"inline-before", big[:10], big] if version < 12 else [b"inline-before", big, big[:10]]
        )
        assert (await c.recv(HEARTBEAT, 4))[0] == 3
        c.close()

    run(files, scenario, high_water=PIPELINED)


def test_region_on_a_transport_without_sendfile_is_copied_exactly(tmp_path: Path) -> None:
    data = make_file(tmp_path / "f", 300_000, 10)

    async def main() -> bytes:
        loop = asyncio.get_running_loop()
        r, w = os.pipe()
        writer = os.fdopen(w, "wb", buffering=0)
        transport, _ = await loop.connect_write_pipe(asyncio.Protocol, writer)
        fd = os.open(tmp_path / "f", os.O_RDONLY)
        region = FileRegion(fd, 1_000, 200_000)
        reader = asyncio.ensure_future(asyncio.to_thread(_read_all, r, 200_000))
        try:
            await send_region(loop, transport, region, WriteGate())  # a pipe transport has no sendfile
        finally:
            region.close()
        got = await reader
        transport.close()
        os.close(r)
        return got

    assert asyncio.run(main()) == data[1_000:201_000]


def _read_all(fd: int, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = os.read(fd, n - len(out))
        if not chunk:
            break
        out += chunk
    return bytes(out)


def test_send_region_copies_when_the_loop_has_no_sendfile(tmp_path: Path) -> None:
    """uvloop's loop inherits ``AbstractEventLoop.sendfile``, which raises NotImplementedError (a
    RuntimeError): a region sent on it must still arrive whole, by copying. Guards the fallback
    that ``groupcoord serve`` relies on now that uvloop is its default loop on Linux."""
    uvloop = pytest.importorskip("uvloop")
    payload = bytes(range(256)) * 64
    path = tmp_path / "segment.log"
    path.write_bytes(b"x" * 100 + payload)

    async def scenario() -> bytes:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
        region = FileRegion(os.open(path, os.O_RDONLY), 100, len(payload))
        try:
            await send_region(loop, transport, region, WriteGate())  # type: ignore[arg-type]
        finally:
            region.close()
        transport.close()
        theirs.setblocking(False)
        received = b""
        while len(received) < len(payload):
            received += await loop.sock_recv(theirs, 65536)
        theirs.close()
        return received

    loop = uvloop.new_event_loop()
    try:
        assert loop.run_until_complete(scenario()) == payload
    finally:
        loop.close()
