"""The SASL exchange of SASL_PLAINTEXT and SASL_SSL listeners: SaslHandshake (17) v1 and
SaslAuthenticate (36) v0-v2, PLAIN and SCRAM-SHA-256/512, as Kafka's ``SaslServerAuthenticator``.

* SaslHandshake names a mechanism. One that ``sasl.enabled.mechanisms`` does not list is answered
  UNSUPPORTED_SASL_MECHANISM with the enabled list; then the connection is closed.
* Each SaslAuthenticate carries one token. PLAIN (RFC 4616, ``PlainSaslServer``) checks
  ``[authzid] NUL user NUL password`` against the ``user_<name>="<password>"`` options of the
  listener's JAAS line (an authzid other than the user is refused). SCRAM (RFC 5802/7677,
  ``ScramSaslServer``) runs through ``scramp`` against the salted credentials the broker keeps
  (``broker.scram``), handed in by the composition root as a look-up function.
* A failed exchange is answered SASL_AUTHENTICATION_FAILED (UNSUPPORTED_SASL_MECHANISM for the
  handshake) after ``connection.failed.authentication.delay.ms`` (default 100), and the connection
  closes once that answer is written, as Kafka's ``Selector`` delays the close of a channel
  that failed authentication. The delay is wall-clock: it slows password guessing and is no
  protocol deadline, so it does not follow a test's manual clock.
* A request other than ApiVersions, SaslHandshake or SaslAuthenticate before the exchange
  succeeds closes the connection (``IllegalSaslStateException`` in Kafka); a SaslHandshake or
  SaslAuthenticate after it, or on a listener without SASL, is answered ILLEGAL_SASL_STATE (as
  Kafka's ``KafkaApis.handleSaslHandshakeRequest`` / ``handleSaslAuthenticateRequest``).

Passwords and tokens are never logged: a failure logs the listener, the mechanism and the user
name only.

SaslHandshake v0 (whose tokens follow as bare frames without a Kafka header, before KIP-152) is
not served: ApiVersions advertises v1 only, and every client tested (confluent-kafka,
kafka-python, aiokafka) uses v1.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kio.schema.sasl_authenticate.v0.response import SaslAuthenticateResponse as AuthV0
from kio.schema.sasl_authenticate.v1.response import SaslAuthenticateResponse as AuthV1
from kio.schema.sasl_authenticate.v2.response import SaslAuthenticateResponse as AuthV2
from kio.schema.sasl_handshake.v0.response import SaslHandshakeResponse as HandshakeV0
from kio.schema.sasl_handshake.v1.response import SaslHandshakeResponse as HandshakeV1
from scramp import ScramException, ScramMechanism

from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import err, make
from groupcoord.server.session import Session

log = logging.getLogger(__name__)

__all__ = [
    "SCRAM_MECHANISMS",
    "SUPPORTED_MECHANISMS",
    "SaslServerConfig",
    "ScramCredential",
    "sasl_authenticate",
    "sasl_handshake",
]

SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS)

#: Kafka's default ``connection.failed.authentication.delay.ms``.
DEFAULT_FAILED_AUTHENTICATION_DELAY_MS = 100

_AUTH = {0: AuthV0, 1: AuthV1, 2: AuthV2}
_HANDSHAKE = {0: HandshakeV0, 1: HandshakeV1}


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramCredential:
    """One user's salted SCRAM credential (Kafka's ``ScramCredential``): never the password."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


