"""Consumer-protocol subscription and assignment payloads: golden bytes, real clients' bytes.

Layouts (non-flexible, big-endian): int16 version, then
subscription: topics [int32 count of int16-length strings], user_data (int32 length, -1 null),
v1+ owned_partitions [topic string, partitions [int32]], v2+ generation_id int32,
v3+ rack_id (int16 length, -1 null);
assignment: assigned_partitions [topic string, partitions [int32]], user_data.
"""

from __future__ import annotations

import pytest
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription
from kafka.structs import TopicPartition

from groupcoord.formats.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def hx(*parts: str) -> bytes:
    return bytes.fromhex("".join(parts).replace(" ", ""))


# --------------------------------------------------------------------------- subscription golden bytes

SUB_V0 = hx(
    "0000",  # version 0
    "00000002",  # topics: 2
    "0006 6f7264657273",  # "orders"
    "0001 74",  # "t"
    "00000002 abcd",  # user_data, 2 bytes
)
SUB_V1 = hx(
    "0001",  # version 1
    "00000001 0001 74",  # topics ["t"]
    "ffffffff",  # user_data null
    "00000001",  # owned_partitions: 1 topic
    "0001 74",  # topic "t"
    "00000002 00000000 00000003",  # partitions [0, 3]
)
SUB_V2 = hx(
    "0002",
    "00000001 0001 74",  # topics ["t"]
    "00000000",  # user_data empty
    "00000000",  # owned_partitions: none
    "00000007",  # generation_id 7
)
SUB_V3 = hx(
    "0003",
    "00000001 0001 74",  # topics ["t"]
    "00000000",  # user_data empty
    "00000001 0001 74 00000001 00000002",  # owned: t -> [2]
    "00000007",  # generation_id 7
    "0002 7231",  # rack_id "r1"
)


@pytest.mark.parametrize(
    ("sub", "golden"),
    [
        pytest.param(Subscription(topics=("orders", "t"), user_data=b"\xab\xcd"), SUB_V0, id="v0"),
        pytest.param(
            Subscription(topics=("t",), user_data=None, owned_partitions=(("t", (0, 3)),), version=1),
            SUB_V1,
            id="v1",
        ),
        pytest.param(Subscription(topics=("t",), user_data=b"", generation_id=7, version=2), SUB_V2, id="v2"),
        pytest.param(
            Subscription(
                topics=("t",),
                user_data=b"",
                owned_partitions=(("t", (2,)),),
                generation_id=7,
                rack_id="r1",
                version=3,
            ),
            SUB_V3,
            id="v3",
        ),
    ],
)
def test_subscription_golden_bytes(sub: Subscription, golden: bytes) -> None:
    assert encode_subscription(sub) == golden
    assert decode_subscription(golden) == sub


def test_librdkafka_v3_subscription_as_sniffed_on_the_wire() -> None:
    # librdkafka range/roundrobin join for topic "sniff_t" (peers-and-clients §4.3).
    wire = hx("0003 00000001 0007736e6966665f74 00000000 00000000 ffffffff 0000")
    sub = decode_subscription(wire)
    assert sub == Subscription(
        topics=("sniff_t",), user_data=b"", owned_partitions=(), generation_id=-1, rack_id="", version=3
    )
    assert encode_subscription(sub) == wire


def test_subscription_of_a_newer_version_reads_known_fields_and_ignores_the_rest() -> None:
    v5 = hx("0005") + SUB_V3[2:] + hx("00000001 0002 7a7a")  # fields a future version might append
    sub = decode_subscription(v5)
    assert sub.version == 5
    assert sub.topics == ("t",)
    assert sub.owned_partitions == (("t", (2,)),)
    assert sub.generation_id == 7
    assert sub.rack_id == "r1"


def test_trailing_bytes_after_a_known_version_are_ignored() -> None:
    assert decode_subscription(SUB_V0 + b"\x00\x01\x02").topics == ("orders", "t")


def test_v0_subscription_decodes_with_defaults_for_later_fields() -> None:
    sub = decode_subscription(SUB_V0)
    assert sub.owned_partitions == ()
    assert sub.generation_id == -1
    assert sub.rack_id is None
    assert sub.version == 0


