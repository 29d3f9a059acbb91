"""What a partition log raises and returns: its errors and the values of an append and a read.

:class:`~groupcoord.storage.log.PartitionLog` raises and returns these (and ``storage.log``
exports them with it); a caller that only handles the outcome imports them from here or there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from mypy_extensions import mypyc_attr

from groupcoord.errors import ErrorCode, KafkaError
from groupcoord.handling import FileRegion


class OffsetOutOfRangeError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.OFFSET_OUT_OF_RANGE, message)


class RecordTooLargeError(KafkaError):
    def __init__(self, message: str) -> None:
        super().__init__(ErrorCode.MESSAGE_TOO_LARGE, message)


class InvalidOffsetError(ValueError):
    """A batch appended with ``assign_offsets=False`` does not come after the log end."""


# A RuntimeError subclass cannot be a compiled (native) class; it stays an ordinary one.
@mypyc_attr(native_class=False)
class LogClosedError(RuntimeError):
    """The log was closed (or its topic deleted)."""


class AppendInfo(NamedTuple):
    """What an append did. A named tuple: one is built per append (every offset commit's), and a
    frozen dataclass's ``__init__`` cost about 1 µs of it."""

    base_offset: int
    last_offset: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    max_timestamp: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    data: memoryview | bytes
    high_watermark: int
    log_start_offset: int
    #: (fd, position, length) of ``data`` in its segment file, for os.sendfile. The descriptor is
    #: valid only until the log is next changed (retention, truncation, compaction swap, close).
    file: tuple[int, int, int] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RegionRead:
    """What :meth:`PartitionLog.read_region` found: the batches as bytes (empty, or shorter than
    ``copy_below``) or as a :class:`FileRegion` the caller must close."""

    data: bytes | FileRegion
    high_watermark: int
    log_start_offset: int
