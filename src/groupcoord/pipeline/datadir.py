"""Writing a data directory the way the broker does, for the simulator and for test scenarios.

Everything goes through the storage layer (``PartitionLog``), so the files are the
broker's own: ``<topic>-<partition>/`` directories with segments, offset and time indexes. Records
are built with ``groupcoord.formats.batch.build_batch`` and the coordinator's record codecs; group
events are the JSON the broker publishes on ``__group_events`` (keyed by group id).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from groupcoord.clock import ManualClock
from groupcoord.constants import GROUP_EVENTS_TOPIC, OFFSETS_TOPIC
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    encode_record,
    partition_for,
)
from groupcoord.formats.batch import build_batch
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig
from groupcoord.storage.manager import PARTITION_METADATA_FILE, partition_metadata_text

log = logging.getLogger(__name__)


class DataDirWriter:
    """Appends producer batches, coordinator records and group events to a data directory.

    Time is explicit: every write says when it happened (virtual time), which becomes the batch
    timestamp (CreateTime), and the manager's clock is advanced to it.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        offsets_partitions: int = 50,
        events_partitions: int = 1,
        segment_bytes: int = 1 << 30,
    ) -> None:
        self.data_dir = data_dir
        self.clock = ManualClock(0)
        data_dir.mkdir(parents=True, exist_ok=True)
        self.config = LogConfig(segment_bytes=segment_bytes, retention_ms=-1, retention_bytes=-1)
        self.logs: dict[tuple[str, int], PartitionLog] = {}
        self.offsets_partitions = offsets_partitions
        self.events_partitions = events_partitions
        self.create_topic(OFFSETS_TOPIC, offsets_partitions)
        self.create_topic(GROUP_EVENTS_TOPIC, events_partitions)

    def _at(self, time_ms: int) -> None:
        now = self.clock.now_ms()
        if time_ms > now:
            self.clock.advance(time_ms - now)

    def create_topic(self, name: str, partitions: int, topic_id: uuid.UUID | None = None) -> None:
        """``topic_id``: also write each partition's ``partition.metadata`` as the broker does (the
        consumer groups' records name topics by id)."""
        for p in range(partitions):
            if (name, p) not in self.logs:
                log_, _report = PartitionLog.open(self.data_dir / f"{name}-{p}", self.config, self.clock)
                self.logs[(name, p)] = log_
                if topic_id is not None:
                    meta = self.data_dir / f"{name}-{p}" / PARTITION_METADATA_FILE
                    meta.write_text(partition_metadata_text(topic_id), encoding="utf-8")

    def partition(self, topic: str, partition: int) -> PartitionLog:
        return self.logs[(topic, partition)]

    def append(
        self,
        topic: str,
        partition: int,
        records: Sequence[tuple[bytes | None, bytes | None]],
        time_ms: int,
        *,
        compression: int = 0,
    ) -> tuple[int, int]:
        """Append one batch; returns (first offset, last offset)."""
        self._at(time_ms)
        batch = build_batch(
            [(k, v, ()) for k, v in records], base_offset=0, timestamp_ms=time_ms, compression=compression
        )
        info = self.partition(topic, partition).append(batch)
        return info.base_offset, info.last_offset

    def produce(self, topic: str, partition: int, count: int, time_ms: int) -> tuple[int, int]:
        """``count`` small records in one batch (what a producer's linger would send)."""
        payload = [(None, b"x" * 16)] * count
        return self.append(topic, partition, payload, time_ms)

    def log_end_offset(self, topic: str, partition: int) -> int:
        return int(self.partition(topic, partition).log_end_offset)

    def coordinator_records(self, group_id: str, records: Iterable[CoordinatorRecord], time_ms: int) -> None:
        """Write records of one group to its ``__consumer_offsets`` partition, as one batch."""
        encoded = [encode_record(r) for r in records]
        if not encoded:
            return
        part = partition_for(group_id, self.offsets_partitions)
        self.append(OFFSETS_TOPIC, part, encoded, time_ms)

    def event(self, event: Mapping[str, Any] | bytes) -> None:
        """Publish one group event (a GroupEvent's JSON, or a dict with the same keys)."""
        if isinstance(event, bytes):
            value = event
            obj = json.loads(value)
        else:
            obj = dict(event)
            value = json.dumps(obj, separators=(",", ":")).encode()
        group_id = str(obj["group_id"])
        part = partition_for(group_id, self.events_partitions)
        self.append(GROUP_EVENTS_TOPIC, part, [(group_id.encode(), value)], int(obj["time_ms"]))

    def close(self) -> None:
        for log_ in self.logs.values():
            log_.close()
