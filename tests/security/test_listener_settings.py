"""Security settings of one listener, end to end: ``ssl.client.auth=requested``, an encrypted
PEM key opened with ``ssl.key.password``, ``sasl.enabled.mechanisms`` overridden per listener, and
``connection.failed.authentication.delay.ms``.

Kafka's facts: ``DefaultSslEngineFactory`` (``requested`` asks for a certificate and accepts a
client without one: ``SSLEngine.setWantClientAuth``; ``ssl.key.password`` decrypts the keystore's
key), ``DefaultKafkaPrincipalBuilder`` (``User:ANONYMOUS`` without a certificate),
``SaslChannelBuilder`` / ``ListenerName.configPrefix`` (per-listener keys), ``Selector``'s
``DelayedAuthenticationFailureClose`` (the failure answered no sooner than the delay).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
import trustme
from confluent_kafka.admin import AdminClient
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    PrivateFormat,
    load_pem_private_key,
)

from groupcoord.config import BrokerConfig
from groupcoord.errors import ConfigError, ErrorCode
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.server.tls import build_server_context
from groupcoord.testing import Broker
from wire_testing import wire_client

USERS = {"alice": "alice-secret"}


def _wait_for(cond: Callable[[], bool], limit_s: float = 30.0) -> bool:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def _principals(broker: Broker) -> set[str]:
    app = broker._app
    assert app is not None
    return {c.session.principal for c in app.server.connections}


def test_requested_client_auth_serves_clients_with_and_without_a_certificate() -> None:
    """``ssl.client.auth=requested``: a client with a trusted certificate is its subject's
    principal, one without a certificate connects too, as ``User:ANONYMOUS``."""
    with Broker(security_protocol="SSL", ssl_client_auth="requested") as broker:
        assert broker.ca is not None
        with_cert = AdminClient(broker.client_config(cert="carol"))
        assert with_cert.list_topics(timeout=20).brokers
        without = AdminClient(broker.client_config())
        assert without.list_topics(timeout=20).brokers
        want = {broker.ca.principal_of("carol"), "User:ANONYMOUS"}
        assert _wait_for(lambda: want <= _principals(broker)), _principals(broker)


def test_an_encrypted_pem_key_opens_with_ssl_key_password_and_a_wrong_one_names_the_key(
    tmp_path: Path,
) -> None:
    """A PEM keystore whose key is encrypted: ``ssl.key.password`` opens it (a client completes
    the handshake); a wrong password stops start-up with a message naming the key."""
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1")
    key = load_pem_private_key(leaf.private_key_pem.bytes(), None)
    encrypted = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(b"key-pw"))
    keystore = tmp_path / "server.pem"
    keystore.write_bytes(encrypted + b"".join(p.bytes() for p in leaf.cert_chain_pems))
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    settings = {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.key.password": "key-pw",
    }
    wrong = BrokerConfig.from_properties(
        {"listeners": "SSL://127.0.0.1:0", **settings, "ssl.key.password": "nope"}
    )
    with pytest.raises(ConfigError, match=r"wrong ssl\.key\.password\?"):
        build_server_context(wrong.security_settings, "SSL")
    unset = BrokerConfig.from_properties(
        {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore)}
    )
    with pytest.raises(ConfigError, match=r"encrypted: set ssl\.key\.password"):
        build_server_context(unset.security_settings, "SSL")
    with Broker({"listeners": "SSL://127.0.0.1:0", **settings}, security_protocol="SSL") as broker:
        conf = {
            "bootstrap.servers": broker.bootstrap,
            "security.protocol": "SSL",
            "ssl.ca.location": str(ca_file),
        }
        assert AdminClient(conf).list_topics(timeout=20).brokers


def test_sasl_enabled_mechanisms_of_one_listener_override_the_brokers() -> None:
    """``listener.name.<l>.sasl.enabled.mechanisms`` is the list that listener's handshake
    answers and accepts; a mechanism only the broker-wide key names is refused there."""
    with Broker(
        {"listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512"},
        security_protocol="SASL_PLAINTEXT",
        users=USERS,
    ) as broker:
        with wire_client(broker) as c:
            answer = c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN")
            assert (answer.error_code, tuple(answer.mechanisms)) == (
                ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                ("SCRAM-SHA-512",),
            )
        with wire_client(broker) as c:
            answer = c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="SCRAM-SHA-512")
            assert (answer.error_code, tuple(answer.mechanisms)) == (0, ("SCRAM-SHA-512",))


def test_a_failed_authentication_is_answered_no_sooner_than_the_configured_delay() -> None:
    """``connection.failed.authentication.delay.ms``: the SASL_AUTHENTICATION_FAILED answer (and
    the close) come after the delay at the earliest (a lower bound only: a busy machine makes it
    later, never sooner); a bad value stops start-up naming the key."""
    delay_ms = 600
    with (
        Broker(
            {"connection.failed.authentication.delay.ms": delay_ms},
            security_protocol="SASL_PLAINTEXT",
            users=USERS,
        ) as broker,
        wire_client(broker) as c,
    ):
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
        sent = time.monotonic()
        answer = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"\0alice\0wrong")
        waited = time.monotonic() - sent
        assert answer.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert waited >= delay_ms / 1000
    with pytest.raises(
        RuntimeError, match=r"bad value for connection\.failed\.authentication\.delay\.ms: .soon."
    ):
        Broker(
            {"connection.failed.authentication.delay.ms": "soon"}, security_protocol="SASL_PLAINTEXT"
        ).start()