@pytest.mark.parametrize(
    ("sub", "match"),
    [
        pytest.param(
            Subscription(topics=("t",), owned_partitions=(("t", (0,)),), version=0),
            "v0 cannot carry owned partitions",
            id="owned-v0",
        ),
        pytest.param(
            Subscription(topics=("t",), generation_id=3, version=1),
            "v1 cannot carry a generation",
            id="gen-v1",
        ),
        pytest.param(
            Subscription(topics=("t",), rack_id="r", version=2), "v2 cannot carry a rack id", id="rack-v2"
        ),
        pytest.param(Subscription(topics=("t",), version=4), "cannot write subscription version 4", id="v4"),
        pytest.param(
            Subscription(topics=("t",), version=-1), "cannot write subscription version -1", id="neg"
        ),
    ],
)
def test_subscription_fields_a_version_cannot_carry_are_refused(sub: Subscription, match: str) -> None:
    with pytest.raises(ConsumerProtocolError, match=match):
        encode_subscription(sub)


@pytest.mark.parametrize("cut", range(len(SUB_V3)))
def test_truncated_subscription_raises_value_error(cut: int) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(SUB_V3[:cut])


@pytest.mark.parametrize(
    ("wire", "match"),
    [
        pytest.param(hx("ffff 00000000 00000000"), "negative version -1", id="negative-version"),
        pytest.param(hx("0000 ffffffff 00000000"), "topics is null", id="null-topics"),
        pytest.param(hx("0000 00000001 ffff 00000000"), "null", id="null-topic-name"),
        pytest.param(hx("0001 00000000 00000000 ffffffff"), "owned_partitions is null", id="null-owned"),
        pytest.param(hx("0000 00000001 0002 c328 00000000"), "UTF-8", id="bad-utf8"),
        pytest.param(hx("0000 fffffffe 00000000"), "negative", id="negative-count"),
        pytest.param(b"", "no version prefix", id="empty"),
    ],
)
def test_malformed_subscription_raises_value_error(wire: bytes, match: str) -> None:
    with pytest.raises(ConsumerProtocolError, match=match):
        decode_subscription(wire)


def test_consumer_protocol_error_is_a_value_error() -> None:
    assert issubclass(ConsumerProtocolError, ValueError)


# --------------------------------------------------------------------------- assignment golden bytes

ASSIGN_V0 = hx(
    "0000",  # version 0
    "00000002",  # 2 topics
    "0006 6f7264657273 00000002 00000000 00000001",  # orders -> [0, 1]
    "0001 74 00000001 00000004",  # t -> [4]
    "ffffffff",  # user_data null
)
ASSIGN_EMPTY_V1 = hx(
    "0001",  # version 1 (same layout)
    "00000000",  # no partitions
    "00000000",  # user_data empty
)


def test_assignment_golden_bytes_v0() -> None:
    a = Assignment(partitions=(("orders", (0, 1)), ("t", (4,))), user_data=None)
    assert encode_assignment(a) == ASSIGN_V0
    assert decode_assignment(ASSIGN_V0) == a


@pytest.mark.parametrize("version", [1, 2, 3])
def test_assignment_versions_1_to_3_share_the_v0_layout(version: int) -> None:
    a = Assignment(partitions=(("orders", (0, 1)), ("t", (4,))), user_data=None, version=version)
    golden = version.to_bytes(2, "big") + ASSIGN_V0[2:]
    assert encode_assignment(a) == golden
    assert decode_assignment(golden) == a


def test_empty_assignment_is_still_a_valid_encoding() -> None:
    a = Assignment(partitions=(), user_data=b"", version=1)
    assert encode_assignment(a) == ASSIGN_EMPTY_V1
    assert decode_assignment(ASSIGN_EMPTY_V1) == a


def test_assignment_of_a_newer_version_ignores_appended_fields() -> None:
    a = decode_assignment(hx("0009") + ASSIGN_V0[2:] + hx("deadbeef"))
    assert a.version == 9
    assert a.partitions == (("orders", (0, 1)), ("t", (4,)))


@pytest.mark.parametrize("cut", range(len(ASSIGN_V0)))
def test_truncated_assignment_raises_value_error(cut: int) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(ASSIGN_V0[:cut])


def test_null_partitions_array_in_assignment_is_refused() -> None:
    with pytest.raises(ConsumerProtocolError, match="partitions is null"):
        decode_assignment(hx("0000 00000001 0001 74 ffffffff 00000000"))