#: ``lookup(mechanism, user)``: the user's credential for a SCRAM mechanism, or None.
ScramLookup = Callable[[str, str], ScramCredential | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class SaslServerConfig:
    """One SASL listener's settings."""

    mechanisms: tuple[str, ...]
    #: PLAIN's users and passwords (from the listener's JAAS line)
    plain_users: Mapping[str, str] = field(default_factory=dict)
    scram_lookup: ScramLookup | None = None
    failed_delay_ms: int = DEFAULT_FAILED_AUTHENTICATION_DELAY_MS


#: Kafka's message for a failed SCRAM exchange (``SaslServerAuthenticator``)
_INVALID_CREDENTIALS = (
    "Authentication failed during authentication due to invalid credentials with SASL mechanism "
)


class _AuthenticationFailed(Exception):
    """A failed exchange; the message is what the client is told (no secret in it)."""


# ---------------------------------------------------------------------- mechanisms
class _Plain:
    """RFC 4616 PLAIN: one token, ``authzid NUL authcid NUL passwd``."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self.users = users
        self.user = ""

    def step(self, token: bytes) -> tuple[bytes, bool]:
        parts = token.split(b"\x00")
        if len(parts) != 3:
            raise _AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens")
        try:
            authzid, user, password = (p.decode("utf-8") for p in parts)
        except UnicodeDecodeError:
            raise _AuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
        self.user = user
        if not user:
            raise _AuthenticationFailed("Authentication failed: username not specified")
        if not password:
            raise _AuthenticationFailed("Authentication failed: password not specified")
        expected = self.users.get(user)
        # compared without an early exit on the first differing byte
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise _AuthenticationFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise _AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        return b"", True


class _Scram:
    """RFC 5802 SCRAM, two round trips, through ``scramp``."""

    def __init__(self, mechanism: str, lookup: ScramLookup | None) -> None:
        self.mechanism = mechanism
        self.lookup = lookup
        self.user = ""
        self.server = ScramMechanism(mechanism).make_server(self._auth_info)
        self.round = 0

    def _auth_info(self, user: str) -> tuple[bytes, bytes, bytes, int]:
        self.user = user
        cred = self.lookup(self.mechanism, user) if self.lookup is not None else None
        if cred is None:
            raise _AuthenticationFailed(_INVALID_CREDENTIALS + self.mechanism)
        return cred.salt, cred.stored_key, cred.server_key, cred.iterations

    def step(self, token: bytes) -> tuple[bytes, bool]:
        try:
            text = token.decode("utf-8")
            if self.round == 0:
                self.round = 1
                self.server.set_client_first(text)
                return self.server.get_server_first().encode(), False
            self.round = 2
            self.server.set_client_final(text)
            return self.server.get_server_final().encode(), True
        except (ScramException, UnicodeDecodeError, ValueError):
            raise _AuthenticationFailed(_INVALID_CREDENTIALS + self.mechanism) from None


# ---------------------------------------------------------------------- handlers
def _session(ctx: RequestContext) -> Session:
    session = ctx.session
    assert isinstance(session, Session)
    return session


def _config(session: Session) -> SaslServerConfig | None:
    sasl = session.security.sasl
    return sasl if isinstance(sasl, SaslServerConfig) else None


async def _after_delay(delay_ms: int, answer: Any, session: Session) -> Any:
    """Answer a failed authentication after Kafka's delay, then close once it is written."""
    if delay_ms > 0:
        await asyncio.sleep(delay_ms / 1000)
    session.close_after_answers()
    return answer


def sasl_handshake(_state: object, ctx: RequestContext, request: Any) -> Any:
    """SaslHandshake: pick the mechanism for the SaslAuthenticate requests that follow."""
    resp_t = _HANDSHAKE[ctx.api_version]
    session = _session(ctx)
    config = _config(session)
    if config is None or session.state != "handshake":
        # Kafka's KafkaApis answers a handshake it sees (none outside the exchange) this way; a
        # second handshake during the exchange fails it (SaslServerAuthenticator), then closes.
        enabled = config.mechanisms if config is not None else ()
        answer = make(resp_t, error_code=err(ErrorCode.ILLEGAL_SASL_STATE), mechanisms=enabled)
        if session.state != "authenticate":
            return answer
        session.state = "failed"
        return _after_delay(0, answer, session)
    mechanism = str(request.mechanism)
    if mechanism not in config.mechanisms:
        session.state = "failed"
        log.warning(
            "closing conn=%d listener=%s: SASL mechanism %r is not enabled (sasl.enabled.mechanisms=%s)",
            ctx.connection_id,
            session.listener,
            mechanism[:64],
            ",".join(config.mechanisms),
        )
        answer = make(
            resp_t, error_code=err(ErrorCode.UNSUPPORTED_SASL_MECHANISM), mechanisms=config.mechanisms
        )
        return _after_delay(config.failed_delay_ms, answer, session)
    session.mechanism = mechanism
    session.exchange = (
        _Plain(config.plain_users) if mechanism == "PLAIN" else _Scram(mechanism, config.scram_lookup)
    )
    session.state = "authenticate"
    return make(resp_t, error_code=err(ErrorCode.NONE), mechanisms=config.mechanisms)


def sasl_authenticate(_state: object, ctx: RequestContext, request: Any) -> Any:
    """SaslAuthenticate: one token of the exchange the handshake chose."""
    resp_t = _AUTH[ctx.api_version]
    session = _session(ctx)
    config = _config(session)
    if config is None or session.state != "authenticate":
        message = (
            "SaslAuthenticate request received after successful authentication"
            if session.state == "complete"
            else "Unexpected SaslAuthenticate request: no SASL handshake"
        )
        answer = _auth_response(resp_t, ErrorCode.ILLEGAL_SASL_STATE, message, b"")
        if session.state == "complete":
            return answer
        session.state = "failed"
        return _after_delay(0, answer, session)
    exchange = session.exchange
    try:
        out, done = exchange.step(bytes(request.auth_bytes))
    except _AuthenticationFailed as failure:
        session.state = "failed"
        session.exchange = None
        log.warning(
            "closing conn=%d listener=%s: SASL %s authentication failed for user %r",
            ctx.connection_id,
            session.listener,
            session.mechanism,
            getattr(exchange, "user", "")[:256],
        )
        answer = _auth_response(resp_t, ErrorCode.SASL_AUTHENTICATION_FAILED, str(failure), b"")
        return _after_delay(config.failed_delay_ms, answer, session)
    if done:
        session.state = "complete"
        session.authenticated = True
        session.principal = "User:" + exchange.user
        session.exchange = None
        log.debug(
            "conn=%d authenticated as %s via %s", ctx.connection_id, session.principal, session.mechanism
        )
    return _auth_response(resp_t, ErrorCode.NONE, None, out)


def _auth_response(resp_t: type[Any], code: ErrorCode, message: str | None, token: bytes) -> Any:
    return make(resp_t, error_code=err(code), error_message=message, auth_bytes=token)
