"""Random request bodies for every advertised (api, version): the broker closes or answers, never dies."""

from __future__ import annotations

import asyncio
import random
import struct
from pathlib import Path

from broker_harness import Env, run_broker

from groupcoord.broker.apis import ROUTES

METADATA = 3


def frame(rng: random.Random, key: int, version: int) -> bytes:
    header = struct.pack(">hhi", key, version, rng.randrange(1 << 31)) + b"\x00\x01c"
    if version >= 9 or (key == 18 and version >= 3) or rng.random() < 0.5:
        header += b"\x00"  # an empty tagged-field section, right for flexible versions
    kind = rng.random()
    if kind < 0.3:
        body = rng.randbytes(rng.randrange(0, 64))
    elif kind < 0.6:
        # huge array and string lengths
        body = rng.choice(
            [b"\x7f\xff\xff\xff", b"\xff\xff\xff\xfe", b"\xff\xff\xff\xff\x0f"]
        ) * rng.randrange(1, 6)
    else:
        body = bytes(rng.choice([0, 1, 0xFF, 0x7F, 0x80]) for _ in range(rng.randrange(0, 200)))
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def test_random_bodies_never_take_the_broker_down(tmp_path: Path) -> None:
    rng = random.Random(1234)

    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("t", 2, {})
        outcomes = {"answered": 0, "closed": 0}
        for _ in range(300):
            route = rng.choice(ROUTES)
            version = rng.randint(route.min_version, route.max_version)
            c = await env.connect()
            c.writer.write(frame(rng, route.api_key, version))
            await c.writer.drain()
            try:
                data = await asyncio.wait_for(c.reader.read(4), timeout=5)
            except TimeoutError:
                data = b"?"  # parked (e.g. a fetch waiting for data): the broker is alive
            outcomes["closed" if data == b"" else "answered"] += 1
            c.close()
        assert outcomes["closed"] > 0
        ok = await env.connect()
        resp = await ok.call(
            METADATA,
            12,
            topics=None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        assert [t.name for t in resp.topics] == ["t"]
        ok.close()

    run_broker(tmp_path, scenario)
