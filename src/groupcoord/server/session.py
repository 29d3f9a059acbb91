"""Who is on a connection: its listener, security protocol and principal, and whether it has
authenticated (Kafka's ``KafkaChannel`` with its ``Authenticator`` and ``KafkaPrincipal``).

A connection on a PLAINTEXT or SSL listener is authenticated once it is accepted (SSL: by its
TLS handshake; the principal is the client certificate's, or ``User:ANONYMOUS``). On a
SASL_PLAINTEXT or SASL_SSL listener it is not, until the SASL exchange (``server.sasl``)
succeeds; until then only ApiVersions, SaslHandshake and SaslAuthenticate are admitted, as in
Kafka's ``SaslServerAuthenticator`` (any other request closes the connection).
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from groupcoord.protocol.api_keys import ApiKey

__all__ = ["ANONYMOUS", "ListenerSecurity", "Session"]

ANONYMOUS = "User:ANONYMOUS"

#: What a SASL connection may send before it has authenticated.
_BEFORE_AUTH = frozenset(
    {int(ApiKey.API_VERSIONS), int(ApiKey.SASL_HANDSHAKE), int(ApiKey.SASL_AUTHENTICATE)}
)


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

    def new_session(self) -> Session:
        return Session(self)


class Session:
    """One connection's security state."""

    __slots__ = (
        "authenticated",
        "close_after_answers",
        "exchange",
        "listener",
        "mechanism",
        "principal",
        "security",
        "state",
    )

    def __init__(self, security: ListenerSecurity | None = None) -> None:
        self.security = security if security is not None else _PLAINTEXT
        self.listener = self.security.name
        self.principal = ANONYMOUS
        #: False until the SASL exchange succeeds (True at once on a non-SASL listener)
        self.authenticated = self.security.sasl is None
        #: SASL progress: "handshake" (ApiVersions or SaslHandshake expected), "authenticate"
        #: (SaslAuthenticate expected), "complete", "failed"
        self.state = "complete" if self.authenticated else "handshake"
        self.mechanism = ""
        #: the mechanism's server-side exchange while authenticating
        self.exchange: Any = None
        #: set by the connection: close once every answer owed is written
        self.close_after_answers: Callable[[], None] = _nothing

    def admits(self, api_key: int) -> bool:
        """Whether a request of ``api_key`` may be handled now."""
        return self.authenticated or api_key in _BEFORE_AUTH


def _nothing() -> None:
    return None


_PLAINTEXT = ListenerSecurity()
