"""Metadata before v12 names its topics: a null name or a topic id is an invalid request, answered."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from broker_harness import Env, nested, run_broker

from groupcoord.errors import ErrorCode

METADATA = 3


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_with_a_null_name_or_a_topic_id_answers_invalid_request_for_every_topic(
    tmp_path: Path, version: int
) -> None:
    """Kafka: ``KafkaApis.handleTopicMetadataRequest`` throws InvalidRequestException for a null
    name or a non-zero topic id below v12, and ``MetadataRequest.getErrorResponse`` answers every
    requested topic with INVALID_REQUEST, a null name as "" (v10/v11 responses cannot carry null).
    The answer used to fail to encode, which closed the connection with an ERROR and a traceback.
    """
    topic_id = uuid.UUID(int=7)

    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("t", 1, {})
        mt = nested(METADATA, version, "topics")
        c = await env.connect()
        resp = await c.call(
            METADATA,
            version,
            topics=(
                mt(name="t", topic_id=uuid.UUID(int=0)),
                mt(name=None, topic_id=uuid.UUID(int=0)),
                mt(name="u", topic_id=topic_id),
            ),
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
        assert [(t.name, t.topic_id, t.error_code, t.partitions) for t in resp.topics] == [
            ("t", None, ErrorCode.INVALID_REQUEST, ()),  # kio reads the zero uuid as None
            ("", None, ErrorCode.INVALID_REQUEST, ()),
            ("u", topic_id, ErrorCode.INVALID_REQUEST, ()),
        ]
        assert resp.brokers == ()
        # The connection is still open and answers a well-formed request.
        ok = await c.call(
            METADATA,
            version,
            topics=(mt(name="t", topic_id=uuid.UUID(int=0)),),
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=False,
        )
        assert [(t.name, t.error_code, len(t.partitions)) for t in ok.topics] == [("t", ErrorCode.NONE, 1)]
        c.close()

    run_broker(tmp_path, scenario)
