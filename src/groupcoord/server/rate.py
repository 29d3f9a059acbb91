"""A windowed rate and the throttle time of a quota on it, as Kafka's metrics compute them.

Kafka measures every quota (client byte rates, request time, connection creation) with a
``Rate`` over a ``SampledTotal``: ``quota.window.num`` samples of ``quota.window.size.seconds``
each (``MetricConfig.samples`` / ``timeWindowMs``). Hand-written because Kafka's exact arithmetic
is what a client observes in ``throttle_time_ms``, and no Python metrics library computes it:

* ``record``: the current sample takes the value; a sample is complete once it is a window old,
  and the next one then starts (at most ``samples + 1`` are kept: ``SampledStat.advance``).
* a sample whose last event is ``samples`` windows old or more is reset before measuring
  (``SampledStat.purgeObsoleteSamples``).
* the rate is the samples' total over the elapsed time since the oldest sample started, counted
  as at least ``samples - 1`` whole windows and at least 1 ms (``Rate.windowSize``).
* a quota ``bound`` is violated when the rate after recording is above it
  (``Quota.acceptable``); the throttle time is ``(rate - bound) / bound * windowSize``, rounded
  (``QuotaUtils.throttleTime``): how long until the average is back at the bound if nothing more
  is recorded.
"""

from __future__ import annotations

import math


class _Sample:
    __slots__ = ("last_event_ms", "start_ms", "value")

    def __init__(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.value = 0.0

    def reset(self, now_ms: int) -> None:
        self.start_ms = now_ms
        self.last_event_ms = now_ms
        self.value = 0.0


class Rate:
    """Kafka's ``Rate`` (per second) over ``samples`` windows of ``window_ms``."""

    __slots__ = ("_current", "_samples", "samples", "window_ms")

    def __init__(self, samples: int, window_ms: int) -> None:
        self.samples = samples
        self.window_ms = window_ms
        self._samples: list[_Sample] = []
        self._current = 0

    def _current_sample(self, now_ms: int) -> _Sample:
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        return self._samples[self._current]

    def record(self, value: float, now_ms: int) -> None:
        sample = self._current_sample(now_ms)
        if now_ms - sample.start_ms >= self.window_ms:
            self._current = (self._current + 1) % (self.samples + 1)
            if self._current >= len(self._samples):
                sample = _Sample(now_ms)
                self._samples.append(sample)
            else:
                sample = self._samples[self._current]
                sample.reset(now_ms)
        sample.value += value
        sample.last_event_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        expire = self.samples * self.window_ms
        for sample in self._samples:
            if now_ms - sample.last_event_ms >= expire:
                sample.reset(now_ms)

    def window_size_ms(self, now_ms: int) -> int:
        self._purge(now_ms)
        if not self._samples:
            self._samples.append(_Sample(now_ms))
        oldest = min(sample.start_ms for sample in self._samples)
        elapsed = now_ms - oldest
        full = elapsed // self.window_ms
        if full < self.samples - 1:
            elapsed += (self.samples - 1 - full) * self.window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: int) -> float:
        """The rate per second at ``now_ms``."""
        self._purge(now_ms)
        total = sum(sample.value for sample in self._samples)
        return total / (self.window_size_ms(now_ms) / 1000.0)

    def throttle_ms(self, bound: float, now_ms: int) -> int:
        """0 while the rate is within ``bound``, else ``QuotaUtils.throttleTime``."""
        rate = self.measure(now_ms)
        if rate <= bound:
            return 0
        # Java's Math.round: half up
        return math.floor((rate - bound) / bound * self.window_size_ms(now_ms) + 0.5)

    def record_and_throttle_ms(self, value: float, bound: float, now_ms: int) -> int:
        """Record ``value`` and check the quota, as ``Sensor.record(value, now, checkQuotas=true)``."""
        self.record(value, now_ms)
        return self.throttle_ms(bound, now_ms)
