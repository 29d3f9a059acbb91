"""A power loss, as the tests simulate it: a segment file keeps only what its own fsyncs made
durable (its batches below a given offset); whatever followed is gone."""

from __future__ import annotations

import os
from pathlib import Path

from groupcoord.formats.batch import iter_batches


def cut_segment_to(path: Path, floor: int) -> int:
    """Truncate the segment file at ``path`` after its last batch below ``floor``; returns the
    bytes removed."""
    data = path.read_bytes()
    keep = 0
    for pos, h in iter_batches(data):
        if h.base_offset >= floor:
            break
        keep = pos + h.size
    os.truncate(path, keep)
    return len(data) - keep
