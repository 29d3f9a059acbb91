"""``groupcoord.testing``'s security: the ``kafka_broker`` fixture with
``@pytest.mark.kafka_broker(security_protocol=..., users=..., acls=..., super_users=...)``, and a
subprocess broker with SASL_SSL."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient

from groupcoord.testing import Broker


@pytest.mark.kafka_broker(
    security_protocol="SASL_SSL", users={"admin": "a", "alice": "s"}, acls=True, super_users=["User:admin"]
)
def test_the_fixture_makes_a_sasl_ssl_broker_with_acls(kafka_broker: Broker) -> None:
    errors: list[object] = []
    conf = kafka_broker.client_config("alice", mechanism="SCRAM-SHA-512")
    producer = Producer({**conf, "message.timeout.ms": 10000})
    producer.produce("orders", b"x", on_delivery=lambda e, _m: errors.append(e))
    producer.flush(30)
    assert [e.code() for e in errors if isinstance(e, KafkaError)] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    kafka_broker.add_acl("User:alice", "WRITE", "TOPIC", "orders")
    kafka_broker.add_acl("User:alice", "CREATE", "TOPIC", "orders")
    errors.clear()
    producer = Producer(conf)  # librdkafka remembers the topic's failure: a fresh producer
    producer.produce("orders", b"y", on_delivery=lambda e, _m: errors.append(e))
    producer.flush(30)
    assert errors == [None]


def test_a_subprocess_broker_serves_sasl_ssl() -> None:
    with Broker(security_protocol="SASL_SSL", users={"bob": "pw"}, subprocess=True) as broker:
        conf = broker.client_config("bob", mechanism="SCRAM-SHA-256")
        assert AdminClient(conf).list_topics(timeout=30).brokers
