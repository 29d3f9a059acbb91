"""The broker's log cleaner (``groupcoord.broker.log_cleaner``): when passes run, which partitions
they visit, ``log.cleaner.enable``, and closing during a pass.

Real logs on disk and the broker's keyed timers (``LoopTimers``) on a ManualClock, on an asyncio
loop of the test's own. As Kafka's ``LogCleaner``: a pass every ``log.cleaner.backoff.ms``
(``CleanerThread.doWork`` backs off that long when nothing was cleaned) over the logs whose
``cleanup.policy`` includes compact at that moment (``LogCleanerManager.grabFilthiestCompactedLog``
reads each log's current config); with ``log.cleaner.enable=false`` no cleaner runs
(``LogManager`` starts none).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from groupcoord.broker.log_cleaner import BrokerCleaner
from groupcoord.clock import ManualClock
from groupcoord.formats.batch import build_batch, decode_records
from groupcoord.handling.loop_timers import LoopTimers
from groupcoord.storage.cleaner import CompactionReport
from groupcoord.storage.log import PartitionLog
from groupcoord.storage.log_config import LogConfig

BACKOFF = 15_000


def open_log(path: Path, policy: str, clock: ManualClock) -> PartitionLog:
    plog, _ = PartitionLog.open(path, LogConfig(cleanup_policy=policy, segment_bytes=100), clock)
    return plog


def fill(plog: PartitionLog) -> None:
    """k=v0 .. k=v5, one batch each: several segments of 100 bytes, the last one active."""
    for i in range(6):
        plog.append(build_batch([(b"k", f"v{i}".encode(), ())], timestamp_ms=0))


def offsets(plog: PartitionLog) -> list[int]:
    return [
        r.offset for h, data in plog.iter_batches_from(0) if not h.is_control for r in decode_records(data)
    ]


async def until(pred: Callable[[], bool]) -> None:
    """Yield to the loop until ``pred`` holds (the pass's end is handed back to the loop)."""
    for _ in range(10_000):
        if pred():
            return
        await asyncio.sleep(0.001)
    raise AssertionError("timed out")


def test_a_pass_runs_every_backoff_on_the_broker_clock_over_the_compacted_logs(tmp_path: Path) -> None:
    """Nothing before log.cleaner.backoff.ms of broker time; then one pass over the logs that
    are compacted, not the others; a log switched to compact is in the next pass."""
    clock = ManualClock()
    logs = {
        ("c", 0): open_log(tmp_path / "c-0", "compact", clock),
        ("d", 0): open_log(tmp_path / "d-0", "delete", clock),
    }
    for plog in logs.values():
        fill(plog)

    async def main() -> None:
        timers = LoopTimers(clock)
        cleaner = BrokerCleaner(partitions=lambda: logs, clock=clock, timers=timers, backoff_ms=BACKOFF)
        cleaner.start()
        clock.advance(BACKOFF - 1)
        timers.run_due()
        await asyncio.sleep(0)
        assert cleaner.passes == 0
        clock.advance(1)
        timers.run_due()
        await until(lambda: cleaner.passes == 1)
        assert cleaner.last_pass is not None
        assert cleaner.last_pass.partitions == (("c", 0),)
        assert offsets(logs[("c", 0)]) == [4, 5]  # 5 is in the active segment
        assert offsets(logs[("d", 0)]) == [0, 1, 2, 3, 4, 5]

        logs[("d", 0)].config = replace(logs[("d", 0)].config, cleanup_policy="compact")
        clock.advance(BACKOFF)  # the next pass was armed a backoff after the first one ended
        timers.run_due()
        await until(lambda: cleaner.passes == 2)
        assert cleaner.last_pass.partitions == (("c", 0), ("d", 0))
        assert offsets(logs[("d", 0)]) == [4, 5]
        await cleaner.close()
        timers.close()

    asyncio.run(main())
    for plog in logs.values():
        plog.close()


def test_log_cleaner_enable_false_never_compacts(tmp_path: Path) -> None:
    clock = ManualClock()
    plog = open_log(tmp_path / "c-0", "compact", clock)
    fill(plog)

    async def main() -> None:
        timers = LoopTimers(clock)
        cleaner = BrokerCleaner(
            partitions=lambda: {("c", 0): plog}, clock=clock, timers=timers, backoff_ms=BACKOFF, enabled=False
        )
        cleaner.start()
        assert timers.timer.next_deadline() is None
        clock.advance(10 * BACKOFF)
        timers.run_due()
        await asyncio.sleep(0.01)
        assert cleaner.passes == 0
        await cleaner.close()

    asyncio.run(main())
    assert offsets(plog) == [0, 1, 2, 3, 4, 5]
    plog.close()


@dataclass
class _Cfg:
    compact: bool = True


class Blocking:
    """A compacted partition whose compaction waits for the test (what the pass is doing when
    the broker closes)."""

    def __init__(self) -> None:
        self.config = _Cfg()
        self.closed = False
        self.entered = threading.Event()
        self.release = threading.Event()
        self.compactions = 0

    def compact(self, now_ms: int) -> CompactionReport:
        self.compactions += 1
        self.entered.set()
        assert self.release.wait(30)
        return CompactionReport(
            segments_cleaned=1, records_removed=0, tombstones_removed=0, bytes_before=0, bytes_after=0
        )


def test_close_during_a_pass_waits_for_the_current_partition_and_skips_the_rest() -> None:
    clock = ManualClock()
    first, second = Blocking(), Blocking()
    parts: Mapping[tuple[str, int], Blocking] = {("a", 0): first, ("b", 0): second}

    async def main() -> None:
        timers = LoopTimers(clock)
        cleaner = BrokerCleaner(partitions=lambda: parts, clock=clock, timers=timers, backoff_ms=BACKOFF)
        cleaner.start()
        clock.advance(BACKOFF)
        timers.run_due()
        assert await asyncio.to_thread(first.entered.wait, 30)
        closing = asyncio.ensure_future(cleaner.close())
        await asyncio.sleep(0.01)
        assert not closing.done()  # waits for the partition being cleaned
        first.release.set()
        await asyncio.wait_for(closing, 30)
        assert cleaner.last_pass is not None
        assert (cleaner.last_pass.partitions, cleaner.last_pass.stopped) == ((("a", 0),), True)
        assert timers.timer.next_deadline() is None  # no further pass armed
        timers.close()

    asyncio.run(main())
    assert (first.compactions, second.compactions) == (1, 0)


def corrupt_first_segment(plog_dir: Path) -> None:
    """Overwrite the attributes and more of the first batch of the oldest segment: the cleaner
    meets an unknown compression codec there."""
    first = sorted(plog_dir.glob("*.log"))[0]
    data = bytearray(first.read_bytes())
    data[20:40] = b"\xff" * 20
    first.write_bytes(bytes(data))


def test_a_partition_whose_compaction_fails_is_marked_uncleanable_once_and_skipped(
    tmp_path: Path, caplog: Any
) -> None:
    """KIP-346 (``LogCleaner``: "Unexpected exception thrown when cleaning log ... Marking its
    partition ... as uncleanable"; ``LogCleanerManagerTest.testMarkPartitionUncleanable...``):
    one WARNING line without a traceback, the partition skipped by every later pass while the
    others are cleaned, counted in ``uncleanable``; deleting the partition clears the mark
    (``maintainUncleanablePartitions``)."""
    clock = ManualClock()
    logs = {
        ("bad", 0): open_log(tmp_path / "bad-0", "compact", clock),
        ("good", 0): open_log(tmp_path / "good-0", "compact", clock),
    }
    for plog in logs.values():
        fill(plog)
    corrupt_first_segment(tmp_path / "bad-0")

    async def main() -> None:
        timers = LoopTimers(clock)
        cleaner = BrokerCleaner(partitions=lambda: logs, clock=clock, timers=timers, backoff_ms=BACKOFF)
        cleaner.start()
        for n in (1, 2, 3):
            clock.advance(BACKOFF)
            timers.run_due()
            await until(lambda n=n: cleaner.passes == n)  # type: ignore[misc]
        first, later = caplog.records, cleaner.last_pass
        lines = [r for r in first if "uncleanable" in r.getMessage()]
        assert len(lines) == 1 and lines[0].levelname == "WARNING" and lines[0].exc_info is None
        assert "bad-0" in lines[0].getMessage() and "unknown compression codec" in lines[0].getMessage()
        assert cleaner.uncleanable == {("bad", 0)}
        assert later is not None and later.partitions == (("good", 0),) and later.failed == ()
        assert offsets(logs[("good", 0)])[-1] == 5
        # the partition is deleted (and, say, created again): the mark goes with it
        logs[("bad", 0)].close()
        clock.advance(BACKOFF)
        timers.run_due()
        await until(lambda: cleaner.passes == 4)
        assert cleaner.uncleanable == frozenset()
        await cleaner.close()
        timers.close()

    caplog.set_level(logging.INFO, logger="groupcoord.broker.log_cleaner")
    asyncio.run(main())
    for plog in logs.values():
        if not plog.closed:
            plog.close()
