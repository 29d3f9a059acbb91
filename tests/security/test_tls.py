"""TLS listeners (SSL): real clients with and without client certificates, refused
certificates, bytes that are not TLS, keystore formats and ``ssl.principal.mapping.rules``.

Kafka's facts: ``DefaultSslEngineFactory`` (keystore/truststore types, ``ssl.client.auth``),
``SslPrincipalMapper`` and its test ``SslPrincipalMapperTest`` (rule syntax), and
``DefaultKafkaPrincipalBuilder`` (``User:`` + the subject DN; ``User:ANONYMOUS`` without a
certificate).
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

import pytest
import trustme
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from cryptography.hazmat.primitives.serialization import BestAvailableEncryption, load_pem_private_key, pkcs12
from cryptography.x509 import load_pem_x509_certificate

from groupcoord.config import BrokerConfig
from groupcoord.errors import ConfigError
from groupcoord.server.tls import PrincipalMapper, build_server_context, openssl_cipher_name
from groupcoord.testing import Broker
from groupcoord.testing.security import TestCA


def _sessions(broker: Broker) -> list[object]:
    app = broker._app
    assert app is not None
    return [c.session for c in app.server.connections]


def _wait_for(cond: Callable[[], bool], limit_s: float = 30.0) -> bool:
    """Poll a condition the broker's loop makes true (generous limit)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.02)
    return cond()


def _roundtrip_confluent(conf: dict[str, object]) -> None:
    topic = f"tls-{uuid.uuid4().hex[:8]}"
    producer = Producer(conf)
    for i in range(20):
        producer.produce(topic, value=f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(200):
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
            if len(got) == 20:
                break
    finally:
        consumer.close()
    assert got == [f"v{i}".encode() for i in range(20)]


def test_ssl_listener_serves_confluent_produce_and_group_consume() -> None:
    """A TLS listener carries produce, a consumer group and fetches (whose record sets go
    through the TLS transport instead of sendfile)."""
    with Broker(security_protocol="SSL") as broker:
        _roundtrip_confluent(broker.client_config())
        assert broker._app is not None
        assert all(s.principal == "User:ANONYMOUS" for s in _sessions(broker))


def test_ssl_listener_serves_kafka_python_and_aiokafka() -> None:
    from kafka import KafkaConsumer, KafkaProducer

    with Broker(security_protocol="SSL") as broker:
        topic = f"tls-{uuid.uuid4().hex[:8]}"
        producer = KafkaProducer(**broker.client_config(client="kafka-python"))
        producer.send(topic, b"kp").get(timeout=30)
        producer.close()
        consumer = KafkaConsumer(
            topic,
            auto_offset_reset="earliest",
            consumer_timeout_ms=20000,
            **broker.client_config(client="kafka-python"),
        )
        assert [m.value for m in consumer][:1] == [b"kp"]
        consumer.close()

        async def aio() -> list[bytes]:
            from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

            p = AIOKafkaProducer(**broker.client_config(client="aiokafka"))
            await p.start()
            try:
                await p.send_and_wait(topic, b"aio")
            finally:
                await p.stop()
            c = AIOKafkaConsumer(
                topic, auto_offset_reset="earliest", **broker.client_config(client="aiokafka")
            )
            await c.start()
            try:
                batches = await c.getmany(timeout_ms=20000, max_records=2)
                while sum(len(v) for v in batches.values()) < 2:
                    more = await c.getmany(timeout_ms=20000)
                    for k, v in more.items():
                        batches.setdefault(k, []).extend(v)
                return [m.value for v in batches.values() for m in v]
            finally:
                await c.stop()

        assert sorted(asyncio.run(aio())) == [b"aio", b"kp"]


def test_client_certificate_gives_the_ssl_principal_when_required() -> None:
    """ssl.client.auth=required: a client certificate the truststore trusts connects, and the
    connection's principal is ``User:`` + its subject DN (most specific first)."""
    with Broker(security_protocol="SSL", ssl_client_auth="required") as broker:
        assert broker.ca is not None
        admin = AdminClient(broker.client_config(cert="alice"))
        assert admin.list_topics(timeout=20).brokers
        want = broker.ca.principal_of("alice")
        assert _wait_for(lambda: want in {s.principal for s in _sessions(broker)}), {
            s.principal for s in _sessions(broker)
        }
        assert broker.ca.principal_of("alice").startswith("User:CN=alice,")


@pytest.mark.parametrize("how", ["no certificate", "another CA's certificate"])
def test_required_client_auth_refuses_missing_or_untrusted_certificates(how: str, tmp_path) -> None:
    """The handshake fails; the broker logs one line for that connection and goes on serving."""
    with Broker(security_protocol="SSL", ssl_client_auth="required") as broker:
        assert broker.ca is not None
        conf = broker.client_config()
        if how == "another CA's certificate":
            other = trustme.CA().issue_cert("mallory.invalid", common_name="mallory")
            cert, key = tmp_path / "m.pem", tmp_path / "m.key"
            other.cert_chain_pems[0].write_to_path(str(cert))
            other.private_key_pem.write_to_path(str(key))
            conf.update({"ssl.certificate.location": str(cert), "ssl.key.location": str(key)})
        admin = AdminClient({**conf, "socket.timeout.ms": 3000})
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=5)
        assert "TLS handshake failed" in broker.log_tail(200)
        # the broker still serves a trusted client
        assert AdminClient(broker.client_config(cert="bob")).list_topics(timeout=20).brokers


