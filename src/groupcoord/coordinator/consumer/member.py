"""A member of a consumer group (Kafka 4.1 ``ConsumerGroupMember`` and ``MemberState``).

A member is an immutable value: every change builds a new one (:meth:`ConsumerGroupMember.replace`),
so a handler can compare the member before and after a heartbeat field by field, as Kafka does to
decide whether to write a ``ConsumerGroupMemberMetadata`` record.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable
from dataclasses import dataclass, field

from groupcoord.coordinator.consumer.assignment import Assignment

__all__ = ["ClassicMemberMetadata", "ConsumerGroupMember", "MemberState", "MemberType"]


class MemberState(enum.IntEnum):
    """Stored as int8 in ``ConsumerGroupCurrentMemberAssignmentValue.State``."""

    #: The current assignment equals the target at ``member_epoch``; nothing pending.
    STABLE = 0
    #: The member must revoke ``partitions_pending_revocation`` before it moves on.
    UNREVOKED_PARTITIONS = 1
    #: At the new epoch, waiting for partitions other members still own.
    UNRELEASED_PARTITIONS = 2
    #: Any value this broker does not know; the member must rejoin with no partitions.
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class MemberType(enum.IntEnum):
    """ConsumerGroupDescribe v1 ``MemberType``."""

    CLASSIC = 0
    CONSUMER = 1


@dataclass(frozen=True, slots=True, kw_only=True)
class ClassicMemberMetadata:
    """The tagged ``ClassicMemberMetadata`` of a member that joined with the classic protocol:
    its session timeout and its (name, metadata bytes) protocols. Stored and replayed; the
    classic-protocol paths into a consumer group are not part of this package yet."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMember:
    """One member, with Kafka's defaults for a member not seen before (reference §3.2)."""

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    #: "" means no regex.
    subscribed_topic_regex: str = ""
    server_assignor_name: str | None = None
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    classic_member_metadata: ClassicMemberMetadata | None = None

    def replace(self, **changes: object) -> ConsumerGroupMember:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    def maybe_update(
        self,
        *,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = -1,
        server_assignor_name: str | None = None,
        subscribed_topic_names: Iterable[str] | None = None,
        subscribed_topic_regex: str | None = None,
    ) -> ConsumerGroupMember:
        """The member with a heartbeat's fields applied; None (-1 for the timeout) keeps the
        stored value (Kafka's ``Builder.maybeUpdate*``). The member itself when nothing changes
        (a steady heartbeat sends every field null): no new value is built."""
        names = None if subscribed_topic_names is None else frozenset(subscribed_topic_names)
        if (
            (instance_id is None or instance_id == self.instance_id)
            and (rack_id is None or rack_id == self.rack_id)
            and (rebalance_timeout_ms == -1 or rebalance_timeout_ms == self.rebalance_timeout_ms)
            and (server_assignor_name is None or server_assignor_name == self.server_assignor_name)
            and (names is None or names == self.subscribed_topic_names)
            and (subscribed_topic_regex is None or subscribed_topic_regex == self.subscribed_topic_regex)
        ):
            return self
        return dataclasses.replace(
            self,
            instance_id=self.instance_id if instance_id is None else instance_id,
            rack_id=self.rack_id if rack_id is None else rack_id,
            rebalance_timeout_ms=self.rebalance_timeout_ms
            if rebalance_timeout_ms == -1
            else rebalance_timeout_ms,
            server_assignor_name=self.server_assignor_name
            if server_assignor_name is None
            else server_assignor_name,
            subscribed_topic_names=self.subscribed_topic_names if names is None else names,
            subscribed_topic_regex=self.subscribed_topic_regex
            if subscribed_topic_regex is None
            else subscribed_topic_regex,
        )

    def with_epoch(self, epoch: int) -> ConsumerGroupMember:
        """Kafka's ``updateMemberEpoch``: the previous epoch becomes the current one first."""
        return dataclasses.replace(self, previous_member_epoch=self.member_epoch, member_epoch=epoch)

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    @property
    def member_type(self) -> MemberType:
        return MemberType.CLASSIC if self.uses_classic_protocol else MemberType.CONSUMER

    def is_reconciled_to(self, assignment_epoch: int) -> bool:
        """STABLE at the group's assignment epoch (``ConsumerGroup.maybeUpdateGroupState``)."""
        return self.state is MemberState.STABLE and self.member_epoch == assignment_epoch