def test_partition_out_of_int32_range_is_refused_on_encode() -> None:
    with pytest.raises(ConsumerProtocolError, match="cannot encode assignment"):
        encode_assignment(Assignment(partitions=(("t", (2**31,)),)))


# --------------------------------------------------------------------------- real clients' codecs


def test_kafka_python_range_assignor_metadata_decodes() -> None:
    wire = RangePartitionAssignor.metadata({"orders"}).encode()
    assert decode_subscription(wire) == Subscription(topics=("orders",), user_data=b"", version=0)


def test_kafka_python_cooperative_sticky_metadata_carries_owned_partitions() -> None:
    assignor = CooperativeStickyAssignor()
    assignor.member_assignment = [TopicPartition("orders", 2), TopicPartition("orders", 0)]
    wire = assignor.metadata({"orders"}).encode()
    sub = decode_subscription(wire)
    assert sub.version == 1
    assert sub.topics == ("orders",)
    assert sub.owned_partitions == (("orders", (0, 2)),)


def test_aiokafka_v0_payloads_interoperate() -> None:
    meta = ConsumerProtocolMemberMetadata(0, ["a", "b"], b"u").encode()
    assert decode_subscription(meta) == Subscription(topics=("a", "b"), user_data=b"u")
    ours = encode_assignment(Assignment(partitions=(("a", (0, 2)),), user_data=b""))
    theirs = ConsumerProtocolMemberAssignment.decode(ours)
    assert theirs.version == 0
    assert [(t, list(p)) for t, p in theirs.assignment] == [("a", [0, 2])]
    assert theirs.user_data == b""


# Hypothesis: our encoder agrees byte for byte with kafka-python's schema-generated codec.

TEXT = st.text(st.characters(codec="utf-8"), max_size=12)
INT32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
TPS = st.lists(st.tuples(TEXT, st.lists(INT32, max_size=5).map(tuple)), max_size=4).map(tuple)


@st.composite
def subscriptions(draw: st.DrawFn) -> Subscription:
    version = draw(st.integers(0, 3))
    return Subscription(
        topics=tuple(draw(st.lists(TEXT, max_size=5))),
        user_data=draw(st.none() | st.binary(max_size=20)),
        owned_partitions=draw(TPS) if version >= 1 else (),
        generation_id=draw(INT32) if version >= 2 else -1,
        rack_id=draw(st.none() | TEXT) if version >= 3 else None,
        version=version,
    )


assignments = st.builds(
    Assignment, partitions=TPS, user_data=st.none() | st.binary(max_size=20), version=st.integers(0, 3)
)


@given(subscriptions())
@settings(deadline=None)
def test_subscription_round_trip_and_matches_kafka_python(sub: Subscription) -> None:
    wire = encode_subscription(sub)
    assert decode_subscription(wire) == sub
    kp_tp = KpSubscription.TopicPartition
    fields: dict[str, object] = {"topics": list(sub.topics), "user_data": sub.user_data}
    if sub.version >= 1:
        fields["owned_partitions"] = [kp_tp(topic=t, partitions=list(p)) for t, p in sub.owned_partitions]
    if sub.version >= 2:
        fields["generation_id"] = sub.generation_id
    if sub.version >= 3:
        fields["rack_id"] = sub.rack_id
    assert KpSubscription(version=sub.version, **fields).encode() == wire


@given(assignments)
@settings(deadline=None)
def test_assignment_round_trip_and_matches_kafka_python(a: Assignment) -> None:
    wire = encode_assignment(a)
    assert decode_assignment(wire) == a
    kp_tp = KpAssignment.TopicPartition
    theirs = KpAssignment(
        version=a.version,
        assigned_partitions=[kp_tp(topic=t, partitions=list(p)) for t, p in a.partitions],
        user_data=a.user_data,
    )
    assert theirs.encode() == wire


@given(st.binary(max_size=48))
@settings(deadline=None)
def test_arbitrary_bytes_decode_or_raise_consumer_protocol_error(blob: bytes) -> None:
    for decode in (decode_subscription, decode_assignment):
        try:
            decoded = decode(blob)
        except ConsumerProtocolError:
            continue
        assert isinstance(decoded, Subscription | Assignment)