def test_bytes_that_are_not_tls_close_that_connection_with_one_log_line() -> None:
    with Broker(security_protocol="SSL") as broker:
        host, port = broker.bootstrap.split(":")
        with socket.create_connection((host, int(port)), timeout=20) as sock:
            # an ApiVersions request in the clear
            sock.sendall(bytes.fromhex("0000001a00120003000000010006636c69656e74000000000000000000"))
            sock.settimeout(20)
            try:
                rest = sock.recv(4096)
            except ConnectionResetError:
                rest = b""
            # at most a TLS alert record (content type 21), never a Kafka answer
            assert rest == b"" or rest[:1] == b"\x15"
        lines = [ln for ln in broker.log_tail(200).splitlines() if "TLS handshake failed" in ln]
        assert len(lines) == 1
        assert "Traceback" not in broker.log_tail(200)
        assert AdminClient(broker.client_config()).list_topics(timeout=20).brokers


def test_pkcs12_keystore_and_inline_pem_keystore_load(tmp_path) -> None:
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1")
    key = load_pem_private_key(leaf.private_key_pem.bytes(), None)
    cert = load_pem_x509_certificate(leaf.cert_chain_pems[0].bytes())
    p12 = tmp_path / "server.p12"
    p12.write_bytes(
        pkcs12.serialize_key_and_certificates(b"s", key, cert, None, BestAvailableEncryption(b"pw"))
    )  # type: ignore[arg-type]
    base = ["listeners=SSL://127.0.0.1:0"]
    config = BrokerConfig.load(
        None, [*base, "ssl.keystore.type=PKCS12", f"ssl.keystore.location={p12}", "ssl.keystore.password=pw"]
    )
    assert build_server_context(config.security_settings, "SSL").verify_mode.name == "CERT_NONE"
    wrong = BrokerConfig.load(
        None, [*base, "ssl.keystore.type=PKCS12", f"ssl.keystore.location={p12}", "ssl.keystore.password=no"]
    )
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.password"):
        build_server_context(wrong.security_settings, "SSL")
    inline = BrokerConfig.from_properties(
        {
            "listeners": "SSL://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": leaf.cert_chain_pems[0].bytes().decode(),
            "ssl.keystore.key": leaf.private_key_pem.bytes().decode(),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": ca.cert_pem.bytes().decode(),
            "ssl.client.auth": "requested",
            "ssl.enabled.protocols": "TLSv1.3",
        }
    )
    ctx = build_server_context(inline.security_settings, "SSL")
    assert ctx.verify_mode.name == "CERT_OPTIONAL"
    assert ctx.minimum_version.name == ctx.maximum_version.name == "TLSv1_3"


def test_a_tls_listener_without_a_keystore_stops_startup_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.location"):
        BrokerConfig.load(None, ["listeners=SSL://127.0.0.1:0"])


def test_principal_mapping_rules_as_kafka_parses_them() -> None:
    """Cases from Kafka's ``SslPrincipalMapperTest``: the first matching rule wins, ``/L`` and
    ``/U`` change case, DEFAULT keeps the DN, no match is an error."""
    mapper = PrincipalMapper(
        "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L,"
        "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,DEFAULT"
    )
    assert mapper.name("CN=kafka-server,OU=ServiceUsers,O=Org,C=US") == "kafka-server"
    assert mapper.name("CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US") == "duke@javasoft"
    assert mapper.name("cn=duke,ou=JavaSoft,o=Sun Microsystems") == "DUKE"
    assert PrincipalMapper("DEFAULT").name("CN=a,O=b") == "CN=a,O=b"
    with pytest.raises(ValueError):
        PrincipalMapper("RULE:^CN=x$/y/").name("CN=z")
    with pytest.raises(ConfigError):
        PrincipalMapper("RULE:oops")


def test_iana_cipher_suite_names_map_to_openssl_names() -> None:
    assert openssl_cipher_name("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384") == "ECDHE-RSA-AES256-GCM-SHA384"
    assert openssl_cipher_name("TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256") == "ECDHE-ECDSA-AES128-SHA256"
    assert openssl_cipher_name("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256") == "ECDHE-RSA-CHACHA20-POLY1305"
    assert openssl_cipher_name("TLS_AES_128_GCM_SHA256") is None


