"""The dispatcher the connection hands decoded requests to: api key -> (version range, handler).

The server knows no handler: the composition root (:mod:`groupcoord.app`) builds a
:class:`Dispatcher` from its route table (:class:`~groupcoord.handling.Route` lines keyed by
:class:`~groupcoord.protocol.api_keys.ApiKey`). The registry the connection decodes with, and
therefore what ApiVersions advertises, is exactly the set of added (key, versions).

A handler is called as ``handler(state, ctx, request)`` and returns the response entity (of
the request's version), ``None`` for "no response on the wire" (Produce with acks=0), or an
awaitable of either; an :data:`~groupcoord.handling.Interceptor`, when given, is called
instead and decides whether to proceed. Work that must happen in request order (appends) is done before the
handler returns; only waiting (fsync, long-poll, parked joins) goes in the awaitable.

While a request's awaitable is pending, its connection hands no later request to a handler
(see ``server.connection``), as Kafka's socket server mutes a connection until its answer is
sent. A route added with an ``overlap`` class relaxes that within a run of requests of that
class: such a request is handed over while earlier requests are still pending if every one of
them is of the same class. Give a class only where that cannot be observed: for any two
requests A before B of the class on one connection, handling B while A waits must give the
outcomes that handling B after A's answer gives. That is, B's handling reads nothing that A's
pending part changes, and A's answer does not depend on B. Two such classes are used:

* ``"produce"``: a Produce appends (readable at the log end at once) and records the
  producer's sequence before its handler returns; only the fsync of acks=-1 is awaited.
* ``"offset-commit"``: an OffsetCommit validates against the group's membership and generation
  (which no commit changes) and queues its records before the handler returns (they are
  written at the end of the loop tick, per ``__consumer_offsets`` partition in the order they
  were queued); what it awaits is its own write, after which its offsets are applied. Writes
  of one group go to one partition and complete in order, so the committed offsets end as in
  sequence, and each commit's answer depends only on its own write. An OffsetFetch, or any
  other request, behind the run still waits for every commit of the run to be answered.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from groupcoord.handling import Handler, HandlerResult, Interceptor, RequestContext, Route
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.registry import ApiMessages, ApiRegistry

S = TypeVar("S")

__all__ = ["Dispatcher", "Handler", "HandlerResult", "RequestObserver", "Route", "RouteEntry"]

#: Told of every answered request: its API key and the seconds from the handler's call until
#: its answer was ready (the metrics endpoint's request histograms). Runs on the event loop,
#: once per request: keep it cheap.
RequestObserver = Callable[[int, float], None]


class RouteEntry:
    """What the connection needs to handle a request of one (api key, version)
    (:meth:`Dispatcher.entry`): its messages, its handler (None: no route, so
    :meth:`Dispatcher.call` reports it), and its overlap class."""

    __slots__ = ("handler", "messages", "overlap")

    def __init__(self, messages: ApiMessages, handler: Handler[Any] | None, overlap: str | None) -> None:
        self.messages = messages
        self.handler = handler
        self.overlap = overlap


class Dispatcher(Generic[S]):
    """The routes of one server, each handler called with ``state``.

    Args:
        state: what every handler gets first (the broker).
        routes: the route table (more may be added with :meth:`add_route` before serving).
        registry: the registry to fill (one the state already holds, so that ApiVersions
            reads the same table); a new one if not given.
        interceptor: called instead of each handler (see :data:`groupcoord.handling.Interceptor`).

    :attr:`observe`, when set (before serving), is told of each answered request
    (:data:`RequestObserver`); the connection calls it.
    """

    def __init__(
        self,
        state: S,
        routes: Iterable[Route[S]] = (),
        *,
        registry: ApiRegistry | None = None,
        interceptor: Interceptor | None = None,
    ) -> None:
        self.state = state
        self.registry = registry if registry is not None else ApiRegistry()
        self.interceptor = interceptor
        self.observe: RequestObserver | None = None
        self._routes: dict[int, Route[S]] = {}
        self._overlap: dict[int, str] = {}
        #: (api key, version) -> what the connection needs per request, made on first use
        self._entries: dict[int, RouteEntry] = {}
        for route in routes:
            self.add_route(route)

    def add_route(self, route: Route[S]) -> None:
        key = int(route.api_key)
        self.registry.register(key, route.min_version, route.max_version)
        self._entries.clear()
        self._routes[key] = route
        if route.overlap is not None:
            self._overlap[key] = route.overlap
        else:
            self._overlap.pop(key, None)

    def add(
        self,
        api_key: int,
        min_version: int,
        max_version: int,
        handler: Handler[S],
        *,
        overlap: str | None = None,
    ) -> None:
        self.add_route(
            Route(
                api_key=ApiKey(api_key),
                min_version=min_version,
                max_version=max_version,
                handler=handler,
                overlap=overlap,
            )
        )

    def overlap_class(self, api_key: int) -> str | None:
        """The overlap class of an API's requests (None: none; unknown APIs have none)."""
        return self._overlap.get(api_key)

    def route(self, api_key: int) -> Route[S]:
        return self._routes[api_key]

    def entry(self, api_key: int, api_version: int) -> RouteEntry:
        """One (api key, version)'s messages, handler and overlap class, in one look-up.

        Raises the registry's :class:`~groupcoord.protocol.registry.UnknownApiError` or
        :class:`~groupcoord.protocol.registry.UnsupportedVersionError` as its ``lookup`` does.
        A handler with a ``for_version(version)`` method (one that answers some versions
        differently, e.g. ``broker.offsets_v0.old_or``) is asked once here for the handler of
        this version, so a request goes straight to it.
        """
        slot = (api_key << 16) | (api_version & 0xFFFF)
        entry = self._entries.get(slot)
        if entry is None:
            messages = self.registry.lookup(api_key, api_version)
            route = self._routes.get(api_key)
            handler: Handler[S] | None = None
            if route is not None:
                handler = route.handler
                for_version = getattr(handler, "for_version", None)
                if for_version is not None:
                    handler = for_version(api_version)
            entry = self._entries[slot] = RouteEntry(messages, handler, self._overlap.get(api_key))
        return entry

    def call(self, ctx: RequestContext, request: Any) -> HandlerResult:
        if self.interceptor is not None:
            return self.interceptor(ctx, request, self._proceed)
        return self._handler(ctx)(self.state, ctx, request)

    def _proceed(self, ctx: RequestContext, request: Any) -> HandlerResult:
        return self._handler(ctx)(self.state, ctx, request)

    def _handler(self, ctx: RequestContext) -> Handler[S]:
        """The handler of the request's version (:meth:`entry`: a ``for_version`` handler is
        resolved once, so no per-request forwarder runs behind an interceptor either)."""
        handler = self.entry(ctx.api_key, ctx.api_version).handler
        return self._routes[ctx.api_key].handler if handler is None else handler
