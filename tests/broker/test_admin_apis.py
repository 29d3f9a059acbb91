"""ApiVersions, Metadata, CreateTopics, DeleteTopics, CreatePartitions and DescribeConfigs over the wire."""

from __future__ import annotations

import datetime
import io
import uuid
from pathlib import Path
from typing import Any

from broker_harness import Env, nested, run_broker

from groupcoord.app import routes
from groupcoord.broker import api_versions
from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext

METADATA, API_VERSIONS, CREATE, DELETE, DESCRIBE_CONFIGS, CREATE_PARTITIONS = 3, 18, 19, 20, 32, 37
MINUTE = datetime.timedelta(minutes=1)


def new_topic(
    version: int,
    name: str,
    partitions: int = -1,
    rf: int = -1,
    configs: dict[str, str | None] | None = None,
    assignments: tuple[Any, ...] = (),
) -> Any:
    t = nested(CREATE, version, "topics")
    cfg_t = nested(CREATE, version, "topics", "configs")
    return t(
        name=name,
        num_partitions=partitions,
        replication_factor=rf,
        assignments=assignments,
        configs=tuple(cfg_t(name=k, value=v) for k, v in (configs or {}).items()),
    )


async def create_topics(env: Env, *topics: Any, version: int = 7, validate_only: bool = False) -> list[Any]:
    c = await env.connect()
    r = await c.call(CREATE, version, topics=topics, timeout=MINUTE, validate_only=validate_only)
    c.close()
    return list(r.topics)


