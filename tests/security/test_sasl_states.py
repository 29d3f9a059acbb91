"""The SASL exchange's states on the raw wire, as Kafka's ``SaslServerAuthenticator`` and its
``Selector`` treat a request out of turn (ILLEGAL_SASL_STATE), and KIP-368 re-authentication
(``connections.max.reauth.ms``): ``KafkaChannel.maybeBeginServerReauthentication``,
``SocketServer``'s close of an expired session, ``ReauthInfo``.

Kafka's tests for the same facts: ``SaslAuthenticatorTest.testDisallowedKafkaRequestsBeforeAuthentication``,
``testInvalidApiVersionsRequestSequence``, ``testCannotReauthenticateWithDifferentPrincipal``,
``testCannotReauthenticateWithDifferentMechanism``, ``testCannotReauthenticateAgainFasterThanOneSecond``;
``SaslServerAuthenticatorTest.testUnexpectedRequestType``, ``testSessionExpiresAtMaxReauthTime``.
"""

from __future__ import annotations

import logging
import struct
import time
import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer

from groupcoord.errors import ErrorCode
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.client import WireClient, WireError
from groupcoord.testing import Broker
from wire_testing import sasl_plain_login, wire_client

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
REAUTH_MS = 60_000


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(security_protocol="SASL_PLAINTEXT", users=USERS) as b:
        yield b


@pytest.fixture(scope="module")
def reauth_broker() -> Iterator[Broker]:
    with Broker(
        security_protocol="SASL_PLAINTEXT", users=USERS, settings={"connections.max.reauth.ms": REAUTH_MS}
    ) as b:
        yield b


def _versions(c: WireClient) -> None:
    c.send(ApiKey.API_VERSIONS, 3, client_software_name="t", client_software_version="1")


def _metadata(c: WireClient, topics: list[str] | None = None) -> None:
    c.send(
        ApiKey.METADATA,
        12,
        topics=[{"name": t, "topic_id": uuid.UUID(int=0)} for t in (topics or [])],
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
    )


def _closed_without_answer(c: WireClient) -> None:
    """The broker closes the connection and writes nothing (the pending request unanswered)."""
    assert c.readable(30)
    with pytest.raises(WireError):
        c.recv()


def _closed(c: WireClient) -> None:
    """After its last answer the broker closes the connection."""
    assert c.readable(30)
    assert c.sock.recv(1) == b""


def _still_serves(broker: Broker) -> None:
    """A new connection authenticates and is answered: nothing else was disturbed."""
    with wire_client(broker) as c:
        sasl_plain_login(c, "bob", "bob-secret")
        _metadata(c)
        assert c.recv().cluster_id


# ---------------------------------------------------------------------- before the handshake
def test_a_request_before_the_handshake_closes_the_connection_without_an_answer(broker: Broker) -> None:
    """SaslServerAuthenticator.handleKafkaRequest: an API other than ApiVersions and
    SaslHandshake raises IllegalSaslStateException before the request is parsed, so no answer is
    built; the Selector closes the channel after the failed-authentication delay
    (SaslAuthenticatorTest.testDisallowedKafkaRequestsBeforeAuthentication, node1;
    SaslServerAuthenticatorTest.testUnexpectedRequestType)."""
    with wire_client(broker) as c:
        _metadata(c, ["sometopic"])
        _closed_without_answer(c)
    assert "unexpected request (API key 3) during SASL handshake: ILLEGAL_SASL_STATE" in broker.log_tail(100)
    _still_serves(broker)


def test_sasl_authenticate_before_the_handshake_closes_without_an_answer(broker: Broker) -> None:
    """SaslAuthenticate is no exception to handleKafkaRequest's rule: before a SaslHandshake it
    is IllegalSaslStateException with no answer, then the close."""
    with wire_client(broker) as c:
        _versions(c)
        assert c.recv().error_code == 0
        c.send(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"\0alice\0alice-secret")
        _closed_without_answer(c)
    assert "unexpected request (API key 36) during SASL handshake" in broker.log_tail(100)
    _still_serves(broker)


