"""Time, injected.

Everything that measures protocol time asks a :class:`Clock` for milliseconds. The server
uses :class:`SystemClock`; tests and the simulator use :class:`ManualClock` and move time
forward explicitly, so no test ever sleeps to see a timeout fire.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Milliseconds since the Unix epoch (wall time, as Kafka stamps records)."""
        ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class ManualClock:
    """A clock that only moves when told to."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        if ms < 0:
            raise ValueError("time does not go backwards")
        self._now += ms
        return self._now

    def set(self, now_ms: int) -> None:
        if now_ms < self._now:
            raise ValueError("time does not go backwards")
        self._now = now_ms