def test_api_versions_advertises_exactly_the_routes_at_every_version(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        c = await env.connect()
        expected = sorted((r.api_key, r.min_version, r.max_version) for r in routes(None).values())
        for v in range(0, 5):
            body = {"client_software_name": "t", "client_software_version": "1"} if v >= 3 else {}
            r = await c.call(API_VERSIONS, v, **body)
            assert r.error_code == 0
            assert [(k.api_key, k.min_version, k.max_version) for k in r.api_keys] == expected
        c.close()

    run_broker(tmp_path, scenario)


def test_api_versions_answer_is_encoded_once_and_equals_the_entity_encoding(tmp_path: Path) -> None:
    # The handler keeps each version's encoded answer; it must be exactly what encoding the
    # answer entity gives, on the first call and on every later one.
    async def scenario(env: Env) -> None:
        b = env.broker
        registry = b.registry
        for v in range(0, 5):
            ctx = RequestContext(
                connection_id=1,
                client_id="t",
                client_host="/127.0.0.1",
                api_key=18,
                api_version=v,
                correlation_id=9,
            )
            first = api_versions.handle(b, ctx, None)
            again = api_versions.handle(b, ctx, None)
            assert again is first
            buf = io.BytesIO()
            registry.lookup(18, v).writer(buf, api_versions.answer_entity(b, v))
            assert first.pieces == (buf.getvalue(),)

    run_broker(tmp_path, scenario)


def test_metadata_reports_cluster_controller_topic_ids_and_internal_flag(tmp_path: Path) -> None:
    cluster_ids: list[str] = []

    async def scenario(env: Env) -> None:
        b = env.broker
        if "orders" not in b.logs.topics_view:
            b.logs.create_topic("orders", 2, {})
            b.logs.create_topic("__internal_thing", 1, {}, internal=True)
        c = await env.connect()
        r = await c.call(
            METADATA,
            12,
            topics=None,
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        cluster_ids.append(r.cluster_id)
        assert r.controller_id == b.node_id
        assert [(x.node_id, x.host, x.port) for x in r.brokers] == [(0, "127.0.0.1", env.server.port)]
        topics = {t.name: t for t in r.topics}
        assert set(topics) == {"orders", "__internal_thing"}
        assert topics["orders"].topic_id == b.logs.topics_view["orders"].topic_id
        assert (topics["orders"].is_internal, topics["__internal_thing"].is_internal) == (False, True)
        assert [
            (p.partition_index, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes))
            for p in topics["orders"].partitions
        ] == [
            (0, 0, (0,), (0,)),
            (1, 0, (0,), (0,)),
        ]
        # v0: an empty topic list means every topic.
        r0 = await c.call(METADATA, 0, topics=())
        assert {t.name for t in r0.topics} == {"orders", "__internal_thing"}
        # v12 by topic id.
        mt = nested(METADATA, 12, "topics")
        r = await c.call(
            METADATA,
            12,
            topics=(mt(name=None, topic_id=topics["orders"].topic_id),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        assert [(t.error_code, t.name) for t in r.topics] == [(0, "orders")]
        r = await c.call(
            METADATA,
            12,
            topics=(mt(name=None, topic_id=uuid.uuid4()),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        assert r.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_ID
        c.close()

    run_broker(tmp_path, scenario)
    run_broker(tmp_path, scenario)
    assert cluster_ids[0] == cluster_ids[1]
    assert len(cluster_ids[0]) == 22


def test_metadata_auto_creates_only_when_allowed_and_enabled(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        c = await env.connect()
        mt = nested(METADATA, 12, "topics")
        r = await c.call(
            METADATA,
            12,
            topics=(mt(name="a", topic_id=None),),
            allow_auto_topic_creation=False,
            include_topic_authorized_operations=False,
        )
        assert r.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert "a" not in env.broker.logs.topics_view
        r = await c.call(
            METADATA,
            12,
            topics=(mt(name="a", topic_id=None),),
            allow_auto_topic_creation=True,
            include_topic_authorized_operations=False,
        )
        assert (r.topics[0].error_code, len(r.topics[0].partitions)) == (0, 3)
        r = await c.call(
            METADATA,
            12,
            topics=(mt(name="bad name!", topic_id=None),),
            allow_auto_topic_creation=True,
            include_topic_authorized_operations=False,
        )
        assert r.topics[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
        c.close()

    run_broker(tmp_path, scenario, settings=("num.partitions=3",))

    async def disabled(env: Env) -> None:
        c = await env.connect()
        mt = nested(METADATA, 12, "topics")
        r = await c.call(
            METADATA,
            12,
            topics=(mt(name="b", topic_id=None),),
            allow_auto_topic_creation=True,
            include_topic_authorized_operations=False,
        )
        assert r.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        c.close()

    run_broker(tmp_path / "off", disabled, settings=("auto.create.topics.enable=false",))


def test_create_topics_defaults_and_validation(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        (ok,) = await create_topics(env, new_topic(7, "d"))
        assert (ok.error_code, ok.num_partitions, ok.replication_factor) == (0, 4, 1)
        assert ok.topic_id == env.broker.logs.topics_view["d"].topic_id
        assert {c.name: c.value for c in ok.configs}["retention.ms"] == str(7 * 24 * 3_600_000)
        results = await create_topics(
            env,
            new_topic(7, "rf3", 1, 3),
            new_topic(7, "zero", 0, 1),
            new_topic(7, "huge", 2_000_000_000, 1),
            new_topic(7, "badcfg", 1, 1, {"retention.ms": "soon"}),
            new_topic(7, "unknowncfg", 1, 1, {"no.such": "1"}),
            new_topic(7, "d", 1, 1),
            new_topic(7, "bad/name", 1, 1),
            new_topic(7, "dup", 1, 1),
            new_topic(7, "dup", 1, 1),
            new_topic(7, "cfg", 2, 1, {"retention.ms": "1000", "cleanup.policy": "compact"}),
        )
        assert [(r.name, int(r.error_code)) for r in results] == [
            ("rf3", ErrorCode.INVALID_REPLICATION_FACTOR),
            ("zero", ErrorCode.INVALID_PARTITIONS),
            ("huge", ErrorCode.INVALID_PARTITIONS),
            ("badcfg", ErrorCode.INVALID_CONFIG),
            ("unknowncfg", ErrorCode.INVALID_CONFIG),
            ("d", ErrorCode.TOPIC_ALREADY_EXISTS),
            ("bad/name", ErrorCode.INVALID_TOPIC_EXCEPTION),
            ("dup", ErrorCode.INVALID_REQUEST),
            ("dup", ErrorCode.INVALID_REQUEST),
            ("cfg", ErrorCode.NONE),
        ]
        assert results[3].error_message is not None and "retention.ms" in results[3].error_message
        assert set(env.broker.logs.topics_view) == {"d", "cfg"}
        assert dict(env.broker.logs.topics_view["cfg"].configs) == {
            "retention.ms": "1000",
            "cleanup.policy": "compact",
        }
        assert env.broker.logs.log_config_for("cfg").retention_ms == 1000

    run_broker(tmp_path, scenario, settings=("num.partitions=4",))


def test_create_topics_validate_only_and_assignments_and_old_versions(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        (r,) = await create_topics(env, new_topic(7, "v", 2, 1), validate_only=True)
        assert (r.error_code, r.num_partitions) == (0, 2)
        assert "v" not in env.broker.logs.topics_view
        at = nested(CREATE, 7, "topics", "assignments")
        (r,) = await create_topics(
            env,
            new_topic(
                7,
                "a",
                assignments=(at(partition_index=0, broker_ids=(0,)), at(partition_index=1, broker_ids=(0,))),
            ),
        )
        assert (r.error_code, env.broker.logs.topics_view["a"].partitions) == (0, 2)
        (r,) = await create_topics(
            env, new_topic(7, "b", assignments=(at(partition_index=0, broker_ids=(1,)),))
        )
        assert r.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        for v in range(2, 8):
            (r,) = await create_topics(env, new_topic(v, f"old{v}", 1, 1), version=v)
            assert r.error_code == 0
        assert {f"old{v}" for v in range(2, 8)} <= set(env.broker.logs.topics_view)

    run_broker(tmp_path, scenario)


def test_delete_topics_by_name_and_by_id(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        logs = env.broker.logs
        for name in ("a", "b", "c"):
            logs.create_topic(name, 1, {})
        logs.create_topic("__inner", 1, {}, internal=True)
        b_id = logs.topics_view["b"].topic_id
        c = await env.connect()
        r = await c.call(DELETE, 1, topic_names=("a", "zz"), timeout=MINUTE)
        assert [(x.name, int(x.error_code)) for x in r.responses] == [
            ("a", 0),
            ("zz", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        st = nested(DELETE, 6, "topics")
        unknown = uuid.uuid4()
        r = await c.call(
            DELETE,
            6,
            topics=(
                st(name=None, topic_id=b_id),
                st(name=None, topic_id=unknown),
                st(name="__inner", topic_id=None),
            ),
            timeout=MINUTE,
        )
        assert [(x.name, x.topic_id, int(x.error_code)) for x in r.responses] == [
            ("b", b_id, 0),
            (None, unknown, ErrorCode.UNKNOWN_TOPIC_ID),
            ("__inner", logs.topics_view["__inner"].topic_id, ErrorCode.INVALID_TOPIC_EXCEPTION),
        ]
        assert set(logs.topics_view) == {"c", "__inner"}
        assert not (env.broker.data_dir / "a-0").exists()
        c.close()

    run_broker(tmp_path, scenario)


def test_create_partitions_grows_only(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("t", 2, {})
        tt = nested(CREATE_PARTITIONS, 3, "topics")
        c = await env.connect()

        async def ask(name: str, count: int, validate_only: bool = False) -> int:
            r = await c.call(
                CREATE_PARTITIONS,
                3,
                topics=(tt(name=name, count=count, assignments=None),),
                timeout=MINUTE,
                validate_only=validate_only,
            )
            return int(r.results[0].error_code)

        assert await ask("t", 4, validate_only=True) == 0
        assert env.broker.logs.topics_view["t"].partitions == 2
        assert await ask("t", 4) == 0
        assert env.broker.logs.topics_view["t"].partitions == 4
        assert env.broker.logs.partition("t", 3).log_end_offset == 0
        assert await ask("t", 4) == ErrorCode.INVALID_PARTITIONS
        assert await ask("t", 3) == ErrorCode.INVALID_PARTITIONS
        assert await ask("t", 2_000_000_000) == ErrorCode.INVALID_PARTITIONS
        assert await ask("nope", 3) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        c.close()

    run_broker(tmp_path, scenario)


def test_describe_configs_for_topic_and_broker(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        env.broker.logs.create_topic("t", 1, {"retention.ms": "1234"})
        rt = nested(DESCRIBE_CONFIGS, 4, "resources")
        c = await env.connect()
        r = await c.call(
            DESCRIBE_CONFIGS,
            4,
            resources=(
                rt(resource_type=2, resource_name="t", configuration_keys=None),
                rt(
                    resource_type=4,
                    resource_name="0",
                    configuration_keys=("num.partitions", "log.segment.bytes"),
                ),
                rt(resource_type=2, resource_name="nope", configuration_keys=None),
            ),
            include_synonyms=False,
            include_documentation=False,
        )
        topic, brk, missing = r.results
        cfg = {e.name: (e.value, e.config_source) for e in topic.configs}
        assert cfg["retention.ms"] == ("1234", 1)
        assert cfg["segment.bytes"] == ("2048", 4)
        assert cfg["cleanup.policy"] == ("delete", 5)
        assert {e.name: (e.value, e.config_source) for e in brk.configs} == {
            "num.partitions": ("1", 5),
            "log.segment.bytes": ("2048", 4),
        }
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        c.close()

    run_broker(tmp_path, scenario, settings=("log.segment.bytes=2048",))


def test_describe_cluster_lists_this_broker_as_controller(tmp_path: Path) -> None:
    async def scenario(env: Env) -> None:
        c = await env.connect()
        for v in (0, 1):
            r = await c.call(60, v, include_cluster_authorized_operations=False, endpoint_type=1)
            assert (r.error_code, r.cluster_id, r.controller_id) == (0, env.broker.cluster_id, 0)
            assert [(b.broker_id, b.host, b.port) for b in r.brokers] == [(0, "127.0.0.1", env.server.port)]
        r = await c.call(60, 1, include_cluster_authorized_operations=False, endpoint_type=2)
        assert (r.error_code, r.brokers) == (ErrorCode.INVALID_REQUEST, ())
        c.close()

    run_broker(tmp_path, scenario)
