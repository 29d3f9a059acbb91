"""The keyed timer service driven by the event loop.

One :class:`~groupcoord.timer.KeyedTimer` holds every protocol deadline of the broker (fetch
long-polls today, group timers next); this class keeps exactly one ``loop.call_later`` armed
for its earliest deadline and runs due callbacks when it fires.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Hashable

from groupcoord.clock import Clock
from groupcoord.timer import KeyedTimer

log = logging.getLogger(__name__)

Callback = Callable[[], None]


class LoopTimers:
    def __init__(self, clock: Clock, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.clock = clock
        self.timer: KeyedTimer[Hashable, Callback] = KeyedTimer()
        self._loop = loop
        self._handle: asyncio.TimerHandle | None = None
        self._armed_for: int | None = None

    def _get_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def schedule(self, key: Hashable, deadline_ms: int, callback: Callback) -> None:
        self.timer.schedule(key, deadline_ms, callback)
        self._rearm()

    def cancel(self, key: Hashable) -> None:
        self.timer.cancel(key)
        # A now-stale wake-up is harmless: _fire finds nothing due and re-arms.

    def _rearm(self) -> None:
        nxt = self.timer.next_deadline()
        if nxt is None:
            return
        if self._handle is not None and self._armed_for is not None and self._armed_for <= nxt:
            return
        if self._handle is not None:
            self._handle.cancel()
        delay = max(0, nxt - self.clock.now_ms()) / 1000.0
        self._armed_for = nxt
        self._handle = self._get_loop().call_later(delay, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._armed_for = None
        for key, callback in self.timer.expire(self.clock.now_ms()):
            try:
                callback()
            except Exception:
                log.exception("timer callback for %r failed", key)
        self._rearm()

    def run_due(self) -> None:
        """Fire whatever is due at the clock's current time now (tests advance a ManualClock)."""
        if self._handle is not None:
            self._handle.cancel()
        self._fire()

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
