"""Which segments of a partition's log retention deletes: a decision over the segments, the log
start offset and the topic's settings, made apart from the deleting
(:meth:`~groupcoord.storage.log.PartitionLog.apply_retention` deletes the segments, moves the log
start and forgets their snapshots, with its lock held).

Kafka's ``UnifiedLog.deleteOldSegments`` and its three rules, each a run of the oldest segments,
never the active one: a segment whose successor starts at or below the log start offset
(``deleteLogStartOffsetBreachedSegments``), and with ``cleanup.policy`` delete, a segment whose
newest timestamp is more than ``retention.ms`` old (``deleteRetentionMsBreachedSegments``) and the
oldest segments while the log stays at ``retention.bytes`` or more without them
(``deleteRetentionSizeBreachedSegments``).
"""

from __future__ import annotations

from collections.abc import Sequence

from .log_config import LogConfig
from .segment import Segment


def segments_to_delete(segments: Sequence[Segment], log_start: int, config: LogConfig, now_ms: int) -> int:
    """How many of the oldest ``segments`` retention deletes at ``now_ms`` (see the module
    docstring): those below the log start first, then by age, then by size."""
    last = len(segments) - 1  # the active segment stays
    n = 0
    while n < last and segments[n + 1].base_offset <= log_start:
        n += 1
    if config.delete and config.retention_ms >= 0:
        while n < last and now_ms - segments[n].largest_timestamp() > config.retention_ms:
            n += 1
    if config.delete and config.retention_bytes >= 0:
        excess = sum(seg.size for seg in segments[n:]) - config.retention_bytes
        while n < last and excess - segments[n].size >= 0:
            excess -= segments[n].size
            n += 1
    return n
