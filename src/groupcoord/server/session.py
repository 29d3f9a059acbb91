"""Who is on a connection: its listener, security protocol and principal, and whether it has
authenticated (Kafka's ``KafkaChannel`` with its ``Authenticator`` and ``KafkaPrincipal``).

A connection on a PLAINTEXT or SSL listener is authenticated once it is accepted (SSL: by its
TLS handshake; the principal is the client certificate's, or ``User:ANONYMOUS``). On a
SASL_PLAINTEXT or SASL_SSL listener it is not, until the SASL exchange (``server.sasl``)
succeeds. Until then :meth:`Session.verdict` says what becomes of each request, as Kafka's
``SaslServerAuthenticator`` treats it (``authenticate``, ``handleKafkaRequest``,
``handleSaslToken``) and its ``Selector`` closes the channel:

* before the handshake: ApiVersions (once) and SaslHandshake are handled; any other request
  (SaslAuthenticate included) is an ``IllegalSaslStateException`` raised before the request is
  parsed, so no answer is built: the connection closes after
  ``connection.failed.authentication.delay.ms`` without one;
* a second ApiVersions before the handshake is Kafka's ``IllegalStateException``, not an
  authentication failure: the connection closes at once, without an answer;
* after the handshake only SaslAuthenticate is expected: any other request (a second
  SaslHandshake, ApiVersions, Metadata ...) is answered with that API's error answer carrying
  ILLEGAL_SASL_STATE (``request.getErrorResponse``), after the delay, and the connection closes.

Re-authentication (KIP-368): with ``connections.max.reauth.ms`` > 0 a successful exchange tells
the client (SaslAuthenticate v1+ ``session_lifetime_ms``) when its session ends. A SaslHandshake
on an authenticated connection then starts a new exchange (``KafkaChannel
.maybeBeginServerReauthentication``: at most one a second; the mechanism and the principal must
stay the same), and any other request after the session has ended closes the connection
(``SocketServer``: "Disconnecting expired channel"). Without a session lifetime a SaslHandshake
after authenticating is answered ILLEGAL_SASL_STATE (``KafkaApis.handleSaslHandshakeRequest``).
The session's time is the server's clock (the manual clock under ``groupcoord.testing``).
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from groupcoord.errors import ErrorCode
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.error_answers import error_answer

log = logging.getLogger(__name__)

__all__ = ["ANONYMOUS", "CLOSE", "DROP", "HANDLE", "REFUSE", "ListenerSecurity", "Session"]

ANONYMOUS = "User:ANONYMOUS"

#: What becomes of a request on a connection that has not authenticated (:meth:`Session.verdict`)
HANDLE = 0  #: part of the exchange: its handler answers it
DROP = 1  #: IllegalSaslStateException with no answer: close after the failed-authentication delay
REFUSE = 2  #: IllegalSaslStateException: its error answer (ILLEGAL_SASL_STATE) after the delay, then close
CLOSE = 3  #: not an authentication failure (IllegalStateException): close at once, no answer

_API_VERSIONS = int(ApiKey.API_VERSIONS)
_SASL_HANDSHAKE = int(ApiKey.SASL_HANDSHAKE)
_SASL_AUTHENTICATE = int(ApiKey.SASL_AUTHENTICATE)

#: Kafka's ``KafkaChannel.MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS``
MIN_REAUTH_INTERVAL_MS = 1000


@dataclass(frozen=True, slots=True, kw_only=True)
class ListenerSecurity:
    """One listener's security: its name and protocol, the TLS context (SSL, SASL_SSL), the
    principal mapper of client certificates, and the SASL settings (SASL_*; ``server.sasl``)."""

    name: str = "PLAINTEXT"
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    #: ``dn -> name`` (``server.tls.PrincipalMapper.name``)
    map_principal: Callable[[str], str] | None = None
    #: ``server.sasl.SaslServerConfig`` for SASL listeners
    sasl: Any = None
    #: the broker node this listener belongs to (several brokers in one process)
    node_id: int = 0

    def new_session(self, now_ms: Callable[[], int] | None = None) -> Session:
        return Session(self, now_ms)


class Session:
    """One connection's security state."""

    __slots__ = (
        "authenticated",
        "close_after_answers",
        "exchange",
        "expires_ms",
        "guarded",
        "listener",
        "mechanism",
        "now_ms",
        "principal",
        "reauth_started_ms",
        "reauthenticating",
        "security",
        "state",
        "why",
    )

    def __init__(
        self, security: ListenerSecurity | None = None, now_ms: Callable[[], int] | None = None
    ) -> None:
        self.security = security if security is not None else _PLAINTEXT
        self.listener = self.security.name
        self.principal = ANONYMOUS
        #: False until the SASL exchange succeeds (True at once on a non-SASL listener), and
        #: while a re-authentication runs
        self.authenticated = self.security.sasl is None
        #: SASL progress: "start" (ApiVersions or SaslHandshake expected), "versions" (ApiVersions
        #: answered: SaslHandshake expected), "authenticate" (SaslAuthenticate expected),
        #: "complete", "failed"
        self.state = "complete" if self.authenticated else "start"
        self.mechanism = ""
        #: the mechanism's server-side exchange while authenticating
        self.exchange: Any = None
        #: the server's clock (re-authentication's session lifetime)
        self.now_ms: Callable[[], int] = now_ms if now_ms is not None else _zero
        #: when the authenticated session ends (KIP-368), or None: it does not
        self.expires_ms: int | None = None
        #: when the last re-authentication started, or None: none yet
        self.reauth_started_ms: int | None = None
        #: a re-authentication is running (the mechanism and principal must stay the same)
        self.reauthenticating = False
        #: each request needs :meth:`verdict` first: not authenticated, or the session can end
        #: (one flag, so that the request path of a plain connection tests one attribute)
        self.guarded = not self.authenticated
        #: why :meth:`verdict` said :data:`CLOSE` (the connection's one log line)
        self.why = ""
        #: set by the connection: close once every answer owed is written
        self.close_after_answers: Callable[[], None] = _nothing

    def verdict(self, api_key: int) -> int:
        """What becomes of a request of ``api_key`` on a :attr:`guarded` connection:
        :data:`HANDLE`, :data:`DROP`, :data:`REFUSE` or :data:`CLOSE` (module docstring)."""
        state = self.state
        if state == "complete":  # authenticated, with a session lifetime
            if api_key == _SASL_HANDSHAKE and self._may_reauthenticate():
                self.authenticated = False
                self.reauthenticating = True
                self.state = "versions"
                return HANDLE
            if self.expires_ms is not None and self.now_ms() > self.expires_ms:
                self.why = "SASL session expired (connections.max.reauth.ms) without re-authentication"
                return CLOSE
            return HANDLE
        if state == "authenticate":
            return HANDLE if api_key == _SASL_AUTHENTICATE else REFUSE
        if state == "start":
            if api_key == _API_VERSIONS:
                self.state = "versions"
                return HANDLE
            return HANDLE if api_key == _SASL_HANDSHAKE else DROP
        if state == "versions":
            if api_key == _SASL_HANDSHAKE:
                return HANDLE
            if api_key == _API_VERSIONS:
                self.why = "a second ApiVersions request before the SASL handshake"
                return CLOSE
            return DROP
        if state == "bad_mechanism":  # Kafka's REAUTH_BAD_MECHANISM: the next request fails
            return DROP
        self.why = "a request after the SASL exchange failed"
        return CLOSE

    def versions_unanswered(self) -> None:
        """The ApiVersions :meth:`verdict` let through asked for a version not served: answered
        UNSUPPORTED_VERSION, it does not count (``handleApiVersionsRequest`` moves to
        HANDSHAKE_REQUEST only after a valid one), so the client may ask again."""
        if self.state == "versions" and not self.reauthenticating:
            self.state = "start"

    def _may_reauthenticate(self) -> bool:
        """Whether a SaslHandshake now starts a re-authentication
        (``KafkaChannel.maybeBeginServerReauthentication``): the session has a lifetime, and no
        re-authentication started less than a second ago. Records the start when it does."""
        if self.expires_ms is None:
            return False
        now = self.now_ms()
        started = self.reauth_started_ms
        if started is not None and now - started < MIN_REAUTH_INTERVAL_MS:
            return False
        self.reauth_started_ms = now
        return True

    def refuse(
        self, verdict: int, connection_id: int, api_key: int, request: Any, response_type: type[Any]
    ) -> Coroutine[Any, Any, Any]:
        """Fail the exchange over a request it did not expect (:data:`DROP`, :data:`REFUSE`):
        one log line, nothing more is read, and after ``connection.failed.authentication
        .delay.ms`` the answer (REFUSE: the API's error answer with ILLEGAL_SASL_STATE; DROP:
        none), then the connection closes."""
        during = "handshake" if self.state in ("start", "versions") else "authentication"
        if self.reauthenticating:
            during = "re-authentication"
        if self.state == "bad_mechanism":
            log.warning("closing conn=%d listener=%s: %s", connection_id, self.listener, self.why)
        else:
            log.warning(
                "closing conn=%d listener=%s: unexpected request (API key %d) during SASL %s: "
                "ILLEGAL_SASL_STATE",
                connection_id,
                self.listener,
                api_key,
                during,
            )
        self.fail()
        answer = None
        if verdict == REFUSE:
            answer = error_answer(api_key, response_type, request, ErrorCode.ILLEGAL_SASL_STATE)
        return self.answer_after_delay(answer)

    def fail(self) -> None:
        """The exchange failed: nothing more is read; the connection closes once the answers
        owed are written."""
        self.state = "failed"
        self.authenticated = False
        self.guarded = True
        self.exchange = None
        self.close_after_answers()

    async def answer_after_delay(self, answer: Any) -> Any:
        """``answer`` after ``connection.failed.authentication.delay.ms`` (Kafka's ``Selector``
        delays a failed channel's answer and close). Wall-clock: it slows password guessing and
        is no protocol deadline, so it does not follow a test's manual clock."""
        delay_ms = getattr(self.security.sasl, "failed_delay_ms", 0)
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        return answer


def _nothing() -> None:
    return None


def _zero() -> int:
    return 0


_PLAINTEXT = ListenerSecurity()
