"""The per-connection loop over real loopback sockets, with test handlers on a real server."""

from __future__ import annotations

import asyncio
import datetime
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from groupcoord.handling import RequestContext
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.entities import child, err, make
from groupcoord.protocol.registry import ApiRegistry, load_messages
from groupcoord.server.app import KafkaServer
from groupcoord.server.dispatch import Dispatcher

ZERO = datetime.timedelta(0)
API_VERSIONS, METADATA, HEARTBEAT, LIST_GROUPS = 18, 3, 12, 16


class State:
    def __init__(self) -> None:
        self.calls: list[str] = []
        self.parked: dict[int, asyncio.Future[Any]] = {}
        self.mute_heartbeats = False
        self.dispatcher: Dispatcher[State] | None = None
        self.seen_contexts: list[RequestContext] = []


def api_versions(state: State, ctx: RequestContext, req: Any) -> Any:
    assert state.dispatcher is not None
    m = state.dispatcher.registry.lookup(ctx.api_key, ctx.api_version)
    key_t = child(m.response_type, "api_keys")
    keys = tuple(
        make(key_t, api_key=k, min_version=lo, max_version=hi)
        for k, lo, hi in state.dispatcher.registry.ranges()
    )
    return make(m.response_type, error_code=err(0), api_keys=keys, throttle_time=ZERO)


def metadata(state: State, ctx: RequestContext, req: Any) -> Any:
    state.calls.append(f"md{ctx.correlation_id}")
    state.seen_contexts.append(ctx)
    assert state.dispatcher is not None
    m = state.dispatcher.registry.lookup(ctx.api_key, ctx.api_version)
    return make(m.response_type, throttle_time=ZERO, brokers=(), cluster_id="c", controller_id=0, topics=())


def heartbeat(state: State, ctx: RequestContext, req: Any) -> Awaitable[Any]:
    """Parks until the test resolves state.parked[correlation_id]."""
    state.calls.append(f"hb{ctx.correlation_id}")
    if state.mute_heartbeats:
        ctx.mute()
    fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    state.parked[ctx.correlation_id] = fut
    assert state.dispatcher is not None
    m = state.dispatcher.registry.lookup(ctx.api_key, ctx.api_version)

    async def answer() -> Any:
        code = await fut
        return make(m.response_type, throttle_time=ZERO, error_code=err(code))

    return answer()


def list_groups(state: State, ctx: RequestContext, req: Any) -> Any:
    """No response at all (like Produce acks=0), or a crash when asked for it."""
    state.calls.append(f"lg{ctx.correlation_id}")
    if ctx.correlation_id == 666:
        raise RuntimeError("handler bug")
    return None


Scenario = Callable[[State, KafkaServer], Awaitable[None]]


def run(scenario: Scenario, max_frame_bytes: int = 1 << 20, overlap: dict[int, str] | None = None) -> State:
    classes = overlap or {}

    async def main() -> State:
        state = State()
        d: Dispatcher[State] = Dispatcher(state)
        d.add(API_VERSIONS, 0, 3, api_versions, overlap=classes.get(API_VERSIONS))
        d.add(METADATA, 0, 12, metadata, overlap=classes.get(METADATA))
        d.add(HEARTBEAT, 0, 4, heartbeat, overlap=classes.get(HEARTBEAT))
        d.add(LIST_GROUPS, 0, 4, list_groups, overlap=classes.get(LIST_GROUPS))
        state.dispatcher = d
        server = KafkaServer(d, host="127.0.0.1", port=0, max_frame_bytes=max_frame_bytes)
        await server.start()
        try:
            await asyncio.wait_for(scenario(state, server), timeout=20)
        finally:
            await server.stop(grace_s=1)
        return state

    return asyncio.run(main())


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, server: KafkaServer) -> Client:
        r, w = await asyncio.open_connection("127.0.0.1", server.port)
        return cls(r, w)

    def frame(self, key: int, version: int, corr: int, **body: Any) -> bytes:
        m = load_messages(key, version)
        return encode_request(m, corr, make(m.request_type, **body), client_id="test-client")

    async def send(self, *frames: bytes) -> None:
        self.writer.write(b"".join(frames))
        await self.writer.drain()

    async def recv(self, key: int, version: int) -> tuple[int, Any]:
        size = struct.unpack(">i", await self.reader.readexactly(4))[0]
        body = await self.reader.readexactly(size)
        return decode_response(load_messages(key, version), body)

    async def closed_by_server(self) -> bool:
        return await self.reader.read(1) == b""

    def close(self) -> None:
        self.writer.close()


