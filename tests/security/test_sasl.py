"""SASL listeners: PLAIN and SCRAM-SHA-256/512 over SASL_PLAINTEXT and SASL_SSL with
confluent-kafka, kafka-python and aiokafka; refused passwords and mechanisms; the exchange on the
wire as Kafka's ``SaslServerAuthenticator`` answers it (and its test
``SaslServerAuthenticatorTest`` / ``SaslAuthenticatorTest``); SCRAM credentials managed through
AlterUserScramCredentials / DescribeUserScramCredentials (``ScramControlManager``)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import ssl
import uuid

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from groupcoord.config import BrokerConfig
from groupcoord.errors import ErrorCode
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.client import WireClient, WireError
from groupcoord.testing import Broker
from wire_testing import sasl_plain_login

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.fixture(scope="module", params=["SASL_PLAINTEXT", "SASL_SSL"])
def broker(request: pytest.FixtureRequest) -> Broker:
    with Broker(security_protocol=request.param, users=USERS) as b:
        yield b


def _wire(broker: Broker) -> WireClient:
    """A raw wire client, over TLS on a SASL_SSL broker."""
    host, port = broker.bootstrap.split(":")
    client = WireClient(host, int(port))
    if broker.ca is not None:
        context = ssl.create_default_context(cafile=str(broker.ca.ca_pem))
        client.sock = context.wrap_socket(client.sock, server_hostname=host)
    return client


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_produces_after_authenticating(broker: Broker, mechanism: str) -> None:
    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    producer = Producer(broker.client_config("alice", mechanism=mechanism))
    delivered: list[object] = []
    producer.produce(topic, b"v", on_delivery=lambda e, m: delivered.append(e))
    assert producer.flush(30) == 0
    assert delivered == [None]


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python_and_aiokafka_authenticate(broker: Broker, mechanism: str) -> None:
    from kafka import KafkaProducer

    topic = f"sasl-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(**broker.client_config("bob", client="kafka-python", mechanism=mechanism))
    producer.send(topic, b"kp").get(timeout=30)
    producer.close()

    async def aio() -> None:
        from aiokafka import AIOKafkaProducer

        p = AIOKafkaProducer(**broker.client_config("bob", client="aiokafka", mechanism=mechanism))
        await p.start()
        try:
            await p.send_and_wait(topic, b"aio")
        finally:
            await p.stop()

    asyncio.run(aio())


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_a_wrong_password_is_refused_and_never_logged(broker: Broker, mechanism: str) -> None:
    wrong = f"not-{uuid.uuid4().hex}"
    admin = AdminClient(broker.client_config("alice", mechanism=mechanism, password=wrong))
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    tail = broker.log_tail(400)
    assert f"SASL {mechanism} authentication failed for user 'alice'" in tail
    assert wrong not in tail and "alice-secret" not in tail


def test_aiokafka_sees_sasl_authentication_failed_with_kafkas_message(
    broker: Broker, caplog: pytest.LogCaptureFixture
) -> None:
    """aiokafka reports error 58 with the broker's message, and gives up bootstrapping."""
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    async def attempt() -> None:
        p = AIOKafkaProducer(**broker.client_config("alice", client="aiokafka", password="nope"))
        try:
            await p.start()
        finally:
            await p.stop()

    with caplog.at_level(logging.ERROR, logger="aiokafka"), pytest.raises(KafkaConnectionError):
        asyncio.run(attempt())
    assert any(
        "[Error 58] SaslAuthenticationFailed: Authentication failed: Invalid username or password"
        in r.getMessage()
        for r in caplog.records
    )


