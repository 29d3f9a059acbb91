"""Client quota enforcement, as Kafka's ``ClientQuotaManager`` / ``ClientRequestQuotaManager``.

The configured quotas come from the broker (``broker.client_quotas``; ``groupcoord.app`` hands
every change to :meth:`ClientQuotas.update`); this module keeps the rates and computes throttle
times, and the connection (``server.connection``) applies them. What a client observes:

* **Which quota applies** to a request of user U and client id C: the first configured of
  (U, C), (U, default client), U, (default user, C), (default user, default client), default
  user, C, default client (``DefaultQuotaCallback``; KIP-55's precedence). Its rate is shared
  by whatever the matching entity covers: a user quota by all that user's clients, a
  ``client-id`` quota by all users of that id (``quotaMetricTags``). Without SASL the user is
  ``ANONYMOUS``, as Kafka's principal of a PLAINTEXT connection.
* **What is measured**: Produce, the request's size (``producer_byte_rate``); Fetch, the
  answer's size (``consumer_byte_rate``); every request, the time its handler took, as a
  percentage of one second (``request_percentage``, ``nanosToPercentage``). Each over
  ``quota.window.num`` windows of ``quota.window.size.seconds`` (``server.rate``).
* **Throttle time**: ``QuotaUtils.throttleTime`` — how long until the rate is back at the
  quota — for the byte rates; the request quota's is capped at one window
  (``ClientRequestQuotaManager``). The answer carries the larger of the two in
  ``throttle_time_ms`` and the connection reads nothing more for that long after it
  (KIP-219: the channel is muted until the throttle time has passed).

A throttled Fetch is answered empty (no partitions, the throttle time, session id 0), and its
bytes are taken back out of the consumer rate, as ``KafkaApis.handleFetchRequest`` does with
``getThrottledResponse`` and ``unrecordQuotaSensor``. The connection is muted from the moment the
answer is ready, as Kafka's channel is (``KafkaApis`` throttles before ``sendResponse``:
``THROTTLE_STARTED`` moves the channel to ``MUTED_AND_THROTTLED_AND_RESPONSE_PENDING``).

``controller_mutation_rate`` (KIP-599) is a token bucket per matched entity (``TokenBucket``:
``controller.quota.window.num`` x ``controller.quota.window.size.seconds`` of the rate as its
burst, refilled at the rate, starting full), charged with the partitions each CreateTopics,
CreatePartitions and DeleteTopics creates or deletes (:class:`MutationQuota`, used by
``broker.topics``). From CreateTopics v6, CreatePartitions v3 and DeleteTopics v5 it is **strict**
(``StrictControllerMutationQuota``): once the bucket is below zero a topic is refused with
THROTTLING_QUOTA_EXCEEDED, and a topic is accepted whenever it is not, even if it takes the bucket
below zero. Older versions are **permissive**: every topic is accepted. Either way the answer
carries the time until the bucket is back at zero (``-tokens / rate``), and the connection is muted
for it (``sendResponseMaybeThrottleWithControllerQuota``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Final

from groupcoord.server.rate import Rate

ANONYMOUS: Final = "ANONYMOUS"


def quota_user(principal: str) -> str:
    """The quota entity ``user`` of a principal: its name (``User:alice`` -> ``alice``, Kafka's
    ``KafkaPrincipal.getName``), ANONYMOUS for an unauthenticated one."""
    return principal.partition(":")[2] or ANONYMOUS


USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCE_KEY, FETCH_KEY, REQUEST_KEY = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
MUTATION_KEY = "controller_mutation_rate"
#: the APIs that mutate the (controller's) metadata and the version each is strict from
#: (``ControllerApis``: ``newQuotaFor(request, strictSinceVersion)``)
STRICT_SINCE: Final = {19: 6, 20: 5, 37: 3}  # CreateTopics, DeleteTopics, CreatePartitions
IP_RATE_KEY = "connection_creation_rate"
NO_IP_RATE = 2**31 - 1

Entity = tuple[tuple[str, str | None], ...]


class _Manager:
    """One quota type's rates, keyed by the matched entity's (user, client id) tags."""

    def __init__(self, key: str, samples: int, window_ms: int, max_throttle_ms: int | None) -> None:
        self.key = key
        self.samples = samples
        self.window_ms = window_ms
        self.max_throttle_ms = max_throttle_ms
        self.rates: dict[tuple[str, str], Rate] = {}
        #: (user, client id) -> (quota, sensor tags), resolved once per pair until quotas change
        self._resolved: dict[tuple[str, str], tuple[float, tuple[str, str]] | None] = {}
        self.limits: dict[Entity, float] = {}

    def update(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        self.limits = {entity: values[self.key] for entity, values in quotas.items() if self.key in values}
        self._resolved.clear()

    def resolve(self, user: str, client_id: str) -> tuple[float, tuple[str, str]] | None:
        hit = self._resolved.get((user, client_id), _MISSING)
        if hit is not _MISSING:
            return hit  # type: ignore[return-value]
        limits = self.limits
        found: tuple[float, tuple[str, str]] | None = None
        for entity, tags in (
            (((CLIENT_ID, client_id), (USER, user)), (user, client_id)),
            (((CLIENT_ID, None), (USER, user)), (user, client_id)),
            (((USER, user),), (user, "")),
            (((CLIENT_ID, client_id), (USER, None)), (user, client_id)),
            (((CLIENT_ID, None), (USER, None)), (user, client_id)),
            (((USER, None),), (user, "")),
            (((CLIENT_ID, client_id),), ("", client_id)),
            (((CLIENT_ID, None),), ("", client_id)),
        ):
            limit = limits.get(entity)
            if limit is not None:
                found = (limit, tags)
                break
        self._resolved[(user, client_id)] = found
        return found

    def record(self, user: str, client_id: str, value: float, now_ms: int) -> int:
        """Record ``value``; the throttle time (0 when within quota or no quota applies)."""
        resolved = self.resolve(user, client_id)
        if resolved is None:
            return 0
        limit, tags = resolved
        rate = self.rates.get(tags)
        if rate is None:
            rate = self.rates[tags] = Rate(self.samples, self.window_ms)
        throttle = rate.record_and_throttle_ms(value, limit, now_ms)
        if self.max_throttle_ms is not None:
            throttle = min(throttle, self.max_throttle_ms)
        return throttle

    def unrecord(self, user: str, client_id: str, value: float, now_ms: int) -> None:
        """Take back a recorded value (``unrecordQuotaSensor``: a throttled Fetch is answered
        empty, so its bytes do not count)."""
        resolved = self.resolve(user, client_id)
        if resolved is not None:
            rate = self.rates.get(resolved[1])
            if rate is not None:
                rate.record(-value, now_ms)


_MISSING = object()


class TokenBucket:
    """Kafka's ``TokenBucket`` stat: ``burst`` tokens at most, refilled at ``rate`` per second."""

    __slots__ = ("last_ms", "tokens")

    def __init__(self) -> None:
        self.tokens: float | None = None  # full on first use (Kafka's starts empty at time 0)
        self.last_ms = 0

    def refill(self, rate: float, burst: float, now_ms: int) -> float:
        tokens = self.tokens
        tokens = burst if tokens is None else min(burst, tokens + rate * (now_ms - self.last_ms) / 1000.0)
        self.tokens = tokens
        self.last_ms = now_ms
        return tokens