def md(c: Client, corr: int) -> bytes:
    return c.frame(METADATA, 12, corr, topics=(), include_topic_authorized_operations=False)


def hb(c: Client, corr: int) -> bytes:
    return c.frame(HEARTBEAT, 4, corr, group_id="g", generation_id=1, member_id="m", group_instance_id=None)


async def until(pred: Callable[[], bool]) -> None:
    while not pred():
        await asyncio.sleep(0.001)


def test_request_behind_a_parked_answer_is_not_handled_until_that_answer_is_ready() -> None:
    """Kafka's ``SocketServer.Processor`` mutes a channel (``KafkaChannel.mute``) from the moment
    a request is read until its response is sent: a later request on the connection sees every
    effect of the earlier one. Here: nothing behind a parked answer reaches its handler."""

    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.send(hb(c, 1), md(c, 2), md(c, 3))
        await until(lambda: "hb1" in state.calls)
        for _ in range(50):
            await asyncio.sleep(0)
        assert state.calls == ["hb1"]
        state.calls.append("answered")
        state.parked[1].set_result(0)
        assert (await c.recv(HEARTBEAT, 4))[0] == 1
        assert (await c.recv(METADATA, 12))[0] == 2
        assert (await c.recv(METADATA, 12))[0] == 3
        assert state.calls == ["hb1", "answered", "md2", "md3"]
        c.close()

    run(scenario)


def test_overlapping_requests_are_handled_while_earlier_ones_wait_and_answered_in_order() -> None:
    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.send(hb(c, 1), md(c, 2), hb(c, 3), md(c, 4))
        await until(lambda: "md4" in state.calls)
        # every request was handled while the first was still parked ...
        assert state.calls == ["hb1", "md2", "hb3", "md4"]
        state.parked[3].set_result(0)
        state.parked[1].set_result(0)
        # ... and yet the answers come back 1, 2, 3, 4.
        assert (await c.recv(HEARTBEAT, 4))[0] == 1
        assert (await c.recv(METADATA, 12))[0] == 2
        assert (await c.recv(HEARTBEAT, 4))[0] == 3
        assert (await c.recv(METADATA, 12))[0] == 4
        c.close()

    run(scenario, overlap={HEARTBEAT: "a", METADATA: "a"})


@pytest.mark.parametrize("metadata_class", [None, "b"])
def test_other_request_behind_a_run_of_overlapping_ones_waits_until_the_run_is_answered(
    metadata_class: str | None,
) -> None:
    """A request of no overlap class, or of another class, waits for the whole run."""

    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.send(hb(c, 1), hb(c, 2), md(c, 3), hb(c, 4))
        await until(lambda: "hb2" in state.calls)
        for _ in range(50):
            await asyncio.sleep(0)
        assert state.calls == ["hb1", "hb2"]
        state.parked[1].set_result(0)
        assert (await c.recv(HEARTBEAT, 4))[0] == 1
        for _ in range(50):
            await asyncio.sleep(0)
        assert state.calls == ["hb1", "hb2"]  # hb2 is not answered yet: md3 still waits
        state.calls.append("answered")
        state.parked[2].set_result(0)
        assert (await c.recv(HEARTBEAT, 4))[0] == 2
        assert (await c.recv(METADATA, 12))[0] == 3
        await until(lambda: "hb4" in state.calls)
        assert state.calls == ["hb1", "hb2", "answered", "md3", "hb4"]
        state.parked[4].set_result(0)
        assert (await c.recv(HEARTBEAT, 4))[0] == 4
        c.close()

    classes = {HEARTBEAT: "a"} if metadata_class is None else {HEARTBEAT: "a", METADATA: metadata_class}
    run(scenario, overlap=classes)