def test_the_exchange_on_the_wire(broker: Broker) -> None:
    """ApiVersions is answered before authenticating; an unknown mechanism is answered
    UNSUPPORTED_SASL_MECHANISM with the enabled list; PLAIN's wrong password
    SASL_AUTHENTICATION_FAILED with Kafka's message, then the connection is closed."""
    with _wire(broker) as c:
        assert (
            c.call(ApiKey.API_VERSIONS, 3, client_software_name="t", client_software_version="1").error_code
            == 0
        )
        r = c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="GSSAPI")
        assert (r.error_code, tuple(r.mechanisms)) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, MECHANISMS)
        assert c.readable(10)
        with pytest.raises(WireError):
            c.call(ApiKey.API_VERSIONS, 3, client_software_name="t", client_software_version="1")
    with _wire(broker) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
        r = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"\0alice\0wrong")
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert r.error_message == "Authentication failed: Invalid username or password"
        assert c.readable(10)
        with pytest.raises(WireError):
            c.call(ApiKey.API_VERSIONS, 3, client_software_name="t", client_software_version="1")
    with _wire(broker) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
        r = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"bob\0alice\0alice-secret")
        assert r.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert "authorization id that is different from username" in r.error_message
    with _wire(broker) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == 0
        r = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"\0alice\0alice-secret")
        assert (r.error_code, r.error_message) == (0, None)
        # after authenticating: the exchange's requests are ILLEGAL_SASL_STATE (KafkaApis)
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == ErrorCode.ILLEGAL_SASL_STATE
        r = c.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"")
        assert r.error_code == ErrorCode.ILLEGAL_SASL_STATE
        assert c.call(
            ApiKey.METADATA,
            12,
            topics=[],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        ).cluster_id


def test_a_second_handshake_during_the_exchange_is_illegal_sasl_state_then_closed(broker: Broker) -> None:
    """SaslServerAuthenticator: in the authenticate state only SaslAuthenticate is expected."""
    with _wire(broker) as c:
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="SCRAM-SHA-256").error_code == 0
        assert c.call(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN").error_code == ErrorCode.ILLEGAL_SASL_STATE
        with pytest.raises(WireError):
            c.call(ApiKey.API_VERSIONS, 3, client_software_name="t", client_software_version="1")


def test_a_request_before_authenticating_closes_the_connection(broker: Broker) -> None:
    with _wire(broker) as c:
        c.send(
            ApiKey.METADATA,
            12,
            topics=[],
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        with pytest.raises(WireError):
            c.recv()
    assert "unexpected request (API key 3) during SASL handshake: ILLEGAL_SASL_STATE" in broker.log_tail(200)


def test_scram_users_are_managed_over_the_wire(broker: Broker) -> None:
    """A user added by AlterUserScramCredentials authenticates at once; describe lists its
    mechanisms and iterations; deleting it refuses the next login; errors are Kafka's."""
    user = f"carol-{uuid.uuid4().hex[:6]}"
    admin = AdminClient(broker.client_config("alice", mechanism="SCRAM-SHA-256"))
    up = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"carol-pw"
    )
    for fut in admin.alter_user_scram_credentials([up]).values():
        fut.result(20)
    described = {u: f.result(20) for u, f in admin.describe_user_scram_credentials([user]).items()}
    assert [(i.mechanism, i.iterations) for i in described[user].scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)
    ]
    conf = broker.client_config(user, mechanism="SCRAM-SHA-512", password="carol-pw")
    assert AdminClient(conf).list_topics(timeout=20).brokers
    few = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 10), b"x")
    (fut,) = admin.alter_user_scram_credentials([few]).values()
    with pytest.raises(KafkaException) as info:
        fut.result(20)
    assert info.value.args[0].code() == KafkaError.UNACCEPTABLE_CREDENTIAL
    gone = UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512)
    for fut in admin.alter_user_scram_credentials([gone]).values():
        fut.result(20)
    (fut,) = admin.alter_user_scram_credentials([gone]).values()
    with pytest.raises(KafkaException) as info:
        fut.result(20)
    assert info.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
    with pytest.raises(KafkaException):
        AdminClient(conf).list_topics(timeout=5)
    stored = (broker.data_dir / "scram-credentials.json").read_text()
    assert "carol-pw" not in stored and "alice-secret" not in stored


