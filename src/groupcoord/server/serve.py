"""Process-level helpers of a serving broker: codec warm-up, ``gc.freeze``, malloc tuning, the loop.

What ``groupcoord serve`` wires and runs lives in the composition root (:mod:`groupcoord.app`);
this module knows only the protocol registry and the interpreter.
"""

from __future__ import annotations

import asyncio
import ctypes
import gc
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.registry import ApiRegistry

log = logging.getLogger(__name__)


#: The requests a consumer or producer sends first, built before the rest: bootstrap, group
#: membership, offsets, then data. Highest versions first within each (clients ask for the
#: newest version both sides support).
_FIRST_APIS = (
    ApiKey.API_VERSIONS,
    ApiKey.METADATA,
    ApiKey.FIND_COORDINATOR,
    ApiKey.JOIN_GROUP,
    ApiKey.SYNC_GROUP,
    ApiKey.HEARTBEAT,
    ApiKey.OFFSET_FETCH,
    ApiKey.OFFSET_COMMIT,
    ApiKey.LEAVE_GROUP,
    ApiKey.LIST_OFFSETS,
    ApiKey.FETCH,
    ApiKey.PRODUCE,
    ApiKey.INIT_PRODUCER_ID,
)


async def warm_codecs(registry: ApiRegistry) -> None:
    """Build every advertised (api, version) codec in the background after listening.

    Codecs are built lazily so that start-up stays short; building one costs up to ~15 ms,
    which a client would otherwise pay on its first request of each kind (a consumer's first
    Fetch, say). Here they are built one at a time between other work on the loop, those
    clients use first before the others.
    """
    ranges = {api_key: (low, high) for api_key, low, high in registry.ranges()}
    order = [k for k in _FIRST_APIS if k in ranges] + sorted(k for k in ranges if k not in _FIRST_APIS)
    for api_key in order:
        low, high = ranges[api_key]
        for version in range(high, low - 1, -1):
            registry.lookup(api_key, version)
            await asyncio.sleep(0)


#: Allocations between two young-generation collections while serving (CPython's default: 700).
#: A commit allocates a few dozen container objects that reference counting frees again; at the
#: default a young collection ran every few dozen commits and took about 3.5% of the event
#: loop's time under the many-groups workload (py-spy). A collection costs what survives it,
#: not what was allocated, so collecting 30 times less often costs about 30 times less, and
#: one collection walks at most this many young objects (about a millisecond).
YOUNG_COLLECTION_THRESHOLD = 20_000


async def settle(registry: ApiRegistry, loaded: asyncio.Event) -> None:
    """Warm the codecs, wait for ``__consumer_offsets`` to load, then freeze what exists.

    Everything alive at that point (modules, codecs, the groups just loaded) lives as long as
    the process; ``gc.freeze`` moves it out of the collector's generations, so that a full
    collection later scans only what was made since (about 30 ms saved per full collection
    on this code base's start-up objects alone). No collection is forced first: it would stall
    the loop for as long, and the start-up garbage it would free is small.

    Then the young generation's threshold is raised (:data:`YOUNG_COLLECTION_THRESHOLD`).
    """
    await warm_codecs(registry)
    await loaded.wait()
    gc.freeze()
    gc.set_threshold(YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
    log.debug("codecs built and start-up objects frozen")


#: glibc ``mallopt`` parameters (malloc.h) and the values the broker sets.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
_MMAP_THRESHOLD_BYTES = 16 * 1024 * 1024
_TRIM_THRESHOLD_BYTES = 64 * 1024 * 1024


def tune_malloc() -> bool:
    """Keep request-sized buffers (up to 16 MiB) on the heap instead of fresh mappings.

    With glibc's defaults every Produce request of about 1 MB is read into a buffer that is
    mmap'ed and unmapped again, and the page faults of that cost about half the broker's CPU
    on uncompressed produce (measured: 0.21-0.39 s of CPU per 100 MB before, 0.11-0.17 s
    after). Freed heap memory above 64 MiB is still given back to the system. Returns
    whether the settings took (False off glibc).
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = bool(mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES))
    return bool(mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES)) and ok


def event_loop_runner() -> Callable[[Coroutine[Any, Any, None]], None]:
    """``uvloop.run`` when uvloop is installed, else ``asyncio.run``.

    Only the import is guarded: the server itself runs outside any ``except`` block, so its
    errors are not reported as raised "during handling of" the ImportError.
    """
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    runner: Callable[[Coroutine[Any, Any, None]], None] = uvloop.run
    return runner