def test_more_pipelined_requests_than_max_in_flight_in_one_write_are_all_answered() -> None:
    """600 requests in one write: after MAX_IN_FLIGHT (256) answers the connection writes them
    and goes on with the frames it already holds (it used to wait for more bytes, forever)."""

    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.send(*[md(c, corr) for corr in range(1, 601)])
        answered = [(await c.recv(METADATA, 12))[0] for _ in range(600)]
        assert answered == list(range(1, 601))
        c.close()

    run(scenario)


def test_muted_request_stops_even_overlapping_ones_until_its_answer_is_out() -> None:
    async def scenario(state: State, server: KafkaServer) -> None:
        state.mute_heartbeats = True
        c = await Client.connect(server)
        await c.send(hb(c, 1), md(c, 2))
        await until(lambda: "hb1" in state.calls)
        for _ in range(20):
            await asyncio.sleep(0)
        assert state.calls == ["hb1"]
        state.calls.append("resolved")
        state.parked[1].set_result(27)
        corr, resp = await c.recv(HEARTBEAT, 4)
        assert (corr, int(resp.error_code)) == (1, 27)
        assert (await c.recv(METADATA, 12))[0] == 2
        assert state.calls == ["hb1", "resolved", "md2"]
        c.close()

    run(scenario, overlap={HEARTBEAT: "a", METADATA: "a"})


def test_handler_sees_client_id_host_and_connection_id() -> None:
    async def scenario(state: State, server: KafkaServer) -> None:
        a = await Client.connect(server)
        b = await Client.connect(server)
        await a.send(md(a, 1))
        await a.recv(METADATA, 12)
        await b.send(md(b, 2))
        await b.recv(METADATA, 12)
        ctx_a, ctx_b = state.seen_contexts
        assert ctx_a.client_id == "test-client"
        assert ctx_a.client_host == "/127.0.0.1"
        assert (ctx_a.api_key, ctx_a.api_version, ctx_a.correlation_id) == (METADATA, 12, 1)
        assert ctx_a.connection_id != ctx_b.connection_id
        a.close()
        b.close()

    run(scenario)


def test_no_response_result_writes_nothing_and_later_answers_flow() -> None:
    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.send(c.frame(LIST_GROUPS, 4, 5, states_filter=()), md(c, 6))
        corr, _ = await c.recv(METADATA, 12)
        assert corr == 6
        assert state.calls == ["lg5", "md6"]
        c.close()

    run(scenario)


def test_api_versions_with_unsupported_version_gets_v0_error_with_our_ranges() -> None:
    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        # v4 is valid Kafka but beyond what this server registered (0-3).
        await c.send(c.frame(API_VERSIONS, 4, 9, client_software_name="x", client_software_version="1"))
        corr, resp = await c.recv(API_VERSIONS, 0)
        assert corr == 9
        assert int(resp.error_code) == 35
        assert [(k.api_key, k.min_version, k.max_version) for k in resp.api_keys] == [
            (3, 0, 12),
            (12, 0, 4),
            (16, 0, 4),
            (18, 0, 3),
        ]
        # The connection stays usable.
        await c.send(md(c, 10))
        assert (await c.recv(METADATA, 12))[0] == 10
        c.close()

    run(scenario)


def test_api_versions_v3_is_answered_with_header_v0() -> None:
    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.send(c.frame(API_VERSIONS, 3, 4, client_software_name="x", client_software_version="1"))
        size = struct.unpack(">i", await c.reader.readexactly(4))[0]
        body = await c.reader.readexactly(size)
        # header v0: correlation id only, then error_code int16 straight away
        assert body[:6] == b"\x00\x00\x00\x04\x00\x00"
        c.close()

    run(scenario)


