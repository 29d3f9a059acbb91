"""The assignor interface's values and their bytes (ConsumerProtocol v0-v3)."""

from __future__ import annotations

import pytest

from groupcoord.client.assignors.base import (
    Assignment,
    BaseAssignor,
    RebalanceProtocol,
    Subscription,
    assignment_from_bytes,
    assignment_to_bytes,
    min_subscription_version,
    select_rebalance_protocol,
    subscription_from_bytes,
    subscription_to_bytes,
    validate_cooperative_assignment,
)
from groupcoord.client.types import TopicPartition as TP
from groupcoord.formats.consumer_protocol import ConsumerProtocolError


def hx(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts).replace(" ", ""))


class _Eager(BaseAssignor):
    name = "eager-x"


class _Coop(BaseAssignor):
    name = "coop-x"
    rebalance_protocol = RebalanceProtocol.COOPERATIVE


def test_select_rebalance_protocol_is_the_highest_all_assignors_support() -> None:
    """ConsumerCoordinatorTest.testSelectRebalanceProtocol: [eager, cooperative] runs EAGER,
    [cooperative] alone runs COOPERATIVE."""
    assert select_rebalance_protocol([_Eager(), _Coop()]) is RebalanceProtocol.EAGER
    assert select_rebalance_protocol([_Coop()]) is RebalanceProtocol.COOPERATIVE
    with pytest.raises(ValueError, match="no partition assignor"):
        select_rebalance_protocol([])


def test_subscription_is_written_as_v3_with_sorted_topics_and_grouped_owned_partitions() -> None:
    """ConsumerProtocol.serializeSubscription sorts topics and owned partitions (topic, then partition)."""
    sub = Subscription(
        topics=("t", "a"),
        user_data=None,
        owned_partitions=(TP("t", 3), TP("a", 1), TP("t", 0)),
        generation_id=7,
    )
    assert subscription_to_bytes(sub) == hx(
        "0003",
        "00000002 0001 61 0001 74",  # topics ["a", "t"]
        "ffffffff",  # user data null
        "00000002 0001 61 00000001 00000001 0001 74 00000002 00000000 00000003",  # a:[1] t:[0,3]
        "00000007",  # generation
        "ffff",  # rack null (Java writes null when client.rack is unset)
    )


def test_subscription_round_trip_keeps_every_field() -> None:
    sub = Subscription(
        topics=("a", "t"),
        user_data=b"\x00\x01",
        owned_partitions=(TP("a", 1), TP("t", 0)),
        generation_id=4,
        rack_id="rack-1",
    )
    assert subscription_from_bytes(subscription_to_bytes(sub)) == sub
    assert subscription_from_bytes(subscription_to_bytes(sub), group_instance_id="i1") == Subscription(
        topics=("a", "t"),
        user_data=b"\x00\x01",
        owned_partitions=(TP("a", 1), TP("t", 0)),
        generation_id=4,
        rack_id="rack-1",
        group_instance_id="i1",
    )


def test_librdkafka_empty_rack_reads_as_no_rack() -> None:
    """peers-and-clients §4.3: librdkafka 2.16 sends rack "" (length 0) when client.rack is unset."""
    wire = hx("0003 00000001 0007736e6966665f74 00000000 00000000 ffffffff 0000")
    assert subscription_from_bytes(wire) == Subscription(topics=("sniff_t",), user_data=b"")


@pytest.mark.parametrize(
    ("sub", "version"),
    [
        (Subscription(topics=("t",)), 0),
        (Subscription(topics=("t",), owned_partitions=(TP("t", 0),)), 1),
        (Subscription(topics=("t",), generation_id=0), 2),
        (Subscription(topics=("t",), rack_id="r"), 3),
    ],
)
def test_min_subscription_version_and_lower_versions_refuse(sub: Subscription, version: int) -> None:
    assert min_subscription_version(sub) == version
    assert subscription_from_bytes(subscription_to_bytes(sub, version)) == sub
    if version:
        with pytest.raises(ConsumerProtocolError):
            subscription_to_bytes(sub, version - 1)


def test_assignment_bytes_group_partitions_per_topic_in_first_seen_order() -> None:
    a = Assignment(partitions=(TP("t", 2), TP("a", 0), TP("t", 1)), user_data=b"")
    wire = assignment_to_bytes(a)
    assert wire == hx(
        "0003",
        "00000002 0001 74 00000002 00000002 00000001 0001 61 00000001 00000000",
        "00000000",
    )
    assert assignment_from_bytes(wire) == Assignment(
        partitions=(TP("t", 2), TP("t", 1), TP("a", 0)), user_data=b""
    )
    assert assignment_to_bytes(a, 0) == hx("0000") + wire[2:]


def test_validate_cooperative_assignment_refuses_a_partition_moved_in_one_round() -> None:
    """ConsumerCoordinatorTest.testPerformAssignmentShouldValidateCooperativeAssignment."""
    subs = {
        "c1": Subscription(topics=("t",), owned_partitions=(TP("t", 0), TP("t", 1))),
        "c2": Subscription(topics=("t",)),
    }
    validate_cooperative_assignment(subs, {"c1": Assignment(partitions=(TP("t", 0),)), "c2": Assignment()})
    with pytest.raises(ValueError, match="t-1"):
        validate_cooperative_assignment(
            subs, {"c1": Assignment(partitions=(TP("t", 0),)), "c2": Assignment(partitions=(TP("t", 1),))}
        )