class MutationQuota:
    """One request's controller mutation quota (``StrictControllerMutationQuota`` or
    ``PermissiveControllerMutationQuota``); :data:`UNBOUNDED` when none applies."""

    def __init__(
        self,
        bucket: TokenBucket | None,
        rate: float,
        burst: float,
        strict: bool,
        now_ms: Callable[[], int],
    ) -> None:
        self._bucket = bucket
        self._rate = rate
        self._burst = burst
        self.strict = strict
        self._now_ms = now_ms
        self._throttle_ms = 0
        self._recorded_ms = 0

    def record(self, permits: float) -> bool:
        """Charge ``permits`` (partitions); False when a strict quota refuses them."""
        bucket = self._bucket
        if bucket is None:
            return True
        now = self._now_ms()
        tokens = bucket.refill(self._rate, self._burst, now)
        if self.strict and tokens < 0:  # checkQuotas before recording
            self._throttled(tokens, now)
            return False
        bucket.tokens = min(self._burst, tokens - permits)
        if not self.strict and bucket.tokens < 0:
            self._throttled(bucket.tokens, now)
        return True

    def _throttled(self, tokens: float, now: int) -> None:
        # ControllerMutationQuotaManager.throttleTimeMs: Math.round(-tokens / rate * 1000)
        self._throttle_ms = math.floor(-tokens / self._rate * 1000 + 0.5)
        self._recorded_ms = now

    def throttle_ms(self) -> int:
        """The throttle the answer carries: the last one less the time since (``throttleTime``)."""
        if not self._throttle_ms:
            return 0
        return max(0, self._throttle_ms - (self._now_ms() - self._recorded_ms))


