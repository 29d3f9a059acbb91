"""A partition holds one descriptor per segment: its indexes are written through one bounded set
of open index files shared by every log (``groupcoord.storage.index_files``).

Kafka holds one descriptor per segment too: ``AbstractIndex`` memory-maps the ``.index`` and
``.timeindex`` files and closes the file right after mapping, and ``FileRecords`` keeps the
``.log``'s channel open. Descriptors are counted on this test's own files through
``/proc/self/fd`` (not a process-wide count, which other threads change).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.clock import ManualClock
from groupcoord.formats.batch import build_batch, parse_header
from groupcoord.storage.index_files import INDEX_FILES, IndexFiles
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig

T0 = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=4000, index_interval_bytes=150)


def batch(i: int) -> bytes:
    return build_batch([(b"k%d" % i, b"v" * 60, ())], timestamp_ms=T0 + i)


def open_files(under: Path) -> list[str]:
    """Names of the files under ``under`` this process holds a descriptor on."""
    prefix = str(under) + "/"
    names = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(prefix):
                names.append(target[len(prefix) :])
    return sorted(names)


def test_many_partitions_hold_one_descriptor_each_and_the_indexes_share_the_bounded_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends interleaved over twelve partitions through a set of four: every index write finds
    its file closed by the others' writes and opens it again. Each partition still holds exactly
    one descriptor per segment, the indexes at most four in all, and the index files on disk are
    what the indexing rule gives at every moment: a copy taken as a crash would leave it reopens
    with no index rebuilt (recovery rebuilds the active segment and compares)."""
    monkeypatch.setattr(INDEX_FILES, "capacity", 4)
    clock = ManualClock(T0)
    logs = [PartitionLog.open(tmp_path / f"t-{p}", CONFIG, clock)[0] for p in range(12)]
    for i in range(80):
        for plog in logs:
            plog.append(batch(i))
    segments = logs[0].segment_count
    assert segments >= 2  # rolled segments too
    held = open_files(tmp_path)
    assert [n for n in held if n.endswith(".log")] == sorted(
        f"t-{p}/{path.name}" for p, plog in enumerate(logs) for path in plog.segment_files()
    )
    index_fds = [n for n in held if not n.endswith(".log")]
    assert len(index_fds) == 4
    # The last two partitions written hold the four (their .index and .timeindex).
    assert {n.split("/")[0] for n in index_fds} == {"t-10", "t-11"}

    for p, plog in enumerate(logs):
        copy = shutil.copytree(tmp_path / f"t-{p}", tmp_path / "crashed" / f"t-{p}")
        again, report = PartitionLog.open(copy, CONFIG, clock)
        assert (report.clean_shutdown, report.segments_checked, report.indexes_rebuilt) == (False, 1, 0)
        assert again.log_end_offset == 80
        for offset in (0, 17, 41, 79):
            assert parse_header(again.read(offset, 1).data).base_offset == offset
        assert again.offset_for_timestamp(T0 + 33) == (33, T0 + 33)
        again.close()
        assert plog.offset_for_timestamp(T0 + 50) == (50, T0 + 50)

    for plog in logs:
        plog.close()
    assert open_files(tmp_path) == []
    for p in range(12):  # a clean reopen trusts the indexes written through the set
        again, report = PartitionLog.open(tmp_path / f"t-{p}", CONFIG, clock)
        assert (report.clean_shutdown, report.indexes_rebuilt, again.segment_count) == (True, 0, segments)
        assert again.offset_for_timestamp(T0 + 61) == (61, T0 + 61)
        again.close()


def test_the_least_recently_written_index_file_is_closed_first(tmp_path: Path) -> None:
    files = IndexFiles(2)
    a, b, c = (tmp_path / n for n in "abc")
    for owner, path, data in ((a, a, b"1"), (b, b, b"2"), (a, a, b"3"), (c, c, b"4")):
        with files.lock:
            os.pwrite(files.fd_for(owner, 0, path), data, path.stat().st_size if path.exists() else 0)
    assert open_files(tmp_path) == ["a", "c"]
    assert (a.read_bytes(), b.read_bytes(), c.read_bytes()) == (b"13", b"2", b"4")
    with files.lock:  # b is opened again, and a (now the least recent) closed
        os.pwrite(files.fd_for(b, 0, b), b"5", 1)
    assert open_files(tmp_path) == ["b", "c"]
    assert b.read_bytes() == b"25"
    files.release(b, (0,))
    files.release(c, (0,))
    assert open_files(tmp_path) == [] and len(files) == 0


_AT_THE_LIMIT = """
import os, resource, sys
from pathlib import Path
from groupcoord.storage.index_files import IndexFiles
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
root = Path(sys.argv[1])
files = IndexFiles(1000)  # far above the limit: the OS refuses before the set is full
for i in range(300):
    with files.lock:
        os.pwrite(files.fd_for(i, 0, root / str(i)), b"%d" % i, 0)
assert all((root / str(i)).read_bytes() == b"%d" % i for i in range(300))
print(len(files))
"""


def test_at_the_open_files_limit_the_set_gives_descriptors_back_instead_of_failing(tmp_path: Path) -> None:
    """A child process with a soft limit of 64 descriptors writes 300 index files through a set
    allowed 1,000: when the OS refuses an open (EMFILE), the set closes half of its descriptors
    and opens again, so every write lands."""
    done = subprocess.run(
        [sys.executable, "-c", _AT_THE_LIMIT, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert 0 < int(done.stdout) < 64
