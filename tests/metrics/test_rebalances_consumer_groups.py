"""Rebalance metrics of consumer groups (KIP-848): an epoch bump begins one, Stable ends it."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram

from groupcoord.coordinator.events import EventReason, GroupEvent
from groupcoord.metrics.rebalances import DURATION_BUCKETS, RebalanceCounter


def event(t: int, type_: str, reason: EventReason, to: str | None = None) -> GroupEvent:
    return GroupEvent(
        time_ms=t,
        group_id="cg",
        generation=1,
        type=type_,
        from_state=None,
        to_state=to,
        reason=reason,
        member_id=None,
        group_instance_id=None,
        client_id=None,
        client_host=None,
        client_reason=None,
        protocol_type="consumer",
        protocol_name="uniform",
        member_count=1,
    )


def test_an_epoch_bump_counts_a_rebalance_by_cause_and_is_timed_until_stable() -> None:
    registry = CollectorRegistry()
    durations = Histogram("d", "d", buckets=DURATION_BUCKETS, registry=registry)
    counter = RebalanceCounter(durations)
    counter.on_event(event(1_000, "epoch_bump", EventReason.NEW_MEMBER_JOINED))
    counter.on_event(event(1_000, "state_change", EventReason.NEW_MEMBER_JOINED, to="Reconciling"))
    counter.on_event(event(1_500, "epoch_bump", EventReason.TOPIC_METADATA_CHANGED))
    counter.on_event(event(3_000, "state_change", EventReason.RECONCILED, to="Stable"))
    assert counter.copy() == {("cg", "new_member_joined"): 1, ("cg", "topic_metadata_changed"): 1}
    assert registry.get_sample_value("d_count") == 1
    assert registry.get_sample_value("d_sum") == 2.0
