"""Open descriptors of segment index files, shared by every log and bounded.

A segment's ``.index`` and ``.timeindex`` are written while it is the active segment: an entry
every ``index.interval.bytes`` of appended data, written to the file at once so a process crash
leaves the index as the log (see :mod:`groupcoord.storage.segment`). Holding both descriptors for
every active segment made a partition cost three descriptors, and a topic of 10,000 partitions
needed 30,000 of them. Kafka holds one per segment: it memory-maps the indexes and closes the
file right after mapping (``AbstractIndex``). Python's ``mmap.mmap`` duplicates the descriptor it
is given, so mapping would save nothing here; instead the index descriptors live in this one
least-recently-used set, and an index write whose file is not in it opens the file (closing the
least recently written one when the set is full). A partition then holds one descriptor per
segment (its ``.log``), and all indexes together at most :attr:`IndexFiles.capacity`.

Writing through a cached descriptor costs one ``pwrite`` (about 1 µs); opening, writing and
closing costs about 9 µs, so the set keeps the indexes of the partitions being written open.

Threads: appends run on the event loop, recovery on the log manager's opening threads and
compaction on a worker thread, all through the one :data:`INDEX_FILES`. One lock covers a
lookup, the write through the descriptor and the closing of evicted ones, so no descriptor is
closed while another thread writes through it. An fsync (at a roll, a close, after recovery)
takes the segment's descriptor out of the set first (:meth:`IndexFiles.detach`) and syncs it
with no lock held.
"""

from __future__ import annotations

import contextlib
import errno
import os
import resource
import threading
from collections import OrderedDict
from pathlib import Path

__all__ = ["INDEX_FILES", "IndexFiles", "default_capacity"]

#: most index descriptors kept open, whatever the limit
MAX_CAPACITY = 512
#: fewest, however low the limit (a smaller set only costs opens)
MIN_CAPACITY = 8


def default_capacity() -> int:
    """One eighth of the process's open-files soft limit, between :data:`MIN_CAPACITY` and
    :data:`MAX_CAPACITY`: the rest stays for the segments' ``.log`` files and the sockets."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CAPACITY
    return max(MIN_CAPACITY, min(MAX_CAPACITY, soft // 8))


class IndexFiles:
    """At most ``capacity`` open index files, keyed by (owner, kind); the least recently used is
    closed first. The owner (a segment) is held by its key until it is released or evicted, so
    a key is never reused for another file."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.capacity = capacity
        #: held around :meth:`fd_for` and every use of the descriptor it returns
        self.lock = threading.Lock()
        self._fds: OrderedDict[tuple[object, int], int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._fds)

    def fd_for(self, owner: object, kind: int, path: Path) -> int:
        """The descriptor of ``path``, opened (created) when absent. The caller holds
        :attr:`lock` from this call until it is done with the descriptor."""
        key = (owner, kind)
        fd = self._fds.get(key)
        if fd is not None:
            self._fds.move_to_end(key)
            return fd
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EMFILE, errno.ENFILE) or not self._fds:
                raise
            # Descriptors of this set can be given back: half of them, and once more.
            self._evict(len(self._fds) // 2 or 1)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._evict(len(self._fds) + 1 - self.capacity)
        self._fds[key] = fd
        return fd

    def _evict(self, n: int) -> None:
        for _ in range(min(n, len(self._fds))):
            _key, fd = self._fds.popitem(last=False)
            with contextlib.suppress(OSError):
                os.close(fd)

    def create(self, owner: object, kind: int, path: Path) -> None:
        """Create ``path`` if absent (and keep it open, as it is about to be written)."""
        with self.lock:
            self.fd_for(owner, kind, path)

    def detach(self, owner: object, kind: int, path: Path) -> int:
        """A descriptor of ``path`` that is no longer in the set: the caller uses it (an fsync,
        with no lock held) and closes it. The one in the set when there is one, so no open is
        needed at the open-files limit."""
        with self.lock:
            fd = self.fd_for(owner, kind, path)
            del self._fds[(owner, kind)]
            return fd

    def release(self, owner: object, kinds: tuple[int, ...]) -> None:
        """Close the descriptors ``owner`` has in the set (no more writes are coming)."""
        with self.lock:
            for kind in kinds:
                fd = self._fds.pop((owner, kind), None)
                if fd is not None:
                    with contextlib.suppress(OSError):
                        os.close(fd)


#: The set every segment writes its indexes through.
INDEX_FILES = IndexFiles(default_capacity())
