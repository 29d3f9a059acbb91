"""The consumer-protocol member's lookups: the coordinator (FindCoordinator) and the names of
topic ids (Metadata by id), each retried with backoff, one request in flight at most.

Java keeps these outside the membership manager too (``CoordinatorRequestManager``, and the
metadata cache the membership manager asks with ``metadata.requestUpdate``)."""

from __future__ import annotations

import uuid

from groupcoord.client.consumer_group_messages import TopicIdsMetadataRequest, TopicIdsMetadataResponse
from groupcoord.client.errors import KafkaClientError
from groupcoord.client.heartbeat import ExponentialBackoff
from groupcoord.client.messages import FindCoordinatorRequest, FindCoordinatorResponse, Node
from groupcoord.errors import ErrorCode


class Retry:
    """One kind of request with backoff between failed attempts."""

    def __init__(self, backoff: ExponentialBackoff) -> None:
        self._backoff = backoff
        self.not_before = 0
        self.attempts = 0
        self.request_id: int | None = None

    def due(self, now: int) -> bool:
        return self.request_id is None and now >= self.not_before

    def succeeded(self, now: int) -> None:
        """Answered: attempts start over, but the next request still waits the minimal backoff
        (Java ``RequestState.onSuccessfulAttempt``), so a coordinator that keeps answering
        NOT_COORDINATOR is looked up once per ``retry.backoff.ms``, not in a tight loop."""
        self.request_id = None
        self.attempts = 0
        self.not_before = now + self._backoff.backoff(0)

    def failed(self, now: int) -> None:
        self.request_id = None
        self.not_before = now + self._backoff.backoff(self.attempts)
        self.attempts += 1


class CoordinatorLookup:
    """The group's coordinator (Java ``CoordinatorRequestManager``): FindCoordinator, retried."""

    def __init__(self, group_id: str, backoff: ExponentialBackoff) -> None:
        self.group_id = group_id
        self.retry = Retry(backoff)

    def request(self, now: int, *, wanted: bool) -> FindCoordinatorRequest | None:
        """The lookup to send now, if the member wants a coordinator it does not know."""
        return FindCoordinatorRequest(key=self.group_id) if wanted and self.retry.due(now) else None

    def on_response(
        self, r: FindCoordinatorResponse, now: int
    ) -> tuple[Node | None, KafkaClientError | None]:
        """The coordinator found, or the error the application must see (GROUP_AUTHORIZATION_FAILED;
        any other error is retried after backoff)."""
        if r.error is ErrorCode.NONE and r.node is not None:
            self.retry.succeeded(now)
            return r.node, None
        self.retry.failed(now)
        if r.error is ErrorCode.GROUP_AUTHORIZATION_FAILED:
            return None, KafkaClientError(r.error_message or r.error.name, r.error)
        return None, None

    def next_deadline(self, *, wanted: bool) -> int | None:
        return self.retry.not_before if wanted and self.retry.request_id is None else None


class TopicIdNames:
    """Topic id -> name (Java ``metadata.topicNames()``) and the ids the member still wants named."""

    def __init__(self, backoff: ExponentialBackoff) -> None:
        self.names: dict[uuid.UUID, str] = {}
        self.wanted: set[uuid.UUID] = set()
        self.retry = Retry(backoff)

    def want(self, ids: set[uuid.UUID] | frozenset[uuid.UUID]) -> None:
        self.wanted |= {t for t in ids if t not in self.names}

    def request(self, now: int) -> TopicIdsMetadataRequest | None:
        self.wanted = {t for t in self.wanted if t not in self.names}
        if not self.wanted or not self.retry.due(now):
            return None
        return TopicIdsMetadataRequest(topic_ids=tuple(sorted(self.wanted, key=str)))

    def on_response(self, r: TopicIdsMetadataResponse, now: int) -> None:
        for t in r.topics:
            if t.error is ErrorCode.NONE and t.name:
                self.names[t.topic_id] = t.name
        self.wanted = {t for t in self.wanted if t not in self.names}
        if self.wanted:  # still unknown: ask again after backoff (Java requests another update)
            self.retry.failed(now)
        else:
            self.retry.succeeded(now)

    def next_deadline(self) -> int | None:
        return self.retry.not_before if self.wanted and self.retry.request_id is None else None
