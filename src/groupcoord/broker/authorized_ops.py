"""The authorized-operations bit fields of Metadata, DescribeCluster and DescribeGroups (KIP-430).

A client that sets ``include_topic_authorized_operations`` / ``include_cluster_authorized_operations``
/ ``include_authorized_operations`` gets, per resource, a 32-bit field with bit ``op.code`` set for
every operation it may perform there. Kafka computes it in ``AuthHelper.authorizedOperations``: the
operations ``AclEntry.supportedOperations`` lists for the resource type, each asked of the
authorizer, or all of them when there is none; ``Utils.to32BitField`` turns the codes into bits.
A field the client did not ask for stays at the schema default, ``Integer.MIN_VALUE``
(:data:`NOT_REQUESTED`).

Without ``authorizer.class.name`` the handlers pass ``allowed=None``; with it,
:func:`principal_operations` asks the authorizer (``broker/acl.py``) for the request's principal,
and ``broker/authz.py`` puts those fields in the answers.
"""

from __future__ import annotations

from collections.abc import Callable

from groupcoord.broker.acl import SUPPORTED_OPERATIONS, Authorizer, Op, Resource

#: The schema default of every authorized-operations field: not requested.
NOT_REQUESTED = -2147483648

#: Whether one operation is allowed on the resource in hand (an authorizer's answer), or None.
Allowed = Callable[[Op], bool]


def authorized_operations(resource_type: Resource, allowed: Allowed | None = None) -> int:
    """The bit field of the operations allowed on one resource of ``resource_type``: every
    supported one without an authorizer (``allowed`` None), else those ``allowed`` grants."""
    field = 0
    for op in SUPPORTED_OPERATIONS.get(resource_type, ()):
        if allowed is None or allowed(op):
            field |= 1 << int(op)
    return field


def principal_operations(
    authorizer: Authorizer, principal: str, host: str, resource_type: Resource, name: str
) -> int:
    """The bit field of the operations ``principal`` (from ``host``) may perform on one resource."""
    return authorized_operations(
        resource_type, lambda op: authorizer.authorize(principal, host, op, resource_type, name)
    )


def operations_of(field: int) -> frozenset[Op]:
    """The operations a bit field holds (the reverse of :func:`authorized_operations`)."""
    if field == NOT_REQUESTED:
        return frozenset()
    return frozenset(op for op in Op if field & (1 << int(op)))
