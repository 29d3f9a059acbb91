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
  that failed authentication (``Session.answer_after_delay``).
* A request out of turn (before the handshake, or anything but SaslAuthenticate after it) is
  ``Session.verdict``'s: ILLEGAL_SASL_STATE as Kafka's ``SaslServerAuthenticator`` answers it.
  A SaslHandshake or SaslAuthenticate after authenticating, or on a listener without SASL,
  reaches these handlers and is answered ILLEGAL_SASL_STATE with the connection kept (Kafka's
  ``KafkaApis.handleSaslHandshakeRequest`` / ``handleSaslAuthenticateRequest``), unless the
  SaslHandshake starts a re-authentication (KIP-368, ``connections.max.reauth.ms``): then the
  exchange runs again, with the same mechanism and principal, and a successful one answers the
  session's lifetime (SaslAuthenticate v1+).

Passwords and tokens are never logged: a failure logs the listener, the mechanism and the user
name only.

SaslHandshake v0 (whose tokens follow as bare frames without a Kafka header, before KIP-152) is
not served: ApiVersions advertises v1 only, and every client tested (confluent-kafka,
kafka-python, aiokafka) uses v1.
"""

from __future__ import annotations

import dataclasses
import datetime
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
from kio.static.primitive import i64Timedelta
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
    #: ``connections.max.reauth.ms`` of each mechanism (KIP-368; 0 or absent: sessions do not end)
    max_reauth_ms: Mapping[str, int] = field(default_factory=dict)


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


def sasl_handshake(_state: object, ctx: RequestContext, request: Any) -> Any:
    """SaslHandshake: pick the mechanism for the SaslAuthenticate requests that follow."""
    resp_t = _HANDSHAKE[ctx.api_version]
    session = _session(ctx)
    config = _config(session)
    if config is None or session.authenticated:
        # after authenticating (without a session lifetime to re-authenticate in), or on a
        # listener without SASL: KafkaApis.handleSaslHandshakeRequest, no mechanisms listed,
        # the connection stays open
        return make(resp_t, error_code=err(ErrorCode.ILLEGAL_SASL_STATE), mechanisms=())
    mechanism = str(request.mechanism)
    if mechanism not in config.mechanisms:
        log.warning(
            "closing conn=%d listener=%s: SASL mechanism %r is not enabled (sasl.enabled.mechanisms=%s)",
            ctx.connection_id,
            session.listener,
            mechanism[:64],
            ",".join(config.mechanisms),
        )
        session.fail()
        answer = make(
            resp_t, error_code=err(ErrorCode.UNSUPPORTED_SASL_MECHANISM), mechanisms=config.mechanisms
        )
        return session.answer_after_delay(answer)
    answer = make(resp_t, error_code=err(ErrorCode.NONE), mechanisms=config.mechanisms)
    if session.reauthenticating and mechanism != session.mechanism:
        # ReauthInfo.saslMechanismUnchanged: the handshake is answered, the next request fails
        # the re-authentication (REAUTH_BAD_MECHANISM), without an answer; its one log line
        # is written then (Session.refuse)
        session.why = f"re-authentication with SASL mechanism {mechanism[:64]}, not {session.mechanism}"
        session.state = "bad_mechanism"
        return answer
    session.mechanism = mechanism
    session.exchange = (
        _Plain(config.plain_users) if mechanism == "PLAIN" else _Scram(mechanism, config.scram_lookup)
    )
    session.state = "authenticate"
    return answer


def sasl_authenticate(_state: object, ctx: RequestContext, request: Any) -> Any:
    """SaslAuthenticate: one token of the exchange the handshake chose."""
    resp_t = _AUTH[ctx.api_version]
    session = _session(ctx)
    config = _config(session)
    if config is None or session.authenticated:
        # KafkaApis.handleSaslAuthenticateRequest; the connection stays open
        message = "SaslAuthenticate request received after successful authentication"
        return _auth_response(resp_t, ErrorCode.ILLEGAL_SASL_STATE, message, b"")
    exchange = session.exchange
    failure: str | None = None
    try:
        out, done = exchange.step(bytes(request.auth_bytes))
    except _AuthenticationFailed as failed:
        failure = str(failed)
        out, done = b"", False
    principal = "User:" + exchange.user
    if failure is None and done and session.reauthenticating and principal != session.principal:
        # ReauthInfo.ensurePrincipalUnchanged
        old_type, _, old_name = session.principal.partition(":")
        failure = (
            "Cannot change principals during re-authentication from "
            f"{old_type}.{old_name}: User.{exchange.user}"
        )
    if failure is not None:
        log.warning(
            "closing conn=%d listener=%s: SASL %s %s failed for user %r",
            ctx.connection_id,
            session.listener,
            session.mechanism,
            "re-authentication" if session.reauthenticating else "authentication",
            getattr(exchange, "user", "")[:256],
        )
        session.fail()
        answer = _auth_response(resp_t, ErrorCode.SASL_AUTHENTICATION_FAILED, failure, b"")
        return session.answer_after_delay(answer)
    lifetime_ms = 0
    if done:
        session.state = "complete"
        session.authenticated = True
        again = session.reauthenticating
        session.reauthenticating = False
        session.principal = principal
        session.exchange = None
        max_reauth_ms = config.max_reauth_ms.get(session.mechanism, 0)
        if max_reauth_ms > 0:  # KIP-368: the session ends; the client re-authenticates
            lifetime_ms = max_reauth_ms
            session.expires_ms = session.now_ms() + lifetime_ms
        session.guarded = session.expires_ms is not None
        log.debug(
            "conn=%d %s as %s via %s",
            ctx.connection_id,
            "re-authenticated" if again else "authenticated",
            session.principal,
            session.mechanism,
        )
    answer = _auth_response(resp_t, ErrorCode.NONE, None, out)
    if lifetime_ms and ctx.api_version >= 1:
        answer = dataclasses.replace(
            answer, session_lifetime=i64Timedelta.parse(datetime.timedelta(milliseconds=lifetime_ms))
        )
    return answer


def _auth_response(resp_t: type[Any], code: ErrorCode, message: str | None, token: bytes) -> Any:
    return make(resp_t, error_code=err(code), error_message=message, auth_bytes=token)
