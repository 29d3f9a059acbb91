"""The client's wire layer, connections and fetcher against a real broker process.

No group is involved: ``Consumer.assign`` without a ``group.id`` needs only Metadata,
ListOffsets and Fetch. Records are produced by confluent-kafka with each compression codec.
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from conftest import ClientBroker

from groupcoord.client import wire
from groupcoord.client.connection import AsyncNetworkClient, NetworkClient
from groupcoord.client.consumer import Consumer
from groupcoord.client.errors import ConfigError
from groupcoord.client.fetcher import NoOffsetForPartitionError
from groupcoord.client.types import OffsetAndMetadata, TopicPartition
from groupcoord.protocol.api_keys import ApiKey

CODECS = ("gzip", "snappy", "lz4", "zstd", "none")


def make_topic(bootstrap: str, partitions: int) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        f.result(30)
    return name


def produce(bootstrap: str, topic: str, values: list[tuple[int, bytes]], codec: str = "none") -> None:
    p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5})
    for partition, value in values:
        p.produce(topic, value=value, key=b"k-" + value, partition=partition, headers=[("h", value[:3])])
    assert p.flush(30) == 0


def consume_all(c: Consumer, n: int, limit_s: float = 60.0) -> list[tuple[int, int, bytes | None]]:
    got = []
    import time

    deadline = time.monotonic() + limit_s
    while len(got) < n and time.monotonic() < deadline:
        got += [(r.partition, r.offset, r.value) for r in c.poll(0.5)]
    return got


def test_api_versions_negotiation_picks_highest_common_version(client_broker: ClientBroker) -> None:
    client = NetworkClient(client_broker.bootstrap)
    try:
        node = client.least_loaded_node()
        client.request(node, ApiKey.METADATA, wire.metadata_request([]))
        table = client.versions(node)
        assert table is not None
        for api, (_lo, hi) in wire.CLIENT_RANGES.items():
            broker = table.broker.get(api)
            if broker is None:
                continue
            assert table.version(api) == min(hi, broker[1])
    finally:
        client.close()


def test_several_requests_in_flight_on_one_connection_are_matched_by_correlation_id(
    client_broker: ClientBroker,
) -> None:
    topic = make_topic(client_broker.bootstrap, 2)
    client = NetworkClient(client_broker.bootstrap)
    try:
        node = client.least_loaded_node()
        sent = [
            client.send(node, ApiKey.METADATA, wire.metadata_request([topic] if i % 2 else []))
            for i in range(20)
        ]
        for r in sent:
            client.wait([r], 30)
        answers = [wire.read_metadata(r.result()) for r in sent]
        assert [len(a.topics) for a in answers] == [1 if i % 2 else 0 for i in range(20)]
        assert client.in_flight_count() == 0
    finally:
        client.close()


def test_async_client_negotiates_and_answers_concurrent_requests(client_broker: ClientBroker) -> None:
    topic = make_topic(client_broker.bootstrap, 3)

    async def main() -> list[int]:
        client = AsyncNetworkClient(client_broker.bootstrap)
        try:
            answers = await asyncio.gather(
                *(client.request(-1, ApiKey.METADATA, wire.metadata_request([topic])) for _ in range(10))
            )
            return [len(wire.read_metadata(a).topics[0].partitions) for a in answers]
        finally:
            await client.close()

    assert asyncio.run(main()) == [3] * 10


def test_waiting_with_no_time_left_still_moves_the_network_forward(client_broker: ClientBroker) -> None:
    """A caller whose deadline is already due (the member core asks to be polled again at
    once while it waits for an answer) must still get its answer by calling wait(.., 0)."""
    import time

    client = NetworkClient(client_broker.bootstrap)
    try:
        r = client.send(client.least_loaded_node(), ApiKey.METADATA, wire.metadata_request([]))
        limit = time.monotonic() + 30
        while not client.wait([r], 0) and time.monotonic() < limit:
            pass
        assert r.done and r.error is None
    finally:
        client.close()


def test_unreachable_bootstrap_fails_the_request_and_backs_off() -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = NetworkClient(f"127.0.0.1:{port}")
    try:
        r = client.send(-1, ApiKey.METADATA, wire.metadata_request([]))
        assert client.wait([r], 10)
        with pytest.raises(ConnectionError):
            r.result()
    finally:
        client.close()


@pytest.mark.parametrize("codec", CODECS)
def test_assigned_consumer_reads_every_record_of_each_codec_in_order(
    client_broker: ClientBroker, codec: str
) -> None:
    topic = make_topic(client_broker.bootstrap, 3)
    values = [(i % 3, f"{codec}-{i}".encode()) for i in range(300)]
    produce(client_broker.bootstrap, topic, values, codec)
    with Consumer({"bootstrap.servers": client_broker.bootstrap, "auto.offset.reset": "earliest"}) as c:
        c.assign([TopicPartition(topic, p) for p in range(3)])
        got = consume_all(c, 300)
    for p in range(3):
        rows = [(o, v) for pp, o, v in got if pp == p]
        assert [o for o, _ in rows] == list(range(100))
        assert [v for _, v in rows] == [v for pp, v in values if pp == p]


def test_auto_offset_reset_latest_skips_existing_records_and_none_raises(client_broker: ClientBroker) -> None:
    topic = make_topic(client_broker.bootstrap, 1)
    produce(client_broker.bootstrap, topic, [(0, b"old-%d" % i) for i in range(5)])
    tp = TopicPartition(topic, 0)
    with Consumer({"bootstrap.servers": client_broker.bootstrap, "auto.offset.reset": "latest"}) as c:
        c.assign([tp])
        assert c.position(tp) == 5
        produce(client_broker.bootstrap, topic, [(0, b"new")])
        got = consume_all(c, 1)
        assert got == [(0, 5, b"new")]
    with Consumer({"bootstrap.servers": client_broker.bootstrap, "auto.offset.reset": "none"}) as c:
        c.assign([tp])
        with pytest.raises(NoOffsetForPartitionError):
            c.poll(5)


def test_seek_pause_resume_and_out_of_range_reset(client_broker: ClientBroker) -> None:
    topic = make_topic(client_broker.bootstrap, 2)
    produce(client_broker.bootstrap, topic, [(i % 2, b"v%d" % i) for i in range(20)])
    a, b = TopicPartition(topic, 0), TopicPartition(topic, 1)
    with Consumer(
        {
            "bootstrap.servers": client_broker.bootstrap,
            "auto.offset.reset": "earliest",
            "max.poll.records": 100,
        }
    ) as c:
        c.assign([a, b])
        c.pause([b])
        got = consume_all(c, 10)
        assert {p for p, _, _ in got} == {0}
        assert c.poll(0.3) == []
        c.resume([b])
        got = consume_all(c, 10)
        assert sorted(o for p, o, _ in got if p == 1) == list(range(10))
        c.seek(a, 7)
        got = consume_all(c, 3)
        assert [(p, o) for p, o, _ in got] == [(0, 7), (0, 8), (0, 9)]
        c.seek(a, 1000)  # out of range -> auto.offset.reset (earliest)
        got = consume_all(c, 10)
        assert [(p, o) for p, o, _ in got] == [(0, o) for o in range(10)]


def test_read_ahead_keeps_a_fetch_in_flight_while_the_application_holds_records(
    client_broker: ClientBroker,
) -> None:
    topic = make_topic(client_broker.bootstrap, 1)
    produce(client_broker.bootstrap, topic, [(0, b"v%d" % i) for i in range(10)])
    tp = TopicPartition(topic, 0)
    with Consumer(
        {
            "bootstrap.servers": client_broker.bootstrap,
            "auto.offset.reset": "earliest",
            "max.poll.records": 5,
            "fetch.max.wait.ms": 5000,
        }
    ) as c:
        c.assign([tp])
        first = consume_all(c, 1)
        assert [o for _, o, _ in first] == [0, 1, 2, 3, 4]
        # poll returned 5 of the 10 buffered records: the Fetch for offset 10 is already on
        # the wire (held by the broker for fetch.max.wait.ms) while the application works
        assert c._client.in_flight_count() == 1
        produce(client_broker.bootstrap, topic, [(0, b"late")])
        got = first + consume_all(c, 11 - len(first))
        assert [o for _, o, _ in got] == list(range(11))
        assert got[-1][2] == b"late"


def test_assigned_consumer_with_a_group_id_commits_and_a_new_one_resumes_there(
    client_broker: ClientBroker,
) -> None:
    topic = make_topic(client_broker.bootstrap, 2)
    produce(client_broker.bootstrap, topic, [(i % 2, b"v%d" % i) for i in range(20)])
    group = f"manual-{uuid.uuid4().hex[:8]}"
    conf = {
        "bootstrap.servers": client_broker.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    }
    parts = [TopicPartition(topic, 0), TopicPartition(topic, 1)]
    with Consumer(conf) as c:
        c.assign(parts)
        got = consume_all(c, 20)
        assert len(got) == 20
        c.commit({parts[0]: 4, parts[1]: 7})
        assert c.committed(parts) == {
            parts[0]: OffsetAndMetadata(offset=4),
            parts[1]: OffsetAndMetadata(offset=7),
        }
    with Consumer(conf) as c:
        c.assign(parts)
        assert (c.position(parts[0]), c.position(parts[1])) == (4, 7)
        got = consume_all(c, 6 + 3)
        assert sorted((p, o) for p, o, _ in got) == [(0, o) for o in range(4, 10)] + [
            (1, o) for o in range(7, 10)
        ]


def test_polling_with_zero_timeout_still_makes_progress(client_broker: ClientBroker) -> None:
    import time

    topic = make_topic(client_broker.bootstrap, 1)
    produce(client_broker.bootstrap, topic, [(0, b"a"), (0, b"b")])
    with Consumer({"bootstrap.servers": client_broker.bootstrap, "auto.offset.reset": "earliest"}) as c:
        c.assign([TopicPartition(topic, 0)])
        got: list[int] = []
        limit = time.monotonic() + 60
        while len(got) < 2 and time.monotonic() < limit:
            got += [r.offset for r in c.poll(0)]
        assert got == [0, 1]


def test_unknown_config_key_is_a_config_error_naming_it() -> None:
    with pytest.raises(ConfigError, match=r"no\.such\.key"):
        Consumer({"bootstrap.servers": "127.0.0.1:1", "no.such.key": 1})
