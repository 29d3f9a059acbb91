"""Fairness: one connection's pipelined frames are handled at most ``FRAMES_PER_TURN`` per turn
of the event loop, so other connections are served in between (``bench/fairness.py`` measures the
latency it saves). Kafka's processors serve their channels in turn for the same reason (one
request per channel per poll)."""

from __future__ import annotations

import asyncio
from typing import Any

from groupcoord.handling import RequestContext
from groupcoord.protocol.client import encode_request
from groupcoord.protocol.entities import NO_THROTTLE, make
from groupcoord.protocol.registry import load_messages
from groupcoord.server.connection import FRAMES_PER_TURN, KafkaConnection
from groupcoord.server.dispatch import Dispatcher

METADATA = 3


class _Transport(asyncio.Transport):
    """Keeps what the connection writes; reading is never paused for real."""

    def __init__(self) -> None:
        super().__init__()
        self.out: list[bytes] = []
        self.paused = False

    def write(self, data: Any) -> None:
        self.out.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else default

    def pause_reading(self) -> None:
        self.paused = True

    def resume_reading(self) -> None:
        self.paused = False

    def get_write_buffer_size(self) -> int:
        return 0

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


def test_a_connection_gets_frames_per_turn_frames_handled_then_waits_for_the_next_turn() -> None:
    handled: list[tuple[int, int]] = []
    m = load_messages(METADATA, 12)

    def metadata(state: None, ctx: RequestContext, req: Any) -> Any:
        handled.append((ctx.connection_id, ctx.correlation_id))
        return make(
            m.response_type, throttle_time=NO_THROTTLE, brokers=(), cluster_id="c", controller_id=0, topics=()
        )

    async def main() -> None:
        d: Dispatcher[None] = Dispatcher(None)
        d.add(METADATA, 0, 12, metadata)
        a, b = KafkaConnection(d, 1, 1 << 20), KafkaConnection(d, 2, 1 << 20)
        ta, tb = _Transport(), _Transport()
        a.connection_made(ta)
        b.connection_made(tb)
        request = make(m.request_type, topics=(), include_topic_authorized_operations=False)
        a.data_received(b"".join(encode_request(m, corr, request) for corr in range(1, 41)))
        assert handled == [(1, corr) for corr in range(1, FRAMES_PER_TURN + 1)]
        assert ta.paused  # the rest wait unread
        b.data_received(encode_request(m, 99, request))
        assert handled[-1] == (2, 99)  # served before a's next turn
        for _ in range(10):
            await asyncio.sleep(0)
        assert [corr for conn, corr in handled if conn == 1] == list(range(1, 41))
        assert len(ta.out) >= 3 and not ta.paused

    asyncio.run(main())