def test_a_second_api_versions_before_the_handshake_closes_at_once(broker: Broker) -> None:
    """handleApiVersionsRequest accepts ApiVersions only in HANDSHAKE_OR_VERSIONS_REQUEST: a second
    one is an IllegalStateException (not an authentication failure), so the channel is closed at
    once without an answer."""
    with wire_client(broker) as c:
        _versions(c)
        assert c.recv().error_code == 0
        _versions(c)
        _closed_without_answer(c)
    assert "a second ApiVersions request before the SASL handshake" in broker.log_tail(100)
    _still_serves(broker)


def test_an_api_versions_of_a_version_not_served_does_not_use_up_the_one_allowed(broker: Broker) -> None:
    """handleApiVersionsRequest answers an unsupported version UNSUPPORTED_VERSION without moving
    to HANDSHAKE_REQUEST, so the client's retry at a version we serve is answered, and the
    exchange goes on (SaslAuthenticatorTest.testApiVersionsRequestWithServerUnsupportedVersion)."""
    with wire_client(broker) as c:
        c.sock.sendall(_api_versions_frame(version=99, correlation_id=7))
        (size,) = struct.unpack(">i", c._read(4))
        frame = c._read(size)
        (correlation, error) = struct.unpack(">ih", frame[:6])
        assert (correlation, error) == (7, ErrorCode.UNSUPPORTED_VERSION)
        _versions(c)
        assert c.recv().error_code == 0
        sasl_plain_login(c, "alice", "alice-secret")
        _metadata(c)
        assert c.recv().cluster_id


def _api_versions_frame(*, version: int, correlation_id: int) -> bytes:
    """An ApiVersions request header (v1: key, version, correlation id, client id) and an empty
    body: a version no broker serves is refused on its header alone."""
    body = struct.pack(">hhih", ApiKey.API_VERSIONS, version, correlation_id, 1) + b"t"
    return struct.pack(">i", len(body)) + body


# ---------------------------------------------------------------------- during the exchange
def test_metadata_during_the_exchange_is_answered_illegal_sasl_state_then_closed(broker: Broker) -> None:
    """handleSaslToken: after the handshake any API but SaslAuthenticate is answered with that
    request's error answer (getErrorResponse: Metadata's per topic) carrying ILLEGAL_SASL_STATE,
    then the channel closes (SaslAuthenticatorTest.testDisallowedKafkaRequestsBeforeAuthentication,
    node2)."""
    with wire_client(broker) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
        _metadata(c, ["sometopic"])
        answer = c.recv()
        assert [(str(t.name), t.error_code) for t in answer.topics] == [
            ("sometopic", ErrorCode.ILLEGAL_SASL_STATE)
        ]
        assert list(answer.brokers) == []
        _closed(c)
    assert "unexpected request (API key 3) during SASL authentication" in broker.log_tail(100)
    _still_serves(broker)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_a_second_handshake_is_answered_illegal_sasl_state_then_closed(
    broker: Broker, mechanism: str
) -> None:
    """A SaslHandshake while a SaslAuthenticate is expected: SaslHandshakeRequest.getErrorResponse
    (the code, no mechanisms listed), then the close."""
    with wire_client(broker) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism=mechanism).error_code == 0
        answer = c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN")
        assert (answer.error_code, tuple(answer.mechanisms)) == (ErrorCode.ILLEGAL_SASL_STATE, ())
        _closed(c)
    _still_serves(broker)


def test_api_versions_after_the_handshake_is_answered_illegal_sasl_state_then_closed(broker: Broker) -> None:
    """SaslAuthenticatorTest.testInvalidApiVersionsRequestSequence: handshake, then ApiVersions:
    its error answer (ILLEGAL_SASL_STATE, no API listed), then the close."""
    with wire_client(broker) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
        _versions(c)
        answer = c.recv()
        assert (answer.error_code, list(answer.api_keys)) == (ErrorCode.ILLEGAL_SASL_STATE, [])
        _closed(c)
    _still_serves(broker)


