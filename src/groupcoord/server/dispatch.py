"""The dispatch table: api key -> (version range, handler).

Adding an API is one handler module plus one :meth:`Dispatcher.add` line; the registry the
connection decodes with, and therefore what ApiVersions advertises, is exactly the set of
added (key, versions).

A handler is called as ``handler(state, ctx, request)`` and returns the response entity (of
the request's version), ``None`` for "no response on the wire" (Produce with acks=0), or an
awaitable of either. Work that must happen in request order (appends) is done before the
handler returns; only waiting (fsync, long-poll, parked joins) goes in the awaitable.
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


class Dispatcher(Generic[S]):
    def __init__(self, state: S) -> None:
        self.state = state
        self.registry = ApiRegistry()
        self._routes: dict[int, Route[S]] = {}

    def add(self, api_key: int, min_version: int, max_version: int, handler: Handler[S]) -> None:
        self.registry.register(api_key, min_version, max_version)
        self._routes[api_key] = Route(
            api_key=api_key, min_version=min_version, max_version=max_version, handler=handler
        )

    def route(self, api_key: int) -> Route[S]:
        return self._routes[api_key]

    def call(self, ctx: RequestContext, request: Any) -> HandlerResult:
        return self._routes[ctx.api_key].handler(self.state, ctx, request)
