"""Control records: the COMMIT / ABORT markers that end a transaction on a partition.

A marker is a batch of one record with the transactional and control attribute bits set, the
transaction's producer id and epoch, and base sequence -1 (Kafka's
``MemoryRecords.withEndTransactionMarker``). Its record (Kafka's ``EndTransactionMarker`` and
``ControlRecordType``):

* key: version int16 (0), type int16 (0 = ABORT, 1 = COMMIT);
* value: version int16 (0), coordinator epoch int32.
"""

from __future__ import annotations

import enum
import struct
from dataclasses import dataclass

from groupcoord.formats.batch import ATTR_CONTROL, ATTR_TRANSACTIONAL, NO_SEQUENCE, build_batch

__all__ = ["ControlType", "EndTxnMarker", "build_marker_batch", "control_record_type", "decode_marker"]

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class ControlType(enum.IntEnum):
    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class EndTxnMarker:
    type: ControlType
    coordinator_epoch: int


#: Kafka's ``ControlRecordType`` ids (the key's type field) and names.
CONTROL_RECORD_TYPES = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}


def control_record_type(key: bytes | None) -> str:
    """The name of a control record's type from its key (``UNKNOWN`` when the key is short or
    the type is not one Kafka defines), as Kafka's ``ControlRecordType.parse``."""
    if key is None or len(key) < _KEY.size:
        return "UNKNOWN"
    _version, kind = _KEY.unpack_from(key)
    return CONTROL_RECORD_TYPES.get(kind, "UNKNOWN")


def marker_key(kind: ControlType) -> bytes:
    return _KEY.pack(0, int(kind))


def marker_value(coordinator_epoch: int) -> bytes:
    return _VALUE.pack(0, coordinator_epoch)


def decode_marker(key: bytes | None, value: bytes | None) -> EndTxnMarker:
    """The marker a control record holds; ``ValueError`` for anything else."""
    if key is None or len(key) < _KEY.size:
        raise ValueError("control record key too short")
    version, kind = _KEY.unpack_from(key)
    if version != 0 or kind not in (0, 1):
        raise ValueError(f"not a transaction marker: key version {version}, type {kind}")
    if value is None or len(value) < _VALUE.size:
        raise ValueError("end transaction marker value too short")
    _v, epoch = _VALUE.unpack_from(value)
    return EndTxnMarker(type=ControlType(kind), coordinator_epoch=epoch)


def build_marker_batch(
    *,
    producer_id: int,
    producer_epoch: int,
    commit: bool,
    coordinator_epoch: int,
    timestamp_ms: int,
    partition_leader_epoch: int = 0,
) -> bytes:
    kind = ControlType.COMMIT if commit else ControlType.ABORT
    return build_batch(
        [(marker_key(kind), marker_value(coordinator_epoch), ())],
        timestamp_ms=timestamp_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        attributes=ATTR_TRANSACTIONAL | ATTR_CONTROL,
        partition_leader_epoch=partition_leader_epoch,
    )