def test_after_authenticating_the_exchange_apis_are_illegal_sasl_state_and_the_connection_stays(
    broker: Broker,
) -> None:
    """With no session lifetime (connections.max.reauth.ms unset) a SaslHandshake after
    authenticating reaches KafkaApis.handleSaslHandshakeRequest (ILLEGAL_SASL_STATE, no
    mechanisms), a SaslAuthenticate handleSaslAuthenticateRequest (ILLEGAL_SASL_STATE with its
    message); the connection stays open and the session has no lifetime (v2's 0)."""
    with wire_client(broker) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
        done = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"\0alice\0alice-secret")
        assert (done.error_code, done.session_lifetime.total_seconds()) == (0, 0)
        answer = c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN")
        assert (answer.error_code, tuple(answer.mechanisms)) == (ErrorCode.ILLEGAL_SASL_STATE, ())
        answer = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"\0alice\0alice-secret")
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.ILLEGAL_SASL_STATE,
            "SaslAuthenticate request received after successful authentication",
        )
        _metadata(c)
        assert c.recv().cluster_id


# ---------------------------------------------------------------------- KIP-368 re-authentication
def _login(c: WireClient, user: str, password: str, mechanism: str = "PLAIN") -> int:
    """PLAIN login; the session lifetime the broker answered, in ms."""
    assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism=mechanism).error_code == 0
    done = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=f"\0{user}\0{password}".encode())
    assert (done.error_code, done.error_message) == (0, None)
    return round(done.session_lifetime.total_seconds() * 1000)


def test_the_session_lifetime_is_connections_max_reauth_ms(reauth_broker: Broker) -> None:
    """ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs: with no credential expiry the
    lifetime is connections.max.reauth.ms, answered in SaslAuthenticate v1+
    (SaslServerAuthenticatorTest.testSessionExpiresAtMaxReauthTime)."""
    with wire_client(reauth_broker) as c:
        assert _login(c, "alice", "alice-secret") == REAUTH_MS


def test_re_authentication_renews_the_session_at_most_once_a_second(reauth_broker: Broker) -> None:
    """A SaslHandshake on an authenticated connection with a session lifetime starts a new
    exchange (KafkaChannel.maybeBeginServerReauthentication); another within a second of the last
    start is handled as an ordinary request: KafkaApis's ILLEGAL_SASL_STATE, the connection kept
    (testCannotReauthenticateAgainFasterThanOneSecond). Requests go on between them."""
    with wire_client(reauth_broker) as c:
        _login(c, "alice", "alice-secret")
        assert _login(c, "alice", "alice-secret") == REAUTH_MS  # the first re-authentication
        _metadata(c)
        assert c.recv().cluster_id
        answer = c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN")
        assert (answer.error_code, tuple(answer.mechanisms)) == (ErrorCode.ILLEGAL_SASL_STATE, ())
        reauth_broker.advance(1.0)
        assert _login(c, "alice", "alice-secret") == REAUTH_MS
        _metadata(c)
        assert c.recv().cluster_id


def test_an_expired_session_is_closed_on_its_next_request(reauth_broker: Broker) -> None:
    """SocketServer.processCompletedReceives: a request after the session's expiry, other than a
    re-authenticating SaslHandshake, disconnects the channel (no answer). Re-authenticating in time
    keeps the connection: its new session runs from the re-authentication."""
    with wire_client(reauth_broker) as renewed, wire_client(reauth_broker) as lapsed:
        _login(renewed, "alice", "alice-secret")
        _login(lapsed, "bob", "bob-secret")
        reauth_broker.advance(REAUTH_MS / 1000 - 5)
        _login(renewed, "alice", "alice-secret")
        reauth_broker.advance(10)
        _metadata(renewed)
        assert renewed.recv().cluster_id
        _metadata(lapsed)
        _closed_without_answer(lapsed)
    assert "SASL session expired (connections.max.reauth.ms)" in reauth_broker.log_tail(100)


def test_re_authentication_as_another_principal_fails(reauth_broker: Broker) -> None:
    """ReauthInfo.ensurePrincipalUnchanged: SASL_AUTHENTICATION_FAILED with Kafka's message, then
    the close (SaslAuthenticatorTest.testCannotReauthenticateWithDifferentPrincipal)."""
    with wire_client(reauth_broker) as c:
        _login(c, "alice", "alice-secret")
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
        answer = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"\0bob\0bob-secret")
        assert (answer.error_code, answer.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            "Cannot change principals during re-authentication from User.alice: User.bob",
        )
        _closed(c)
    assert "SASL PLAIN re-authentication failed for user 'bob'" in reauth_broker.log_tail(100)


