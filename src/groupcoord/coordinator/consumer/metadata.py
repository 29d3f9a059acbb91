"""What the consumer group needs to know of the cluster's topics, and the regex and hash rules on it.

:class:`TopicsImage` is the shard's view of the topics (Kafka's ``MetadataImage``): id, name,
partition count and the racks of each partition's replicas, plus ``version``, the offset of the
image (Kafka: the metadata log offset) that regex resolutions record. The shard hands a new image
to :meth:`ConsumerGroupManager.on_metadata_update` whenever topics are created, deleted or change.

Regexes: Kafka compiles subscriptions with Google's RE2/J and matches whole topic names
(``Pattern.matcher(topic).matches()``). Python's ``re`` is a backtracking engine with other syntax,
so we use the RE2 C++ library through ``google-re2`` (``import re2``): the same syntax family as
RE2/J (no backreferences, no lookaround). An invalid pattern is refused with RE2/J's wording of
the error (the C++ library words a few errors differently; :data:`_RE2J_DESCRIPTIONS`).

Metadata hash (KIP-1101, 4.1): Kafka hashes each subscribed topic (magic byte, id, name, partition
count, each partition's sorted racks) with XXH3-64 and then the topic hashes in name order. Only
equality matters to the protocol (a changed hash bumps the group epoch); whether hash4j's string
encoding can be reproduced byte for byte was not verified (reference §11), so we hash the same
fields, in the same order, with BLAKE2b-64 from the standard library. A log written by Java Kafka
therefore sees one extra epoch bump on its first heartbeat here, as a 4.0 log does on 4.1.
"""

from __future__ import annotations

import hashlib
import struct
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import re2

from groupcoord.constants import INT32_MAX
from groupcoord.errors import ErrorCode, KafkaError

__all__ = [
    "METADATA_REFRESH_INTERVAL_MS",
    "TopicMetadata",
    "TopicsImage",
    "compile_regex",
    "group_metadata_hash",
    "topic_hash",
]

#: Kafka's METADATA_REFRESH_INTERVAL_MS: a group's subscription metadata, once computed, is due
#: again "until a new metadata image asks for a refresh" (``ConsumerGroup.metadata_refresh_deadline``).
METADATA_REFRESH_INTERVAL_MS = INT32_MAX


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMetadata:
    topic_id: uuid.UUID
    name: str
    num_partitions: int
    #: partition -> racks of its replicas' brokers (absent: no racks)
    partition_racks: Mapping[int, tuple[str, ...]] = field(default_factory=dict)


class TopicsImage:
    """Topics by name and by id; immutable once built."""

    __slots__ = ("_by_id", "_by_name", "_hashes", "version")

    def __init__(self, topics: Iterable[TopicMetadata] = (), *, version: int = 0) -> None:
        self._by_name = {t.name: t for t in topics}
        self._by_id = {t.topic_id: t for t in self._by_name.values()}
        self._hashes: dict[str, int] = {}
        self.version = version

    def topic_hash(self, name: str) -> int | None:
        """:func:`topic_hash` of the topic named ``name`` (None if absent), computed once per
        image: it reads every partition, and every epoch bump asks for it (Kafka keeps its
        ``topicHashCache`` for the same reason)."""
        cached = self._hashes.get(name)
        if cached is None:
            topic = self._by_name.get(name)
            if topic is None:
                return None
            cached = self._hashes[name] = topic_hash(topic)
        return cached

    def by_name(self, name: str) -> TopicMetadata | None:
        return self._by_name.get(name)

    def by_id(self, topic_id: uuid.UUID) -> TopicMetadata | None:
        return self._by_id.get(topic_id)

    def names(self) -> Iterable[str]:
        return self._by_name.keys()

    def partition_counts(self) -> dict[uuid.UUID, int]:
        return {t.topic_id: t.num_partitions for t in self._by_id.values()}

    def __len__(self) -> int:
        return len(self._by_name)


def topic_hash(topic: TopicMetadata) -> int:
    """A signed 64-bit hash of the fields Kafka's ``Utils.computeTopicHash`` covers."""
    h = hashlib.blake2b(digest_size=8)
    h.update(b"\x00")
    h.update(topic.topic_id.bytes)
    h.update(topic.name.encode())
    h.update(struct.pack(">i", topic.num_partitions))
    for p in range(topic.num_partitions):
        h.update(struct.pack(">i", p))
        for rack in sorted(topic.partition_racks.get(p, ())):
            raw = rack.encode()
            h.update(struct.pack(">i", len(raw)))
            h.update(raw)
    return int.from_bytes(h.digest(), "big", signed=True)


def group_metadata_hash(topic_names: Iterable[str], image: TopicsImage) -> int:
    """The group's hash over its subscribed topics that exist, in name order; 0 for none."""
    hashes = [th for n in sorted(set(topic_names)) if (th := image.topic_hash(n)) is not None]
    if not hashes:
        return 0
    h = hashlib.blake2b(digest_size=8)
    for value in hashes:
        h.update(struct.pack(">q", value))
    return int.from_bytes(h.digest(), "big", signed=True)


#: RE2 C++ error text -> RE2/J's description (Kafka puts the latter in its message).
_RE2J_DESCRIPTIONS = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid named capture group": "invalid named capture",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
}

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> re2._Regexp:
    """The compiled pattern, or INVALID_REGULAR_EXPRESSION with Kafka's message
    (``Utils.throwIfRegularExpressionIsInvalid``)."""
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as exc:
        raw = exc.args[0] if exc.args else b""
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        code = text.split(":", 1)[0].strip()
        reason = _RE2J_DESCRIPTIONS.get(code, code)
        raise KafkaError(
            ErrorCode.INVALID_REGULAR_EXPRESSION,
            f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {reason}.",
        ) from None


def resolve_regex(pattern: str, topic_names: Iterable[str]) -> frozenset[str]:
    """The topics whose whole name the pattern matches (RE2/J ``matches()``)."""
    compiled = compile_regex(pattern)
    return frozenset(name for name in topic_names if compiled.fullmatch(name) is not None)
