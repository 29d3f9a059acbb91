"""The dispatch table: api key -> (version range, handler).

Adding an API is one handler module plus one :meth:`Dispatcher.add` line; the registry the
connection decodes with, and therefore what ApiVersions advertises, is exactly the set of
added (key, versions).

A handler is called as ``handler(state, ctx, request)`` and returns the response entity (of
the request's version), ``None`` for "no response on the wire" (Produce with acks=0), or an
awaitable of either. Work that must happen in request order (appends) is done before the
handler returns; only waiting (fsync, long-poll, parked joins) goes in the awaitable.

While a request's awaitable is pending, its connection hands no later request to a handler
(see ``server.connection``), as Kafka's socket server mutes a connection until its answer is
sent. A route added with ``overlap=True`` relaxes that for runs of its own kind: it may be
handed over while earlier requests of overlapping routes are still pending. Set it only when
that cannot be observed: the handler applies every effect before it returns, visible to every
later request at once, and its awaitable only waits (for durability) with an outcome that no
later request's handling changes or depends on. Produce is such a route (appends are read at
the log end; the awaitable waits for the fsync).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from groupcoord.protocol.registry import ApiRegistry
from groupcoord.server.context import RequestContext

S = TypeVar("S")

HandlerResult = Any | None | Awaitable[Any | None]
Handler = Callable[[S, RequestContext, Any], HandlerResult]


@dataclass(frozen=True, slots=True, kw_only=True)
class Route(Generic[S]):
    api_key: int
    min_version: int
    max_version: int
    handler: Handler[S]
    #: may be handled while earlier requests of overlapping routes still wait (module docstring)
    overlap: bool = False


class Dispatcher(Generic[S]):
    def __init__(self, state: S) -> None:
        self.state = state
        self.registry = ApiRegistry()
        self._routes: dict[int, Route[S]] = {}
        self._overlapping: set[int] = set()

    def add(
        self,
        api_key: int,
        min_version: int,
        max_version: int,
        handler: Handler[S],
        *,
        overlap: bool = False,
    ) -> None:
        self.registry.register(api_key, min_version, max_version)
        self._routes[api_key] = Route(
            api_key=api_key,
            min_version=min_version,
            max_version=max_version,
            handler=handler,
            overlap=overlap,
        )
        if overlap:
            self._overlapping.add(api_key)
        else:
            self._overlapping.discard(api_key)

    def overlaps(self, api_key: int) -> bool:
        """Whether requests of this API may wait alongside earlier ones of overlapping APIs."""
        return api_key in self._overlapping

    def route(self, api_key: int) -> Route[S]:
        return self._routes[api_key]

    def call(self, ctx: RequestContext, request: Any) -> HandlerResult:
        return self._routes[ctx.api_key].handler(self.state, ctx, request)
