"""The consumer core's topic metadata (Java ``ConsumerMetadata``): partition counts, refreshes.

The consumer core asks for Metadata for three reasons: a pattern subscription must learn every
topic's name, the leader must know each subscribed topic's partition count before it assigns,
and both refresh every ``metadata.max.age.ms`` so that a new topic or a new partition triggers a
rebalance. :class:`ConsumerMetadata` keeps what the answers said and when to ask again; the core
decides when it needs fresh data and sends the request (one at a time).
"""

from __future__ import annotations

import re

from groupcoord.client.messages import MetadataResponse
from groupcoord.errors import ErrorCode

__all__ = ["ConsumerMetadata"]


class ConsumerMetadata:
    """What Metadata answers said and when to ask again (see the module docstring)."""

    def __init__(self, *, max_age_ms: int, retry_backoff_ms: int, exclude_internal_topics: bool) -> None:
        self._max_age_ms = max_age_ms
        self._retry_backoff_ms = retry_backoff_ms
        self._exclude_internal_topics = exclude_internal_topics
        #: topic -> partition count, of the topics the last answers named without an error
        self.partitions: dict[str, int] = {}
        self.internal_topics: set[str] = set()
        #: answers received so far (the leader waits for one newer than its JoinGroup answer)
        self.version = 0
        #: the request in flight and the topics it asked for (None: every topic)
        self.request: int | None = None
        self.asked: tuple[str, ...] | None = None
        #: the core wants fresh metadata at its next turn (after ``not_before``)
        self.wanted = False
        self.not_before = 0
        self.next_refresh = 0

    def can_send(self, now_ms: int) -> bool:
        return self.request is None and now_ms >= self.not_before

    def sent(self, request_id: int, topics: tuple[str, ...] | None) -> None:
        self.wanted = False
        self.asked = topics
        self.request = request_id

    def on_response(self, request_id: int, response: MetadataResponse | None, now_ms: int) -> None:
        """An answer (``None``: the request failed; ask again after the retry backoff)."""
        if request_id == self.request:
            self.request = None
        if response is None:
            self.wanted = True
            self.not_before = now_ms + self._retry_backoff_ms
            return
        if self.asked is None:  # every topic: forget the ones no longer there
            self.partitions = {}
            self.internal_topics = set()
        for t in response.topics:
            if t.error is ErrorCode.NONE:
                self.partitions[t.name] = t.partitions
                if t.internal:
                    self.internal_topics.add(t.name)
            else:
                self.partitions.pop(t.name, None)
        self.version += 1
        self.next_refresh = now_ms + self._max_age_ms

    def matching(self, pattern: re.Pattern[str]) -> frozenset[str]:
        """The known topics whose whole name matches ``pattern`` (internal ones excluded unless
        ``exclude.internal.topics`` is false)."""
        return frozenset(
            t
            for t in self.partitions
            if pattern.fullmatch(t)
            and not (self._exclude_internal_topics and (t in self.internal_topics or t.startswith("__")))
        )

    def deadlines(self, *, refreshing: bool) -> list[int]:
        """When the core next has metadata work (``refreshing``: it refreshes periodically)."""
        out: list[int] = []
        if refreshing:
            out.append(max(self.next_refresh, self.not_before))
        if self.wanted and self.request is None:
            out.append(self.not_before)
        return out
