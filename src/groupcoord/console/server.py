"""The console's HTTP server (``console.listen``): pages, their assets, and the live streams.

Built by the composition root (``groupcoord.app``) when ``console.listen`` is set, like the
metrics endpoint: the server answers on threads of its own (the standard library's
``ThreadingHTTPServer``, run as :mod:`groupcoord.metrics.http_thread` runs both endpoints) and
reads the broker's state only through the loop (``asyncio.run_coroutine_threadsafe``): a
snapshot for a page, a :class:`~groupcoord.console.hub.Subscriber` queue for a
stream. HTML is rendered on the HTTP thread, off the loop.

Paths (GET only; the console changes nothing):

* ``/``: every group and every topic (:func:`~groupcoord.console.pages.overview_page`);
* ``/groups/<group id, URL-encoded>``: one group, or a "no such group" page (404);
* ``/events`` (``?since=<token>``) and ``/events?group=<id>``: the live updates of those pages, as
  server-sent events (``text/event-stream``): ``rows`` and ``cards`` for the overview,
  ``sections`` for a group page, each a JSON object of HTML pieces by element id;
* ``/static/ui.css``, ``/static/ui.js`` (shared with the pipeline's report), ``/static/console.js``.

Every page is sent with a Content-Security-Policy that allows scripts from the console itself
only: no inline script and no event-handler attribute runs, whatever a name holds (names are
also escaped: :mod:`groupcoord.console.pages`).

With ``console.auth=basic`` every path, the streams and the assets included, asks for a user of
the broker's own (HTTP Basic, :mod:`groupcoord.console.auth`): none or a wrong one is answered 401
with a ``WWW-Authenticate`` challenge (a wrong one after ``connection.failed.authentication.delay.ms``,
with one log line naming the user, never the password). With the authorizer on, the user must
also be allowed DESCRIBE on the cluster, else 403: the console shows every group and topic, a
cluster-wide view (as Kafka's DescribeLogDirs, which also needs DESCRIBE on the cluster).
"""

from __future__ import annotations

import json
import logging
import queue
import time
from collections.abc import Callable
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from groupcoord.broker import acl
from groupcoord.broker.state import Broker
from groupcoord.console import pages
from groupcoord.console.auth import BasicAuth, parse_basic
from groupcoord.console.history import GroupHistory, LagHistory
from groupcoord.console.hub import Hub, Message, Subscriber
from groupcoord.console.snapshot import Reader
from groupcoord.metrics.http_thread import LoopHttpEndpoint, bindable, url_host
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.ui.components import asset

log = logging.getLogger(__name__)

__all__ = ["SNAPSHOT_TIMEOUT_S", "BrokerConsole"]

#: how long a page waits for the loop's snapshot
SNAPSHOT_TIMEOUT_S = 10.0
#: a comment line sent on an idle stream this often (keeps proxies and the browser's view fresh)
KEEPALIVE_S = 15.0

#: ``console.auth=basic``'s challenge (RFC 7617: the browser asks for a user, sent as UTF-8)
_CHALLENGE = 'Basic realm="groupcoord console", charset="UTF-8"'

_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self'; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)


@cache
def _console_js() -> str:
    return resources.files(__package__).joinpath("static", "console.js").read_text(encoding="utf-8")


_STATIC: dict[str, tuple[str, Callable[[], str]]] = {
    "/static/ui.css": ("text/css; charset=utf-8", lambda: asset("ui.css")),
    "/static/ui.js": ("text/javascript; charset=utf-8", lambda: asset("ui.js")),
    "/static/console.js": ("text/javascript; charset=utf-8", _console_js),
}


