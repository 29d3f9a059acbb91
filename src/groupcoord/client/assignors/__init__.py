"""Partition assignors of the consumer protocol: range, roundrobin, sticky, cooperative-sticky.

The interface and its values are in :mod:`groupcoord.client.assignors.base`.
"""

from __future__ import annotations

from groupcoord.client.assignors.base import (
    Assignment,
    Assignor,
    BaseAssignor,
    RebalanceProtocol,
    Subscription,
    assignment_from_bytes,
    assignment_to_bytes,
    select_rebalance_protocol,
    subscription_from_bytes,
    subscription_to_bytes,
    validate_cooperative_assignment,
)

__all__ = [
    "Assignment",
    "Assignor",
    "BaseAssignor",
    "RebalanceProtocol",
    "Subscription",
    "assignment_from_bytes",
    "assignment_to_bytes",
    "select_rebalance_protocol",
    "subscription_from_bytes",
    "subscription_to_bytes",
    "validate_cooperative_assignment",
]