def test_scram_credentials_survive_a_restart(tmp_path) -> None:
    """Credentials are kept in the data dir as salted keys."""
    with Broker(security_protocol="SASL_PLAINTEXT", users={"dave": "dave-pw"}, data_dir=tmp_path / "d") as b:
        salt = os.urandom(16)
        salted = hashlib.pbkdf2_hmac("sha256", b"erin-pw", salt, 4096)

        def upsertion(name: str, mechanism: int) -> dict[str, object]:
            """erin-pw's SCRAM-SHA-256 keys (mechanism 1) at 4096 iterations, for ``name``."""
            return {
                "name": name,
                "mechanism": mechanism,
                "iterations": 4096,
                "salt": salt,
                "salted_password": salted,
            }

        with _wire(b) as c:
            sasl_plain_login(c, "dave", "dave-pw")
            r = c.call(
                ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                0,
                deletions=[],
                upsertions=[upsertion("erin", 1), upsertion("erin", 1), upsertion("fay", 3)],
            )
            assert [(x.user, x.error_code) for x in r.results] == [
                ("erin", ErrorCode.DUPLICATE_RESOURCE),
                ("erin", ErrorCode.DUPLICATE_RESOURCE),
                ("fay", ErrorCode.UNSUPPORTED_SASL_MECHANISM),
            ]
            r = c.call(
                ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
                0,
                deletions=[],
                upsertions=[upsertion("erin", 1)],
            )
            assert [(x.user, x.error_code) for x in r.results] == [("erin", 0)]
        b.restart()
        conf = b.client_config("erin", mechanism="SCRAM-SHA-256", password="erin-pw")
        assert AdminClient(conf).list_topics(timeout=20).brokers
        with _wire(b) as c:
            sasl_plain_login(c, "dave", "dave-pw")
            r = c.call(
                ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=[{"name": "erin"}, {"name": "nobody"}]
            )
            assert [
                (x.user, x.error_code, [(i.mechanism, i.iterations) for i in x.credential_infos])
                for x in r.results
            ] == [
                ("erin", 0, [(1, 4096)]),
                ("nobody", ErrorCode.RESOURCE_NOT_FOUND, []),
            ]


def test_sasl_config_errors_name_the_key() -> None:
    from groupcoord.app_security import listener_security
    from groupcoord.errors import ConfigError

    (spec,) = BrokerConfig.load(None, ["listeners=SASL_PLAINTEXT://127.0.0.1:0"]).listener_specs()
    with pytest.raises(ConfigError, match=r"sasl\.enabled\.mechanisms"):  # Kafka's default: GSSAPI
        listener_security(BrokerConfig.load(None, ["listeners=SASL_PLAINTEXT://127.0.0.1:0"]), spec)
    plain = BrokerConfig.load(
        None, ["listeners=SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms=PLAIN"]
    )
    with pytest.raises(ConfigError, match=r"listener\.name\.sasl_plaintext\.plain\.sasl\.jaas\.config"):
        listener_security(plain, spec)


def test_describe_configs_hides_secrets_as_kafka_does(broker: Broker) -> None:
    """A PASSWORD-type key (the JAAS line with its passwords, keystore passwords) is answered
    with a null value and is_sensitive (Kafka's ``ConfigHelper``); other security keys with
    their value."""
    from confluent_kafka.admin import ConfigResource

    admin = AdminClient(broker.client_config("alice"))
    (fut,) = admin.describe_configs([ConfigResource("broker", "0")]).values()
    got = fut.result(20)
    jaas = got[f"listener.name.{broker.security_protocol.lower()}.plain.sasl.jaas.config"]
    assert (jaas.value, jaas.is_sensitive) == (None, True)
    mechanisms = got["sasl.enabled.mechanisms"]
    assert (mechanisms.value, mechanisms.is_sensitive) == (",".join(MECHANISMS), False)
