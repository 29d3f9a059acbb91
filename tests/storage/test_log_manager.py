"""LogManager: topic create / delete / grow / reopen, names, configs, metadata files."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import pytest

from groupcoord.clock import ManualClock
from groupcoord.errors import ErrorCode
from groupcoord.formats.batch import build_batch, decode_records
from groupcoord.storage.log_config import InvalidConfigError, LogConfig
from groupcoord.storage.manager import (
    InvalidPartitionsError,
    InvalidTopicError,
    LogManager,
    TopicExistsError,
    UnknownTopicOrPartitionError,
)

T0 = 1_700_000_000_000


def open_manager(path: Path, **cfg: object) -> LogManager:
    return LogManager.open(path, LogConfig(**cfg), ManualClock(T0))  # type: ignore[arg-type]


def put(manager: LogManager, topic: str, partition: int, value: bytes) -> int:
    batch = build_batch([(None, value, ())], timestamp_ms=T0)
    return manager.partition(topic, partition).append(batch).base_offset


def test_create_topic_makes_one_kafka_partition_dir_each(tmp_path: Path) -> None:
    m = open_manager(tmp_path)
    meta = m.create_topic("orders", 3, {"retention.ms": "1000"})
    assert (meta.name, meta.partitions, dict(meta.configs), meta.internal) == (
        "orders",
        3,
        {"retention.ms": "1000"},
        False,
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["__topics.json", "orders-0", "orders-1", "orders-2"]
    pm = (tmp_path / "orders-1" / "partition.metadata").read_text()
    encoded = base64.urlsafe_b64encode(meta.topic_id.bytes).decode().rstrip("=")
    assert pm == f"version: 0\ntopic_id: {encoded}\n"
    assert m.topic_by_id(meta.topic_id) == meta
    assert m.topic_by_id(uuid.uuid4()) is None
    assert m.log_config_for("orders").retention_ms == 1000
    assert m.partition("orders", 2).config.retention_ms == 1000


def test_topics_and_data_survive_reopen(tmp_path: Path) -> None:
    m = open_manager(tmp_path)
    orders = m.create_topic("orders", 2, {"cleanup.policy": "compact"})
    offsets = m.create_topic("__consumer_offsets", 1, {}, internal=True)
    assert [put(m, "orders", 1, b"v%d" % i) for i in range(3)] == [0, 1, 2]
    m.close()
    again = open_manager(tmp_path)
    assert dict(again.topics_view) == {"orders": orders, "__consumer_offsets": offsets}
    assert again.topics_view["__consumer_offsets"].internal
    assert again.partition("orders", 1).log_end_offset == 3
    assert again.partition("orders", 1).config.compact
    assert all(r.clean_shutdown for r in again.recovery_reports.values())
    data = again.partition("orders", 1).read(1, 1000).data
    assert [r.value for r in decode_records(data)] == [b"v1"]


def test_duplicate_and_illegal_topic_names_are_refused(tmp_path: Path) -> None:
    m = open_manager(tmp_path)
    m.create_topic("a.b_c-D9", 1, {})
    with pytest.raises(TopicExistsError) as exists:
        m.create_topic("a.b_c-D9", 1, {})
    assert exists.value.code == ErrorCode.TOPIC_ALREADY_EXISTS
    for bad in ["", ".", "..", "has space", "slash/no", "ü", "x" * 250]:
        with pytest.raises(InvalidTopicError) as err:
            m.create_topic(bad, 1, {})
        assert err.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION
    m.create_topic("x" * 249, 1, {})
    with pytest.raises(InvalidPartitionsError):
        m.create_topic("zero", 0, {})
    with pytest.raises(InvalidConfigError):
        m.create_topic("badcfg", 1, {"retention.ms": "soon"})
    assert sorted(m.topics_view) == ["a.b_c-D9", "x" * 249]
    assert not (tmp_path / "badcfg-0").exists()


def test_delete_topic_removes_its_dirs_and_it_stays_deleted(tmp_path: Path) -> None:
    m = open_manager(tmp_path)
    meta = m.create_topic("gone", 2, {})
    m.create_topic("kept", 1, {})
    put(m, "gone", 0, b"x")
    assert m.delete_topic("gone") == meta
    assert sorted(p.name for p in tmp_path.iterdir()) == ["__topics.json", "kept-0"]
    with pytest.raises(KeyError):
        m.partition("gone", 0)
    with pytest.raises(UnknownTopicOrPartitionError):
        m.delete_topic("gone")
    assert m.topic_by_id(meta.topic_id) is None
    m.close()
    again = open_manager(tmp_path)
    assert sorted(again.topics_view) == ["kept"]
    # a new topic of the same name starts empty, with a new id
    fresh = again.create_topic("gone", 1, {})
    assert fresh.topic_id != meta.topic_id
    assert again.partition("gone", 0).log_end_offset == 0


def test_leftover_delete_dirs_are_removed_at_open(tmp_path: Path) -> None:
    m = open_manager(tmp_path)
    m.create_topic("t", 1, {})
    m.close()
    (tmp_path / "t-0.0123abcd-delete").mkdir()
    (tmp_path / "t-0.0123abcd-delete" / "00000000000000000000.log").write_bytes(b"old")
    open_manager(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["__topics.json", "t-0"]


def test_create_partitions_adds_empty_partitions_and_refuses_shrinking(tmp_path: Path) -> None:
    m = open_manager(tmp_path)
    m.create_topic("t", 2, {})
    put(m, "t", 0, b"x")
    grown = m.create_partitions("t", 5)
    assert grown.partitions == 5
    assert [m.partition("t", p).log_end_offset for p in range(5)] == [1, 0, 0, 0, 0]
    with pytest.raises(InvalidPartitionsError):
        m.create_partitions("t", 5)
    m.close()
    assert open_manager(tmp_path).topics_view["t"].partitions == 5


def test_topics_file_is_rebuilt_from_partition_metadata_when_lost(tmp_path: Path) -> None:
    m = open_manager(tmp_path)
    meta = m.create_topic("t", 3, {"retention.ms": "5"})
    put(m, "t", 2, b"x")
    m.close()
    (tmp_path / "__topics.json").unlink()
    again = open_manager(tmp_path)
    rebuilt = again.topics_view["t"]
    assert (rebuilt.topic_id, rebuilt.partitions, dict(rebuilt.configs)) == (meta.topic_id, 3, {})
    assert again.partition("t", 2).log_end_offset == 1
    assert json.loads((tmp_path / "__topics.json").read_text())["topics"]["t"]["partitions"] == 3


def test_retention_and_flush_run_over_every_partition(tmp_path: Path) -> None:
    one = len(build_batch([(None, b"x", ())], timestamp_ms=T0))
    m = open_manager(tmp_path, segment_bytes=one, retention_ms=1000)
    m.create_topic("a", 2, {})
    m.create_topic("b", 1, {"retention.ms": "-1"})
    for topic, p in [("a", 0), ("a", 1), ("b", 0)]:
        for _ in range(3):
            put(m, topic, p, b"x")
    m.flush_all()
    assert all(plog.flushed_offset == 3 for plog in m.partitions().values())
    assert m.apply_retention(T0 + 2000) == 4 * one
    assert [m.partition(t, p).log_start_offset for t, p in [("a", 0), ("a", 1), ("b", 0)]] == [2, 2, 0]


def test_alter_topic_configs_applies_to_open_partitions(tmp_path: Path) -> None:
    m = open_manager(tmp_path)
    m.create_topic("t", 1, {})
    m.alter_topic_configs("t", {"message.timestamp.type": "LogAppendTime"})
    assert m.partition("t", 0).config.log_append_time
    m.close()
    assert open_manager(tmp_path).partition("t", 0).config.log_append_time


def test_topics_mapping_is_a_snapshot_safe_to_iterate_while_creating(tmp_path: Path) -> None:
    m = open_manager(tmp_path)
    m.create_topic("a", 1, {})
    view = m.topics_view
    for name in view:
        m.create_topic(name + "-copy", 1, {})
    assert sorted(view) == ["a"]
    assert sorted(m.topics_view) == ["a", "a-copy"]