UNBOUNDED: Final = MutationQuota(None, 1.0, 0.0, False, lambda: 0)


class ClientQuotas:
    """Every quota type's manager; :attr:`enabled` while any user/client-id quota is set."""

    def __init__(
        self,
        *,
        quota_window_num: int = 11,
        quota_window_size_seconds: int = 1,
        controller_window_num: int = 11,
        controller_window_size_seconds: int = 1,
    ) -> None:
        window_ms = quota_window_size_seconds * 1000
        self.produce = _Manager(PRODUCE_KEY, quota_window_num, window_ms, None)
        self.fetch = _Manager(FETCH_KEY, quota_window_num, window_ms, None)
        self.request = _Manager(REQUEST_KEY, quota_window_num, window_ms, window_ms)
        #: controller_mutation_rate: its limits and entity matching (no Rate: token buckets)
        self.mutation = _Manager(
            MUTATION_KEY, controller_window_num, controller_window_size_seconds * 1000, None
        )
        self._buckets: dict[tuple[str, str], TokenBucket] = {}
        self.enabled = False
        self._ip_rates: dict[str | None, int] = {}

    def update(self, quotas: Mapping[Entity, Mapping[str, float]]) -> None:
        """The configured quotas changed (the broker's store calls this with all of them)."""
        for manager in (self.produce, self.fetch, self.request, self.mutation):
            manager.update(quotas)
        self.enabled = bool(
            self.produce.limits or self.fetch.limits or self.request.limits or self.mutation.limits
        )
        self._ip_rates = {
            dict(entity)[IP]: int(values[IP_RATE_KEY])
            for entity, values in quotas.items()
            if len(entity) == 1 and entity[0][0] == IP and IP_RATE_KEY in values
        }

    def max_fetch_bytes(self, user: str, client_id: str) -> int:
        """The most one Fetch answer may hold without being throttled for sure: the consumer
        quota times (samples - 1) windows (``getMaxValueInQuotaWindow``); no quota: no cap."""
        resolved = self.fetch.resolve(user, client_id) if self.enabled else None
        if resolved is None:
            return 2**31 - 1
        whole = resolved[0] * (self.fetch.samples - 1) * self.fetch.window_ms / 1000.0
        return max(1, min(int(whole), 2**31 - 1))

    def mutation_quota(
        self, user: str, client_id: str, api_key: int, api_version: int, now_ms: Callable[[], int]
    ) -> MutationQuota:
        """The controller mutation quota of one CreateTopics / DeleteTopics / CreatePartitions
        (``ControllerMutationQuotaManager.newQuotaFor``): strict from the API's version in
        :data:`STRICT_SINCE`, permissive before, unbounded when no quota applies."""
        resolved = self.mutation.resolve(user, client_id) if self.enabled else None
        if resolved is None:
            return UNBOUNDED
        rate, tags = resolved
        bucket = self._buckets.get(tags)
        if bucket is None:
            bucket = self._buckets[tags] = TokenBucket()
        burst = self.mutation.samples * self.mutation.window_ms / 1000.0 * rate
        strict = api_version >= STRICT_SINCE.get(api_key, 0)
        return MutationQuota(bucket, rate, burst, strict, now_ms)

    def ip_connection_rate(self, ip: str) -> int:
        """``connection_creation_rate`` of an address: its own, else the default ip's, else none
        (``ConnectionQuotas.connectionRateForIp``)."""
        rate = self._ip_rates.get(ip)
        if rate is None:
            rate = self._ip_rates.get(None, NO_IP_RATE)
        return rate

    def throttle_ms(
        self,
        user: str,
        client_id: str,
        api_key: int,
        request_bytes: int,
        response_bytes: int,
        handler_s: float,
        now_ms: int,
    ) -> int:
        """Record one answered request; the throttle time its answer carries (0: none)."""
        throttle = 0
        if api_key == 0:  # Produce
            throttle = self.produce.record(user, client_id, float(request_bytes), now_ms)
        elif api_key == 1:  # Fetch
            throttle = self.fetch.record(user, client_id, float(response_bytes), now_ms)
        percent = handler_s * 100.0  # nanosToPercentage: share of one second, in percent
        request_throttle = self.request.record(user, client_id, percent, now_ms)
        return max(throttle, request_throttle)
