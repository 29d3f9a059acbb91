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
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

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
