"""The codec warm-up after listening builds codecs only while no client is talking (issue 27:
built between requests, it delayed every acks=all produce of a fresh broker's first second
behind one ~5-15 ms build; ``bench/first_second_latency.py``)."""

from __future__ import annotations

import asyncio

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.registry import ApiMessages, ApiRegistry
from groupcoord.server import serve


class CountingRegistry(ApiRegistry):
    """The real registry, counting the codecs built."""

    def __init__(self) -> None:
        super().__init__()
        self.built: list[tuple[int, int]] = []

    def lookup(self, api_key: int, version: int) -> ApiMessages:
        self.built.append((api_key, version))
        return super().lookup(api_key, version)


def registry() -> CountingRegistry:
    r = CountingRegistry()
    r.register(ApiKey.API_VERSIONS, 0, 3)
    r.register(ApiKey.METADATA, 0, 12)
    r.register(ApiKey.PRODUCE, 3, 9)
    return r


def test_no_codec_is_built_while_request_bytes_keep_arriving_and_all_are_once_quiet() -> None:
    async def scenario() -> None:
        reg = registry()
        bytes_in = 0
        talking = True

        def activity() -> int:
            nonlocal bytes_in
            if talking:
                bytes_in += 1  # a client sent something since the last look
            return bytes_in

        task = asyncio.create_task(serve.warm_codecs(reg, activity))
        for _ in range(5):  # five quiet windows, each interrupted by traffic
            await asyncio.sleep(serve.WARM_QUIET_S)
        assert reg.built == []
        talking = False
        await asyncio.wait_for(task, timeout=60)
        expected = [(ApiKey.API_VERSIONS, v) for v in (3, 2, 1, 0)]
        expected += [(ApiKey.METADATA, v) for v in range(12, -1, -1)]
        expected += [(ApiKey.PRODUCE, v) for v in range(9, 2, -1)]
        assert reg.built == expected  # the first APIs first, newest version first

    asyncio.run(scenario())


def test_without_an_activity_count_every_codec_is_built_at_once() -> None:
    async def scenario() -> None:
        reg = registry()
        await asyncio.wait_for(serve.warm_codecs(reg), timeout=60)
        assert len(reg.built) == 4 + 13 + 7

    asyncio.run(scenario())