class BrokerConsole(LoopHttpEndpoint):
    """One broker's live console.

    Args:
        broker, groups: the broker and its group runtime (state read on the loop; group events
            through ``GroupRuntime.event_listeners``).
        host, port: where to listen (``console.listen``; port 0 picks a free one).
        auth: the broker's users, for ``console.auth=basic`` (:mod:`groupcoord.console.auth`);
            None: no user asked for.

    :meth:`start` (on the broker's loop) binds and returns the bound (host, port), also kept in
    :attr:`address`; :meth:`stop` closes it and ends every open stream.
    """

    def __init__(
        self, *, broker: Broker, groups: GroupRuntime, host: str, port: int, auth: BasicAuth | None = None
    ) -> None:
        super().__init__(
            host=host, port=port, what="console", says="console", log=log, timeout_s=SNAPSHOT_TIMEOUT_S
        )
        self.broker = broker
        self.auth = auth
        lags = LagHistory()
        reader: Reader | None = None

        def owners(group_id: str) -> Any:
            return None if reader is None else reader.owners(group_id)

        history = GroupHistory(owners)
        reader = Reader(broker, groups, history, lags)
        self.hub = Hub(reader, history)
        groups.event_listeners.append(self.hub.on_event)

    # ------------------------------------------------------------------ lifecycle
    def make_server(self) -> _Server:
        httpd = bindable(_Server, self.host, self.port)((self.host, self.port), _Handler)
        httpd.console = self
        return httpd

    def start(self) -> tuple[str, int]:
        address = super().start()
        log.info("console on http://%s:%d/", *url_host(address))
        return address

    async def stop(self) -> None:
        """Close the server and end every stream (their threads see it within a second)."""
        self._closing.set()
        if self._loop is not None and not self._loop.is_closed():
            self.hub.close()
        await super().stop()

    async def may_describe_cluster(self, user: str, host: str) -> bool:
        """Whether ``User:<user>`` may DESCRIBE the cluster (on the loop, which owns the ACLs)."""
        return self.broker.authorizer.authorize(
            "User:" + user, host, acl.Op.DESCRIBE, acl.Resource.CLUSTER, acl.CLUSTER_NAME
        )


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "groupcoord-console"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("console: %s %s", self.address_string(), format % args)

    # ------------------------------------------------------------------ answers
    def _send(
        self,
        status: int,
        body: str,
        content_type: str = "text/html; charset=utf-8",
        headers: tuple[tuple[str, str], ...] = (),
    ) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Content-Security-Policy", _CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _unavailable(self) -> None:
        self._send(503, "The broker did not answer in time; try again.", "text/plain; charset=utf-8")

    # ------------------------------------------------------------------ console.auth
    def _admitted(self) -> bool:
        """Whether the request may be answered (``console.auth``); if not, it has been: 401
        with a challenge (no or wrong credentials), 403 (the authorizer refuses), 503."""
        console = self.server.console
        auth = console.auth
        if auth is None:
            return True
        peer = self.client_address[0]
        given = parse_basic(self.headers.get("Authorization"))
        if given is None:
            log.info(
                "console: %s %s from %s: no credentials, asked for a user", self.command, _path(self), peer
            )
            self._challenge()
            return False
        user, password = given
        if not auth.check(user, password):
            # the user name only, never the password (as the broker's SASL failures)
            log.warning("console: refused user %r from %s: unknown user or wrong password", user[:256], peer)
            if auth.failed_delay_ms > 0:  # slows guessing, as a failed SASL exchange is answered late
                time.sleep(auth.failed_delay_ms / 1000)
            self._challenge()
            return False
        if console.broker.authorizer.enabled:
            allowed = console.on_loop(lambda: console.may_describe_cluster(user, peer))
            if allowed is None:
                self._unavailable()
                return False
            if not allowed:
                log.warning("console: refused user %r from %s: no DESCRIBE on the cluster", user[:256], peer)
                self._send(
                    403,
                    "This user may not DESCRIBE the cluster, which the console needs (docs/operations.md).",
                    "text/plain; charset=utf-8",
                )
                return False
        return True

    def _challenge(self) -> None:
        self._send(
            401,
            "The console asks for a user of the broker (console.auth=basic).",
            "text/plain; charset=utf-8",
            headers=(("WWW-Authenticate", _CHALLENGE),),
        )

    # ------------------------------------------------------------------ methods
    def do_HEAD(self) -> None:
        if not self._admitted():
            return
        if urlsplit(self.path).path == "/events":
            self._send(405, "A stream has no head.", "text/plain; charset=utf-8")
        else:
            self._get()

    def do_POST(self) -> None:
        if self._admitted():
            self._send(405, "The console is read-only.", "text/plain; charset=utf-8")

    do_PUT = do_DELETE = do_PATCH = do_POST

    def do_GET(self) -> None:
        try:
            if self._admitted():
                self._get()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away

    def _get(self) -> None:
        console = self.server.console
        url = urlsplit(self.path)
        path = url.path
        try:
            if path == "/":
                self._overview(console)
            elif path.startswith("/groups/"):
                self._group(console, unquote(path[len("/groups/") :], errors="replace"))
            elif path == "/events":
                self._events(console, parse_qs(url.query))
            elif path in _STATIC:
                content_type, text = _STATIC[path]
                self._send(200, text(), content_type)
            elif path == "/favicon.ico":
                self.send_response(204)
                self.end_headers()
            else:
                self._send(404, pages.not_found_page(path))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the browser went away

    def _overview(self, console: BrokerConsole) -> None:
        got = console.on_loop(console.hub.overview)
        if got is None:
            return self._unavailable()
        ov, since = got
        self._send(200, pages.overview_page(ov, node_id=console.broker.node_id, since=since))

    def _group(self, console: BrokerConsole, group_id: str) -> None:
        async def read() -> Any:
            return (console.hub.group(group_id),)  # (None,): no such group

        got = console.on_loop(read)
        if got is None:
            return self._unavailable()
        detail = got[0]
        if detail is None:
            self._send(404, pages.no_such_group_page(group_id))
        else:
            self._send(200, pages.group_page(detail))

    def _events(self, console: BrokerConsole, query: dict[str, list[str]]) -> None:
        group_id = query.get("group", [None])[0]
        since = query.get("since", [""])[0]
        sub = Subscriber(group_id)

        async def add() -> bool:
            console.hub.subscribe(sub, since)
            return True

        async def remove() -> bool:
            console.hub.unsubscribe(sub)
            return True

        if console.on_loop(add) is None:
            return self._unavailable()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.end_headers()
            self.wfile.write(b"retry: 2000\n\n")
            self.wfile.flush()
            self._stream(console, sub)
        finally:
            console.on_loop(remove)

    def _stream(self, console: BrokerConsole, sub: Subscriber) -> None:
        idle = 0.0
        while not console._closing.is_set():
            try:
                message = sub.queue.get(timeout=1.0)
            except queue.Empty:
                idle += 1.0
                if idle >= KEEPALIVE_S:
                    idle = 0.0
                    self.wfile.write(b": keepalive\n\n")
                    self.wfile.flush()
                continue
            idle = 0.0
            if message[0] == "close":
                return
            event, data = _render(message)
            self.wfile.write(f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode())
            self.wfile.flush()


def _render(message: Message) -> tuple[str, Any]:
    """A hub message as a server-sent event: its name and its JSON data."""
    kind, payload = message
    if kind == "rows":
        summaries, removed, now_ms = payload
        return "rows", pages.rows_payload(summaries, removed, now_ms)
    if kind == "cards":
        summaries, topics = payload
        return "sections", {
            "sections": [["cards", pages.cards(summaries)], ["topics", pages.topics_section(topics)]]
        }
    group_id, detail = payload
    sections = pages.gone_sections(group_id) if detail is None else pages.group_sections(detail)
    return "sections", {"sections": [list(s) for s in sections]}


def _path(handler: BaseHTTPRequestHandler) -> str:
    """The request's path for a log line (its query left out, at most 200 characters)."""
    return urlsplit(handler.path).path[:200]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    console: BrokerConsole