def test_several_named_listeners_each_advertise_their_own_address(tmp_path) -> None:
    """``listeners`` with names mapped by ``listener.security.protocol.map``: each listener is
    served with its protocol and Metadata answers with the advertised address of the listener the
    request came in on (Kafka's ``MetadataCache.getAliveBrokerNodes(listenerName)``)."""
    from groupcoord.testing.security import TestCA, client_config

    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    ca = TestCA(tmp_path / "ca")
    props = tmp_path / "server.properties"
    props.write_text(
        f"listeners=INSIDE://127.0.0.1:{ports[0]},OUTSIDE://127.0.0.1:{ports[1]},CONTROLLER://127.0.0.1:0\n"
        "controller.listener.names=CONTROLLER\n"
        "listener.security.protocol.map=INSIDE:PLAINTEXT,OUTSIDE:SSL,CONTROLLER:PLAINTEXT\n"
        f"advertised.listeners=INSIDE://127.0.0.1:{ports[0]},OUTSIDE://localhost:{ports[1]}\n"
        "listener.name.outside.ssl.keystore.type=PEM\n"
        f"listener.name.outside.ssl.keystore.location={ca.server_pem}\n"
        f"log.dirs={tmp_path / 'data'}\n"
    )
    argv = [sys.executable, "-m", "groupcoord", "serve", "--config", str(props)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("groupcoord listening on 127.0.0.1:"), line
        inside = AdminClient({"bootstrap.servers": f"127.0.0.1:{ports[0]}"}).list_topics(timeout=20)
        assert [(b.host, b.port) for b in inside.brokers.values()] == [("127.0.0.1", ports[0])]
        outside_conf = client_config(bootstrap=f"localhost:{ports[1]}", protocol="SSL", ca=ca)
        outside = AdminClient(outside_conf).list_topics(timeout=20)
        assert [(b.host, b.port) for b in outside.brokers.values()] == [("localhost", ports[1])]
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-2000:]
    assert "listener OUTSIDE (SSL) on 127.0.0.1:" in err


def test_principal_mapping_rules_apply_to_client_certificates() -> None:
    """``ssl.principal.mapping.rules`` rewrites the subject of a client certificate into the
    principal the authorizer sees (Kafka's ``SslPrincipalMapper`` in ``DefaultKafkaPrincipalBuilder``)."""
    rules = {"ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/U,DEFAULT"}
    with Broker(security_protocol="SSL", ssl_client_auth="required", settings=rules) as broker:
        admin = AdminClient(broker.client_config(cert="carol"))  # kept open: its connection is looked at
        assert admin.list_topics(timeout=20).brokers
        assert _wait_for(lambda: "User:CAROL" in {s.principal for s in _sessions(broker)})
        del admin


def test_cipher_suites_limit_tls12_to_the_suites_named(tmp_path) -> None:
    pem = TestCA(tmp_path).server_pem
    config = BrokerConfig.load(
        None,
        [
            "listeners=SSL://127.0.0.1:0",
            f"ssl.keystore.location={pem}",
            "ssl.keystore.type=PEM",
            "ssl.enabled.protocols=TLSv1.2",
            "ssl.cipher.suites=TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
        ],
    )
    ctx = build_server_context(config.security_settings, "SSL")
    tls12 = {c["name"] for c in ctx.get_ciphers() if c["protocol"] == "TLSv1.2"}
    assert tls12 == {"ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305"}
    bad = BrokerConfig.load(
        None,
        [
            "listeners=SSL://127.0.0.1:0",
            f"ssl.keystore.location={pem}",
            "ssl.keystore.type=PEM",
            "ssl.cipher.suites=X",
        ],
    )
    with pytest.raises(ConfigError, match=r"ssl\.cipher\.suites"):
        build_server_context(bad.security_settings, "SSL")


def test_pkcs12_truststore_verifies_client_certificates(tmp_path) -> None:
    """``ssl.truststore.type=PKCS12``: the CA certificates in the store verify clients."""
    from cryptography.hazmat.primitives.serialization import NoEncryption

    ca = TestCA(tmp_path)
    pem = ca.server_pem
    ca_cert = load_pem_x509_certificate(ca.ca_pem.read_bytes())
    store = tmp_path / "trust.p12"
    store.write_bytes(pkcs12.serialize_key_and_certificates(None, None, None, [ca_cert], NoEncryption()))
    config = BrokerConfig.load(
        None,
        [
            "listeners=SSL://127.0.0.1:0",
            f"ssl.keystore.location={pem}",
            "ssl.keystore.type=PEM",
            "ssl.truststore.type=PKCS12",
            f"ssl.truststore.location={store}",
            "ssl.client.auth=required",
        ],
    )
    ctx = build_server_context(config.security_settings, "SSL")
    (trusted,) = ctx.get_ca_certs()
    subject = {k: v for rdn in trusted["subject"] for k, v in rdn}
    assert subject["organizationName"].startswith("trustme")
    assert ctx.verify_mode.name == "CERT_REQUIRED"
