"""Bad TLS and SASL handshakes beside a live consumer group: each bad connection is closed
alone with one log line, no traceback, and the group is undisturbed (same generation, same
member, still consuming)."""

from __future__ import annotations

import random
import socket
import ssl
import struct
import threading
import uuid

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.client import build_request, encode_request
from groupcoord.protocol.registry import load_messages
from groupcoord.testing import Broker


def _frame(api_key: int, version: int, **fields: object) -> bytes:
    messages = load_messages(api_key, version)
    return encode_request(messages, 1, build_request(messages.request_type, fields))


def _attempt(host: str, port: int, ctx: ssl.SSLContext, payload: bytes, tls: bool) -> None:
    with socket.create_connection((host, port), timeout=20) as raw:
        sock: socket.socket = ctx.wrap_socket(raw, server_hostname="127.0.0.1") if tls else raw
        try:
            sock.sendall(payload)
            if not tls:
                raw.shutdown(socket.SHUT_WR)  # nothing more comes: a cut-short hello ends here
            sock.settimeout(20)
            while sock.recv(65536):
                pass
        except (OSError, ssl.SSLError):
            pass


def test_bad_handshakes_leave_a_live_group_alone() -> None:
    rnd = random.Random(29)
    with Broker(
        security_protocol="SASL_SSL",
        users={"alice": "alice-pw"},
        settings={"group.initial.rebalance.delay.ms": 0},
    ) as broker:
        assert broker.ca is not None
        topic, group = f"f-{uuid.uuid4().hex[:6]}", f"g-{uuid.uuid4().hex[:6]}"
        conf = broker.client_config("alice", mechanism="SCRAM-SHA-256")
        consumer = Consumer({**conf, "group.id": group, "auto.offset.reset": "earliest"})
        consumer.subscribe([topic])
        got: list[bytes] = []
        stop = threading.Event()

        def poll() -> None:
            while not stop.is_set():
                msg = consumer.poll(0.2)
                if msg is not None and msg.error() is None:
                    got.append(msg.value())

        producer = Producer(conf)
        producer.produce(topic, b"before")
        assert producer.flush(30) == 0
        thread = threading.Thread(target=poll)
        thread.start()
        try:
            admin = AdminClient(conf)

            def describe() -> tuple[str, list[str]]:
                (fut,) = admin.describe_consumer_groups([group]).values()
                d = fut.result(20)
                return str(d.state), [m.member_id for m in d.members]

            deadline = 200
            while (b"before" not in got or "STABLE" not in describe()[0]) and deadline:
                stop.wait(0.1)
                deadline -= 1
            before = describe()
            assert "STABLE" in before[0] and len(before[1]) == 1

            host, port = broker.bootstrap.split(":")
            ctx = ssl.create_default_context(cafile=str(broker.ca.ca_pem))
            attempts = []
            for _ in range(20):  # not TLS at all
                attempts.append((rnd.randbytes(rnd.randint(1, 600)), False))
            hello = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + rnd.randbytes(40)
            attempts.append((hello, False))  # a ClientHello cut short
            for _ in range(10):  # TLS, then SASL tokens that are garbage
                mech = rnd.choice(["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
                token = rnd.randbytes(rnd.randint(0, 300))
                payload = _frame(ApiKey.SASL_HANDSHAKE, 1, mechanism=mech) + _frame(
                    ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=token
                )
                attempts.append((payload, True))
            attempts.append((_frame(ApiKey.SASL_HANDSHAKE, 1, mechanism="GSSAPI"), True))
            attempts.append(
                (
                    _frame(
                        ApiKey.METADATA,
                        12,
                        topics=None,
                        allow_auto_topic_creation=False,
                        include_topic_authorized_operations=False,
                    ),
                    True,
                )
            )
            attempts.append((struct.pack(">i", 2_000_000_000) + b"\0" * 10, True))  # absurd frame size
            out_of_turn = [  # the SASL exchange's requests in random orders (ILLEGAL_SASL_STATE)
                _frame(ApiKey.API_VERSIONS, 3, client_software_name="f", client_software_version="1"),
                _frame(ApiKey.SASL_HANDSHAKE, 1, mechanism="PLAIN"),
                _frame(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=b"\0alice\0wrong"),
                _frame(ApiKey.METADATA, 12, topics=None, allow_auto_topic_creation=False,
                       include_topic_authorized_operations=False),
            ]  # fmt: skip
            for _ in range(10):
                attempts.append((b"".join(rnd.choices(out_of_turn, k=rnd.randint(2, 5))), True))
            for payload, tls in attempts:
                _attempt(host, int(port), ctx, payload, tls)

            producer.produce(topic, b"after")
            assert producer.flush(30) == 0
            deadline = 200
            while b"after" not in got and deadline:
                stop.wait(0.1)
                deadline -= 1
            assert b"after" in got
            assert describe() == before  # same state, same single member: no rebalance
        finally:
            stop.set()
            thread.join(30)
            consumer.close()
        tail = broker.log_tail(2000)
        assert "Traceback" not in tail
        refused = [
            ln for ln in tail.splitlines() if "TLS handshake failed" in ln or "during the TLS handshake" in ln
        ]
        assert len(refused) == 21  # one line per connection that never completed a handshake