def _truncated_metadata_body() -> bytes:
    m = load_messages(METADATA, 12)
    topic_t = child(m.request_type, "topics")
    req = make(
        m.request_type,
        topics=(make(topic_t, name="some-topic", topic_id=None),),
        include_topic_authorized_operations=False,
    )
    frame = encode_request(m, 1, req)[4:]
    cut = frame[: len(frame) - 6]
    return struct.pack(">i", len(cut)) + cut


@pytest.mark.parametrize(
    "bad",
    [
        pytest.param(struct.pack(">i", 2000) + b"x" * 10, id="oversized"),
        pytest.param(struct.pack(">i", -5), id="negative-size"),
        pytest.param(struct.pack(">i", 3) + b"\x00\x03\x00", id="short-header"),
        pytest.param(struct.pack(">ihhi", 8, 9999, 0, 1), id="unknown-api-key"),
        pytest.param(struct.pack(">ihhi", 8, 0, 9, 1), id="api-not-registered"),
        pytest.param(struct.pack(">ihhi", 8, METADATA, 13, 1), id="unsupported-version"),
        pytest.param(struct.pack(">ihhih", 10, METADATA, 12, 1, 50), id="truncated-header"),
        pytest.param(_truncated_metadata_body(), id="truncated-body"),
    ],
)
def test_bad_input_closes_only_that_connection(bad: bytes) -> None:
    async def scenario(state: State, server: KafkaServer) -> None:
        good = await Client.connect(server)
        evil = await Client.connect(server)
        await evil.send(bad)
        assert await evil.closed_by_server()
        await good.send(md(good, 1))
        assert (await good.recv(METADATA, 12))[0] == 1
        assert len(server.connections) == 1
        # And the server still accepts new connections.
        late = await Client.connect(server)
        await late.send(md(late, 2))
        assert (await late.recv(METADATA, 12))[0] == 2
        good.close()
        late.close()

    run(scenario, max_frame_bytes=1000)


def test_handler_exception_closes_the_connection_not_the_server() -> None:
    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.send(c.frame(LIST_GROUPS, 4, 666, states_filter=()))
        assert await c.closed_by_server()
        other = await Client.connect(server)
        await other.send(md(other, 1))
        assert (await other.recv(METADATA, 12))[0] == 1
        other.close()

    run(scenario)


def test_garbage_on_one_connection_while_another_pipelines() -> None:
    async def scenario(state: State, server: KafkaServer) -> None:
        busy = await Client.connect(server)
        evil = await Client.connect(server)
        await busy.send(*(md(busy, i) for i in range(200)))
        await evil.send(b"\x00\x00\x00\x10GET / HTTP/1.1\r\n")
        got = [(await busy.recv(METADATA, 12))[0] for _ in range(200)]
        assert got == list(range(200))
        assert await evil.closed_by_server()
        busy.close()

    run(scenario)


def test_graceful_stop_answers_in_flight_requests_then_closes() -> None:
    async def scenario(state: State, server: KafkaServer) -> None:
        c = await Client.connect(server)
        await c.send(hb(c, 1))
        await until(lambda: 1 in state.parked)
        stopping = asyncio.ensure_future(server.stop(grace_s=5))
        await asyncio.sleep(0)
        state.parked[1].set_result(0)
        corr, _ = await c.recv(HEARTBEAT, 4)
        assert corr == 1
        assert await c.closed_by_server()
        await stopping

    run(scenario)


def test_registry_of_dispatcher_is_what_was_added() -> None:
    d: Dispatcher[None] = Dispatcher(None)
    d.add(METADATA, 0, 12, metadata)  # type: ignore[arg-type]
    assert d.registry.ranges() == [(METADATA, 0, 12)]
    assert isinstance(d.registry, ApiRegistry)
