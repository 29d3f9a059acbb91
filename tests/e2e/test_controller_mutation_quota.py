"""``controller_mutation_rate`` (KIP-599) over the raw wire, as Kafka's
``ControllerMutationQuotaManager`` enforces it (``ControllerMutationQuotaTest``: strict and
permissive CreateTopics, DeleteTopics and CreatePartitions).

The quota is a token bucket of partitions per matched entity (``TokenBucket``): its burst is
``controller.quota.window.num`` x ``controller.quota.window.size.seconds`` of the rate, and it
starts full. Each test sets 2 partitions/s over 2 windows of 1 s: a burst of 4. Strict requests
(CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+) accept a topic while the bucket is not
below zero, even one that takes it below (``StrictControllerMutationQuota.record``: check, then
record), and refuse every later one with THROTTLING_QUOTA_EXCEEDED; permissive ones (older
versions) accept everything. The answer's ``throttle_time_ms`` is the time until the bucket is
back at zero, ``-tokens / rate``. The bucket refills with the wall clock between two calls, by at
most a few tokens per second here, so the bounds below allow for a second of that.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.protocol.client import WireClient
from groupcoord.testing import Broker

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37
THROTTLING_QUOTA_EXCEEDED = 89
CLIENT = "mutator"


@pytest.fixture
def broker() -> Iterator[Broker]:
    with Broker({"controller.quota.window.num": 2, "controller.quota.window.size.seconds": 1}) as b:
        b.set_quota(client_id=CLIENT, controller_mutation_rate=2.0)
        yield b


@pytest.fixture
def client(broker: Broker) -> Iterator[WireClient]:
    host, port = broker.bootstrap.split(":")
    with WireClient(host, int(port), client_id=CLIENT) as c:
        yield c


def _create(client: WireClient, version: int, *topics: tuple[str, int]) -> Any:
    return client.call(
        CREATE_TOPICS,
        version,
        topics=[
            {"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [], "configs": []}
            for n, p in topics
        ],
        timeout_ms=10_000,
        validate_only=False,
    )


def _topics(client: WireClient) -> dict[str, int]:
    """Every topic's partition count (Metadata)."""
    answer = client.call(
        3, 12, topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False
    )
    return {t.name: len(t.partitions) for t in answer.topics}


def _throttle_ms(answer: Any) -> float:
    return float(answer.throttle_time.total_seconds() * 1000)


def test_strict_create_topics_accepts_while_the_bucket_is_not_below_zero_then_refuses(
    broker: Broker, client: WireClient
) -> None:
    """CreateTopics v7: 3 + 3 partitions are accepted (the bucket 4 -> 1 -> -2: the second is
    taken while not below zero), the third topic is refused with THROTTLING_QUOTA_EXCEEDED and
    Kafka's message, and the answer carries ~1,000 ms (2 tokens owed at 2/s), for which the
    connection is muted (``sendResponseMaybeThrottleWithControllerQuota``;
    ``ControllerMutationQuotaTest.testStrictCreateTopicsRequest``)."""
    answer = _create(client, 7, ("a", 3), ("b", 3), ("c", 1))
    answered = time.monotonic()
    codes = {t.name: (t.error_code, t.error_message) for t in answer.topics}
    assert codes["a"] == (0, None) and codes["b"] == (0, None)
    assert codes["c"] == (THROTTLING_QUOTA_EXCEEDED, "The throttling quota has been exceeded.")
    assert 0 < _throttle_ms(answer) <= 1000
    topics = _topics(client)  # not read before the throttle has passed: the connection is muted
    assert time.monotonic() - answered >= 0.9 * _throttle_ms(answer) / 1000
    assert (topics.get("a"), topics.get("b"), topics.get("c")) == (3, 3, None)


def test_permissive_create_topics_accepts_every_topic_and_reports_the_throttle(
    broker: Broker, client: WireClient
) -> None:
    """CreateTopics v5 (before v6, permissive): 3 + 3 + 1 partitions are all created and the
    answer carries the time until the bucket (4 - 7 = -3) is back at zero: ~1,500 ms
    (``PermissiveControllerMutationQuota``; ``testPermissiveCreateTopicsRequest``)."""
    answer = _create(client, 5, ("a", 3), ("b", 3), ("c", 1))
    assert [t.error_code for t in answer.topics] == [0, 0, 0]
    assert 500 < _throttle_ms(answer) <= 1500
    topics = _topics(client)
    assert (topics.get("a"), topics.get("b"), topics.get("c")) == (3, 3, 1)


def test_strict_create_partitions_and_delete_topics_are_refused_once_the_bucket_is_below_zero(
    broker: Broker, client: WireClient
) -> None:
    """CreatePartitions v3 charges the partitions added, DeleteTopics v5 those deleted
    (``testStrictCreatePartitionsRequest``, ``testStrictDeleteTopicsRequest``): 1 -> 5
    partitions takes the whole burst, 5 -> 8 is still accepted (the bucket was at 0, not
    below) with no throttle (a strict quota throttles only a refusal), then both a further
    CreatePartitions and a DeleteTopics are refused and leave the topic as it was. A different
    client id has its own quota (none): it deletes the topic."""
    broker.create_topic("t", partitions=1)

    def grow(count: int) -> Any:
        return client.call(
            CREATE_PARTITIONS,
            3,
            topics=[{"name": "t", "count": count, "assignments": None}],
            timeout=10_000,
            validate_only=False,
        )

    assert grow(5).results[0].error_code == 0
    accepted = grow(8)
    assert accepted.results[0].error_code == 0 and _throttle_ms(accepted) == 0
    refused = grow(9)
    assert refused.results[0].error_code == THROTTLING_QUOTA_EXCEEDED
    assert _throttle_ms(refused) > 0
    host, port = broker.bootstrap.split(":")
    # on a second connection of the same client id: the first is muted for the throttle, after
    # which the bucket would be back at zero (the quota is the client id's, not the connection's)
    with WireClient(host, int(port), client_id=CLIENT) as again:
        deleted = again.call(DELETE_TOPICS, 5, topic_names=["t"], timeout=10_000)
    assert deleted.responses[0].error_code == THROTTLING_QUOTA_EXCEEDED
    assert _throttle_ms(deleted) > 0
    assert _topics(client).get("t") == 8
    with WireClient(host, int(port), client_id="someone-else") as other:
        assert other.call(DELETE_TOPICS, 5, topic_names=["t"], timeout=10_000).responses[0].error_code == 0
    assert "t" not in _topics(client)
