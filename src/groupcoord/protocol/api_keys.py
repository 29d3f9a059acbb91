"""Kafka's API keys as one enum (the ``apiKey`` of each message in Kafka's JSON specs).

The route table (:func:`groupcoord.app.routes`) is keyed by it, and the registry, the
connection and ApiVersions accept its members wherever an ``int`` key is expected
(``ApiKey`` is an ``IntEnum``). Only the APIs this broker serves or talks about are listed.
"""

from __future__ import annotations

import enum


class ApiKey(enum.IntEnum):
    #: append record batches to partitions
    PRODUCE = 0
    #: read record batches from partitions (long-poll)
    FETCH = 1
    #: offsets by timestamp, earliest, latest
    LIST_OFFSETS = 2
    #: brokers, topics, partitions and their leaders
    METADATA = 3
    #: commit a group's offsets
    OFFSET_COMMIT = 8
    #: read a group's committed offsets
    OFFSET_FETCH = 9
    #: which broker coordinates a group (or a transactional id)
    FIND_COORDINATOR = 10
    #: join a group (classic protocol)
    JOIN_GROUP = 11
    #: keep a member alive and learn of rebalances
    HEARTBEAT = 12
    #: leave a group
    LEAVE_GROUP = 13
    #: the leader hands out assignments, the others collect theirs
    SYNC_GROUP = 14
    #: a group's state, protocol and members
    DESCRIBE_GROUPS = 15
    #: every group the broker coordinates
    LIST_GROUPS = 16
    #: choose a SASL mechanism (before authenticating)
    SASL_HANDSHAKE = 17
    #: which APIs and versions the broker supports
    API_VERSIONS = 18
    #: create topics
    CREATE_TOPICS = 19
    #: delete topics
    DELETE_TOPICS = 20
    #: move partitions' log start offsets forward (delete records below them)
    DELETE_RECORDS = 21
    #: a producer id (and epoch) for idempotent producers
    INIT_PRODUCER_ID = 22
    #: where a partition's leader epoch ended (a consumer validating its position, KIP-320)
    OFFSET_FOR_LEADER_EPOCH = 23
    #: add partitions to a producer's transaction
    ADD_PARTITIONS_TO_TXN = 24
    #: add a group's offsets to a producer's transaction
    ADD_OFFSETS_TO_TXN = 25
    #: commit or abort a transaction
    END_TXN = 26
    #: commit a group's offsets inside a transaction
    TXN_OFFSET_COMMIT = 28
    #: list ACL bindings matching a filter
    DESCRIBE_ACLS = 29
    #: create ACL bindings
    CREATE_ACLS = 30
    #: delete ACL bindings matching filters
    DELETE_ACLS = 31
    #: topic and broker configuration
    DESCRIBE_CONFIGS = 32
    #: replace topic or broker configs
    ALTER_CONFIGS = 33
    #: one SASL token exchange (KIP-152)
    SASL_AUTHENTICATE = 36
    #: add partitions to topics
    CREATE_PARTITIONS = 37
    #: delete empty groups
    DELETE_GROUPS = 42
    #: set, delete, append to or subtract from topic or broker configs
    INCREMENTAL_ALTER_CONFIGS = 44
    #: delete a group's committed offsets of partitions it no longer consumes
    OFFSET_DELETE = 47
    #: client quotas matching a filter (KIP-546)
    DESCRIBE_CLIENT_QUOTAS = 48
    #: set or remove client quotas (KIP-546)
    ALTER_CLIENT_QUOTAS = 49
    #: SCRAM credentials' mechanisms and iterations per user (KIP-554)
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    #: add or remove SCRAM credentials (KIP-554)
    ALTER_USER_SCRAM_CREDENTIALS = 51
    #: the cluster's id, controller and brokers
    DESCRIBE_CLUSTER = 60
    #: transactions by transactional id (KIP-664)
    DESCRIBE_TRANSACTIONS = 65
    #: transactions, filtered by state and producer id (KIP-664)
    LIST_TRANSACTIONS = 66
    #: a consumer group member's heartbeat in the consumer group protocol (KIP-848)
    CONSUMER_GROUP_HEARTBEAT = 68
    #: consumer groups (KIP-848) with their epochs and members' assignments
    CONSUMER_GROUP_DESCRIBE = 69
