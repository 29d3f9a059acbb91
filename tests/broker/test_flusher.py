"""The coalescing fsync flusher: one long-lived thread, one round for a tick's requests, every
answer released only after the fsync of its partitions, errors reported, close() joins."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Hashable
from typing import Any

import pytest

from groupcoord.broker.durability import Flusher
from groupcoord.storage.segment import Flushable

WAIT_S = 10.0


class Part:
    """A partition whose fsync the test can hold, count and fail."""

    def __init__(self, name: str, *, hold: bool = False, fail: OSError | None = None) -> None:
        self.name = name
        self.calls = 0
        self.threads: list[str] = []
        self.thread_objects: list[threading.Thread] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()
        self.fail = fail

    def flush(self) -> object:
        self.calls += 1
        self.threads.append(threading.current_thread().name)
        self.thread_objects.append(threading.current_thread())
        self.entered.set()
        assert self.release.wait(WAIT_S)
        if self.fail is not None:
            raise self.fail
        return None


def parts(*ps: Part) -> dict[Hashable, Flushable]:
    return {p.name: p for p in ps}


async def in_thread(event: threading.Event) -> None:
    assert await asyncio.get_running_loop().run_in_executor(None, event.wait, WAIT_S)


def test_requests_of_one_tick_share_one_round_and_one_fsync_per_partition() -> None:
    async def scenario() -> None:
        flusher = Flusher()
        a, b = Part("a"), Part("b")
        futs = [flusher.flush(parts(a)), flusher.flush(parts(b)), flusher.flush(parts(a, b))]
        await asyncio.wait_for(asyncio.gather(*futs), WAIT_S)
        assert (a.calls, b.calls, flusher.rounds) == (1, 1, 1)
        assert a.threads == ["groupcoord-fsync"]
        flusher.close()

    asyncio.run(scenario())


def test_an_answer_waits_for_the_fsync_and_a_later_request_for_the_next_round() -> None:
    async def scenario() -> None:
        flusher = Flusher()
        a = Part("a", hold=True)
        first = flusher.flush(parts(a))
        await in_thread(a.entered)  # round 1 is inside fsync
        second = flusher.flush(parts(a))  # appended after that fsync began
        await asyncio.sleep(0)
        assert not first.done() and not second.done()
        a.entered.clear()
        a.release.set()
        await asyncio.wait_for(first, WAIT_S)
        await asyncio.wait_for(second, WAIT_S)
        assert (a.calls, flusher.rounds) == (2, 2)
        flusher.close()

    asyncio.run(scenario())


def test_an_fsync_error_fails_every_waiter_of_its_round_and_the_next_round_succeeds() -> None:
    async def scenario() -> None:
        flusher = Flusher()
        bad = Part("bad", fail=OSError(5, "EIO"))
        futs = [flusher.flush(parts(bad)), flusher.flush(parts(bad))]
        results = await asyncio.wait_for(asyncio.gather(*futs, return_exceptions=True), WAIT_S)
        assert [type(r) for r in results] == [OSError, OSError]
        assert [r.errno for r in results if isinstance(r, OSError)] == [5, 5]
        bad.fail = None
        await asyncio.wait_for(flusher.flush(parts(bad)), WAIT_S)
        assert (bad.calls, flusher.rounds) == (2, 2)
        flusher.close()

    asyncio.run(scenario())


def test_a_round_completes_its_futures_with_one_threadsafe_call() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        calls: list[Any] = []
        original = loop.call_soon_threadsafe

        def counting(callback: Any, *args: Any, **kwargs: Any) -> Any:
            if threading.current_thread().name == "groupcoord-fsync":
                calls.append(callback)
            return original(callback, *args, **kwargs)

        loop.call_soon_threadsafe = counting  # type: ignore[method-assign,assignment]
        flusher = Flusher()
        a = Part("a")
        await asyncio.wait_for(asyncio.gather(*(flusher.flush(parts(a)) for _ in range(50))), WAIT_S)
        assert (flusher.rounds, len(calls)) == (1, 1)
        flusher.close()

    asyncio.run(scenario())


def test_close_flushes_what_is_pending_joins_the_thread_and_refuses_new_work() -> None:
    async def scenario() -> None:
        flusher = Flusher()
        a = Part("a")
        fut = flusher.flush(parts(a))
        flusher.close()  # before the loop ever ran the round's wake-up
        assert a.calls == 1
        # this flusher's own thread (started by close for the pending round): other
        # brokers in the process may run threads of the same name
        thread = flusher._worker
        assert thread is not None and not thread.is_alive()
        await asyncio.wait_for(fut, WAIT_S)
        late = flusher.flush(parts(a))
        with pytest.raises(RuntimeError, match="closed"):
            await late
        with pytest.raises(RuntimeError):
            flusher.executor.submit(a.flush)

    asyncio.run(scenario())


def test_executor_jobs_run_on_the_flusher_thread_between_rounds() -> None:
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        flusher = Flusher()
        a = Part("a", hold=True)
        round_fut = flusher.flush(parts(a))
        await in_thread(a.entered)
        job = loop.run_in_executor(flusher.executor, threading.current_thread)
        await asyncio.sleep(0)
        assert not job.done()  # serialized behind the fsync in progress
        a.release.set()
        await asyncio.wait_for(round_fut, WAIT_S)
        thread = await asyncio.wait_for(job, WAIT_S)
        assert thread.name == "groupcoord-fsync"
        flusher.close()

    asyncio.run(scenario())


def test_a_round_fsyncs_its_partitions_at_once_and_answers_only_after_the_last() -> None:
    """Fifty partitions in one round: FSYNC_PARALLELISM fsyncs are under way at the same time (the
    old flusher ran them in a row: the second never started while the first was held), each runs
    once, and no waiter is released while the last one is still running."""

    async def scenario() -> None:
        from groupcoord.broker.durability import FSYNC_PARALLELISM

        flusher = Flusher()
        ps = [Part(f"p{i}", hold=True) for i in range(50)]
        futs = [flusher.flush(parts(p)) for p in ps]
        for p in ps[:FSYNC_PARALLELISM]:
            await in_thread(p.entered)  # this many fsyncs run at the same time
        for p in ps[:-1]:
            p.release.set()
            await in_thread(p.entered)
        await in_thread(ps[-1].entered)
        await asyncio.sleep(0.05)
        assert not any(f.done() for f in futs)  # the last partition's fsync still holds the round
        ps[-1].release.set()
        await asyncio.wait_for(asyncio.gather(*futs), WAIT_S)
        assert ([p.calls for p in ps], flusher.rounds) == ([1] * 50, 1)
        assert {t for p in ps for t in p.threads} > {"groupcoord-fsync"}
        flusher.close()
        # the threads that ran this flusher's fsyncs are gone (other brokers in the process
        # may run threads of the same names)
        assert not [t.name for p in ps for t in p.thread_objects if t.is_alive()]

    asyncio.run(scenario())


def test_an_fsync_error_on_a_helper_thread_fails_the_whole_round() -> None:
    async def scenario() -> None:
        flusher = Flusher()
        ok, bad = Part("ok"), Part("bad", fail=OSError(5, "EIO"))
        futs = [flusher.flush(parts(ok)), flusher.flush(parts(bad))]  # "bad" runs on a helper
        results = await asyncio.wait_for(asyncio.gather(*futs, return_exceptions=True), WAIT_S)
        assert [getattr(r, "errno", r) for r in results] == [5, 5]
        assert bad.threads[0].startswith("groupcoord-fsync_")
        flusher.close()

    asyncio.run(scenario())
