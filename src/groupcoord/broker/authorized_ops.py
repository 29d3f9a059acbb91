"""The authorized-operations bit fields of Metadata, DescribeCluster and DescribeGroups (KIP-430).

A client that sets ``include_topic_authorized_operations`` / ``include_cluster_authorized_operations``
/ ``include_authorized_operations`` gets, per resource, a 32-bit field with bit ``op.code`` set for
every operation it may perform there. Kafka computes it in ``AuthHelper.authorizedOperations``: the
operations ``AclEntry.supportedOperations`` lists for the resource type, each asked of the
authorizer, or all of them when there is none; ``Utils.to32BitField`` turns the codes into bits.
A field the client did not ask for stays at the schema default, ``Integer.MIN_VALUE``
(:data:`NOT_REQUESTED`).

This broker has no authorizer yet: every handler passes ``allowed=None``. An authorizer plugs in
as ``allowed``: a callable that answers, for the request's principal and the resource at hand,
whether one operation is allowed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from enum import IntEnum

#: The schema default of every authorized-operations field: not requested.
NOT_REQUESTED = -2147483648


class ResourceType(IntEnum):
    """Kafka's ``org.apache.kafka.common.resource.ResourceType`` codes (the concrete ones)."""

    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclOperation(IntEnum):
    """Kafka's ``org.apache.kafka.common.acl.AclOperation`` codes (3.9)."""

    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


_Op = AclOperation

#: ``AclEntry.supportedOperations``: the operations an ACL may grant on each resource type.
SUPPORTED_OPERATIONS: Mapping[ResourceType, frozenset[AclOperation]] = {
    ResourceType.TOPIC: frozenset(
        {
            _Op.READ,
            _Op.WRITE,
            _Op.CREATE,
            _Op.DESCRIBE,
            _Op.DELETE,
            _Op.ALTER,
            _Op.DESCRIBE_CONFIGS,
            _Op.ALTER_CONFIGS,
        }
    ),
    ResourceType.GROUP: frozenset({_Op.READ, _Op.DESCRIBE, _Op.DELETE}),
    ResourceType.CLUSTER: frozenset(
        {
            _Op.CREATE,
            _Op.CLUSTER_ACTION,
            _Op.DESCRIBE_CONFIGS,
            _Op.ALTER_CONFIGS,
            _Op.IDEMPOTENT_WRITE,
            _Op.ALTER,
            _Op.DESCRIBE,
        }
    ),
    ResourceType.TRANSACTIONAL_ID: frozenset({_Op.DESCRIBE, _Op.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({_Op.DESCRIBE}),
    ResourceType.USER: frozenset({_Op.CREATE_TOKENS, _Op.DESCRIBE_TOKENS}),
}

#: Whether one operation is allowed on the resource in hand (an authorizer's answer), or None.
Allowed = Callable[[AclOperation], bool]


def authorized_operations(resource_type: ResourceType, allowed: Allowed | None = None) -> int:
    """The bit field of the operations allowed on one resource of ``resource_type``: every
    supported one without an authorizer (``allowed`` None), else those ``allowed`` grants."""
    field = 0
    for op in SUPPORTED_OPERATIONS[resource_type]:
        if allowed is None or allowed(op):
            field |= 1 << int(op)
    return field


def operations_of(field: int) -> frozenset[AclOperation]:
    """The operations a bit field holds (the reverse of :func:`authorized_operations`)."""
    if field == NOT_REQUESTED:
        return frozenset()
    return frozenset(op for op in AclOperation if field & (1 << int(op)))
