"""Names and limits that several layers share: the internal topics and Kafka's numeric limits.

A leaf module (it imports nothing of ours), so the coordinator runtime, the log, the admin tool
and the pipeline all read the same names.
"""

from __future__ import annotations

__all__ = [
    "GROUP_EVENTS_TOPIC",
    "INT16_MAX",
    "INT32_MAX",
    "INTERNAL_TOPIC_PREFIX",
    "LONG_MAX",
    "MAX_TOPIC_NAME_LENGTH",
    "OFFSETS_TOPIC",
    "TRANSACTION_STATE_TOPIC",
]

#: Where the group coordinator writes its records (Kafka's ``Topic.GROUP_METADATA_TOPIC_NAME``).
OFFSETS_TOPIC = "__consumer_offsets"
#: Where the transaction coordinator writes its records (Kafka's ``Topic.TRANSACTION_STATE_TOPIC_NAME``).
TRANSACTION_STATE_TOPIC = "__transaction_state"
#: Our own internal topic: one record per coordinator event (joins, rebalances, expiries).
GROUP_EVENTS_TOPIC = "__group_events"
#: Topic names starting with this are internal (hidden from ``exclude.internal.topics`` readers).
INTERNAL_TOPIC_PREFIX = "__"
#: Kafka's ``Topic.MAX_NAME_LENGTH``.
MAX_TOPIC_NAME_LENGTH = 249

#: Java's ``Short.MAX_VALUE``: the longest classic (int16-prefixed) string, the largest epoch.
INT16_MAX = 0x7FFF
#: Java's ``Integer.MAX_VALUE``.
INT32_MAX = 2147483647
#: Java's ``Long.MAX_VALUE``: "never" for retention, flush intervals and the like.
LONG_MAX = 9223372036854775807