def test_re_authentication_with_another_mechanism_fails_on_its_first_token(reauth_broker: Broker) -> None:
    """ReauthInfo.saslMechanismUnchanged: the handshake is answered NONE, the state becomes
    REAUTH_BAD_MECHANISM and the next request fails the channel without an answer
    (SaslAuthenticatorTest.testCannotReauthenticateWithDifferentMechanism)."""
    with wire_client(reauth_broker) as c:
        _login(c, "alice", "alice-secret")
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="SCRAM-SHA-256").error_code == 0
        c.send(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"n,,n=alice,r=abc")
        _closed_without_answer(c)
    tail = reauth_broker.log_tail(100)
    assert tail.count("re-authentication with SASL mechanism SCRAM-SHA-256, not PLAIN") == 1
    assert "unexpected request (API key 36) during SASL re-authentication" not in tail  # one line


def test_a_request_during_re_authentication_is_illegal_sasl_state(reauth_broker: Broker) -> None:
    """While re-authenticating the channel is not ready: the authenticator answers a request
    other than SaslAuthenticate with its error answer, then closes (handleSaslToken)."""
    with wire_client(reauth_broker) as c:
        _login(c, "alice", "alice-secret")
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
        _metadata(c, ["t"])
        assert [t.error_code for t in c.recv().topics] == [ErrorCode.ILLEGAL_SASL_STATE]
        _closed(c)
    assert "during SASL re-authentication" in reauth_broker.log_tail(100)


def test_confluent_kafka_re_authenticates_and_loses_nothing() -> None:
    """librdkafka (KIP-368 since 2.2) re-authenticates at 90% of the session lifetime the broker
    answered, holding its requests meanwhile: a producer runs until the broker has seen two
    re-authentications, and every record is delivered."""
    with Broker(
        security_protocol="SASL_PLAINTEXT",
        users=USERS,
        settings={"connections.max.reauth.ms": 3000},
        log_level=logging.DEBUG,
    ) as b:
        topic = f"reauth-{uuid.uuid4().hex[:8]}"
        producer = Producer(b.client_config("alice", mechanism="SCRAM-SHA-256"))
        delivered: list[object] = []
        sent = 0
        deadline = time.monotonic() + 120
        while b.log_tail(2000).count("re-authenticated as User:alice via SCRAM-SHA-256") < 2:
            assert time.monotonic() < deadline, "no two re-authentications in 120 s"
            producer.produce(topic, str(sent).encode(), on_delivery=lambda e, m: delivered.append(e))
            sent += 1
            producer.poll(0.05)
        assert producer.flush(30) == 0
        assert delivered == [None] * sent
        assert "re-authentication failed" not in b.log_tail(2000)


def test_kafka_python_re_authenticates_and_loses_nothing() -> None:
    """kafka-python's ``SaslReauthenticator`` re-authenticates before the session lifetime the
    broker answered ends: a producer runs until the broker has seen two re-authentications, and
    every send is acknowledged."""
    from kafka import KafkaProducer

    with Broker(
        security_protocol="SASL_PLAINTEXT",
        users=USERS,
        settings={"connections.max.reauth.ms": 3000},
        log_level=logging.DEBUG,
    ) as b:
        topic = f"reauth-{uuid.uuid4().hex[:8]}"
        producer = KafkaProducer(**b.client_config("bob", client="kafka-python", mechanism="PLAIN"))
        try:
            futures = []
            deadline = time.monotonic() + 120
            while b.log_tail(2000).count("re-authenticated as User:bob via PLAIN") < 2:
                assert time.monotonic() < deadline, "no two re-authentications in 120 s"
                futures.append(producer.send(topic, str(len(futures)).encode()))
                producer.flush(30)
            offsets = [f.get(timeout=30).offset for f in futures]
            assert offsets == list(range(len(futures)))
            assert "re-authentication failed" not in b.log_tail(2000)
        finally:
            producer.close()
