"""Assignors against the bytes real clients put on the wire.

The ``CAPTURED_*`` payloads were read back with DescribeGroups from groups of real consumers
(confluent-kafka 2.16.1 on librdkafka 2.16.0, kafka-python 3.0.12) joined to a groupcoord
broker, topics ``capt`` (4 partitions) and ``capu`` (2): member metadata is the chosen
protocol's subscription, member assignment the leader's SyncGroup bytes. They agree with the
layouts sniffed in peers-and-clients.md §4.3. ``test_live_capture_matches_the_fixtures`` (e2e)
re-captures librdkafka's range payloads against a broker process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka.coordinator.assignors.sticky.sticky_assignor import (
    StickyAssignorUserDataV1 as AioStickyUserData,
)
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment, ConsumerProtocolMemberMetadata
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KpAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KpSubscription
from sticky_cases import cooperative_violations, tps

from groupcoord.admin.client import DESCRIBE_GROUPS, AdminClient
from groupcoord.client.assignors import (
    Assignment,
    CooperativeStickyAssignor,
    RangeAssignor,
    StickyAssignor,
    Subscription,
    assignment_from_bytes,
    assignment_to_bytes,
    subscription_from_bytes,
    subscription_to_bytes,
)
from groupcoord.client.assignors.sticky import MemberData, decode_sticky_user_data, encode_sticky_user_data

h = bytes.fromhex

# librdkafka range / roundrobin: subscription v3, empty user data, no owned, generation -1, rack "".
CAPTURED_RDK_RANGE_META = h("0003000000020004636170740004636170750000000000000000ffffffff0000")
# librdkafka range leader, two members: v0 assignments, empty user data.
CAPTURED_RDK_RANGE_ASSIGN = {
    "rdk0": h("000000000002000463617075000000010000000000046361707400000002000000000000000100000000"),
    "rdk1": h("000000000002000463617075000000010000000100046361707400000002000000020000000300000000"),
}
CAPTURED_RDK_RANGE_ASSIGN_3 = {
    "rdk0": h("000000000002000463617075000000010000000000046361707400000002000000000000000100000000"),
    "rdk1": h("0000000000020004636170750000000100000001000463617074000000010000000200000000"),
    "rdk2": h("000000000001000463617074000000010000000300000000"),
}
# librdkafka cooperative-sticky, first generation of two members (fresh: nothing owned).
CAPTURED_RDK_COOP_ASSIGN = {
    "rdk0": h("000000000002000463617074000000020000000000000002000463617075000000010000000000000000"),
    "rdk1": h("000000000002000463617074000000020000000100000003000463617075000000010000000100000000"),
}
# librdkafka cooperative-sticky, third generation: v3 with owned partitions, generation 2, and
# user data in Kafka's StickyAssignor layout (previous assignment + generation).
CAPTURED_RDK_COOP_META_3 = {
    "rdk0": h(
        "0003000000020004636170740004636170750000002400000002000463617074000000010000000200046361707500000001"
        "00000000000000020000000200046361707400000001000000020004636170750000000100000000000000020000"
    ),
    "rdk1": h(
        "0003000000020004636170740004636170750000002400000002000463617074000000010000000300046361707500000001"
        "00000001000000020000000200046361707400000001000000030004636170750000000100000001000000020000"
    ),
    "rdk2": h("00030000000200046361707400046361707500000008000000000000000200000000000000020000"),
}
# kafka-python sticky: subscription v0; its user data puts an int16 version (1) before Kafka's struct.
CAPTURED_KP_STICKY_META_3 = {
    "kp0": h(
        "0000000000020004636170740004636170750000002a000100000002000463617074000000020000000000000002"
        "000463617075000000010000000000000002"
    ),
    "kp2": h(
        "0000000000020004636170740004636170750000001c00010000000100046361707500000002000000000000000100000011"
    ),
}
# kafka-python cooperative-sticky: subscription v1 (owned partitions, empty user data), assignment v1.
CAPTURED_KP_COOP_META_3 = h(
    "0001000000020004636170740004636170750000000000000001000463617074000000020000000000000002"
)
CAPTURED_KP_COOP_ASSIGN_3 = h("00010000000100046361707400000002000000000000000200000000")


def test_librdkafka_range_subscription_reads_as_plain_topics() -> None:
    assert subscription_from_bytes(CAPTURED_RDK_RANGE_META) == Subscription(
        topics=("capt", "capu"), user_data=b""
    )


@pytest.mark.parametrize("captured", [CAPTURED_RDK_RANGE_ASSIGN, CAPTURED_RDK_RANGE_ASSIGN_3], ids=["2", "3"])
def test_our_range_leader_computes_what_librdkafkas_leader_sent(captured: dict[str, bytes]) -> None:
    """Mixed groups agree: for the same members, our range result equals librdkafka's assignment."""
    subs = {f"{m}-member": subscription_from_bytes(CAPTURED_RDK_RANGE_META) for m in captured}
    ours = RangeAssignor().assign({"capt": 4, "capu": 2}, subs)
    theirs = {f"{m}-member": assignment_from_bytes(b) for m, b in captured.items()}
    assert {m: set(a.partitions) for m, a in ours.items()} == {
        m: set(a.partitions) for m, a in theirs.items()
    }


def test_our_cooperative_sticky_leader_computes_what_librdkafkas_leader_sent_for_a_fresh_group() -> None:
    subs = {f"{m}-member": subscription_from_bytes(CAPTURED_RDK_RANGE_META) for m in CAPTURED_RDK_COOP_ASSIGN}
    ours = CooperativeStickyAssignor().assign({"capt": 4, "capu": 2}, subs)
    assert {m: a.partitions for m, a in ours.items()} == {
        f"{m}-member": tuple(sorted(assignment_from_bytes(b).partitions))
        for m, b in CAPTURED_RDK_COOP_ASSIGN.items()
    }


def test_librdkafka_cooperative_members_owned_partitions_and_generation_are_read_from_v3() -> None:
    subs = {m: subscription_from_bytes(b) for m, b in CAPTURED_RDK_COOP_META_3.items()}
    assert subs["rdk0"].owned_partitions == tps("capt-2", "capu-0")
    assert subs["rdk0"].generation_id == 2
    assert subs["rdk0"].rack_id is None  # librdkafka's "" means no rack
    assignor = CooperativeStickyAssignor()
    assert assignor.member_data(subs["rdk1"]) == MemberData(partitions=tps("capt-3", "capu-1"), generation=2)
    # the user data is Kafka's StickyAssignor layout, which our sticky assignor reads too
    assert decode_sticky_user_data(subs["rdk0"].user_data) == MemberData(
        partitions=tps("capt-2", "capu-0"), generation=2
    )
    assert encode_sticky_user_data(tps("capt-2", "capu-0"), 2) == subs["rdk0"].user_data
    # rebalancing this settled group with us as leader moves nothing
    result = {m: a.partitions for m, a in assignor.assign({"capt": 4, "capu": 2}, subs).items()}
    assert not cooperative_violations(subs, result)
    assert result["rdk0"] == tps("capt-2", "capu-0")
    assert result["rdk1"] == tps("capt-3", "capu-1")
    assert result["rdk2"] == tps("capt-0", "capt-1")


def test_kafka_python_sticky_user_data_with_its_version_prefix_is_read() -> None:
    """kafka-python 3.0.12 writes StickyAssignorUserData behind an int16 version; Kafka's reader would
    drop it, ours reads it (so a kafka-python member's previous assignment stays sticky)."""
    kp0 = subscription_from_bytes(CAPTURED_KP_STICKY_META_3["kp0"])
    kp2 = subscription_from_bytes(CAPTURED_KP_STICKY_META_3["kp2"])
    sticky = StickyAssignor()
    assert sticky.member_data(kp0) == MemberData(partitions=tps("capt-0", "capt-2", "capu-0"), generation=2)
    assert sticky.member_data(kp2) == MemberData(partitions=tps("capu-0", "capu-1"), generation=17)


def test_kafka_python_cooperative_v1_subscription_has_owned_partitions_and_no_generation() -> None:
    sub = subscription_from_bytes(CAPTURED_KP_COOP_META_3)
    assert sub == Subscription(
        topics=("capt", "capu"), user_data=b"", owned_partitions=tps("capt-0", "capt-2")
    )
    assert CooperativeStickyAssignor().member_data(sub) == MemberData(
        partitions=tps("capt-0", "capt-2"), generation=-1
    )
    assert assignment_from_bytes(CAPTURED_KP_COOP_ASSIGN_3) == Assignment(
        partitions=tps("capt-0", "capt-2"), user_data=b""
    )


def _ours() -> tuple[bytes, bytes]:
    sticky = StickyAssignor()
    sticky.on_assignment(Assignment(partitions=tps("capt-1", "capu-0")), 5)
    sub = Subscription(
        topics=("capu", "capt"),
        user_data=sticky.subscription_user_data({"capt", "capu"}),
        owned_partitions=tps("capt-1"),
        generation_id=5,
    )
    return subscription_to_bytes(sub), assignment_to_bytes(Assignment(partitions=tps("capt-1", "capu-0")))


def test_kafka_python_and_aiokafka_read_our_subscription_and_assignment() -> None:
    """What we send decodes with the other Python clients' own codecs, field for field."""
    meta, assign = _ours()
    kp = KpSubscription.decode(meta)
    assert (kp.version, list(kp.topics), kp.generation_id, kp.rack_id) == (3, ["capt", "capu"], 5, None)
    assert [(t.topic, list(t.partitions)) for t in kp.owned_partitions] == [("capt", [1])]
    kpa = KpAssignment.decode(assign)
    assert [(t.topic, list(t.partitions)) for t in kpa.assigned_partitions] == [("capt", [1]), ("capu", [0])]
    aio = ConsumerProtocolMemberMetadata.decode(meta)
    assert (aio.version, list(aio.subscription)) == (3, ["capt", "capu"])
    # aiokafka's sticky assignor parses the user data with Kafka's (unprefixed) layout
    previous = AioStickyUserData.decode(aio.user_data)
    assert [(t, list(p)) for t, p in previous.previous_assignment] == [("capt", [1]), ("capu", [0])]
    assert previous.generation == 5
    aioa = ConsumerProtocolMemberAssignment.decode(assign)
    assert [(t, list(p)) for t, p in aioa.assignment] == [("capt", [1]), ("capu", [0])]


def test_a_kafka_python_sticky_leader_reads_our_user_data_as_nothing_owned() -> None:
    """kafka-python 3.0.12 expects its version prefix; our (Kafka-layout) sticky user data makes its
    leader treat our member as owning nothing: stickiness is lost for that member, nothing breaks."""
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    meta, _ = _ours()
    parsed = StickyPartitionAssignor.parse_member_metadata(KpSubscription.decode(meta))
    assert (parsed.partitions, parsed.generation) == ([], -1)


def test_our_sticky_user_data_is_byte_identical_to_aiokafkas_and_kafkas_layout() -> None:
    ours = encode_sticky_user_data(tps("capt-1", "capt-3", "capu-0"), 9)
    theirs = AioStickyUserData([("capt", [1, 3]), ("capu", [0])], 9).encode()
    assert ours == theirs


# --------------------------------------------------------------------------- live capture (e2e)


@pytest.fixture
def broker_address(tmp_path: Path) -> Iterator[str]:
    """A groupcoord broker process on 127.0.0.1, port 0; stopped by PID."""
    argv = [
        sys.executable,
        "-m",
        "groupcoord",
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        str(tmp_path / "d"),
    ]
    argv += ["--set", "group.initial.rebalance.delay.ms=0", "--set", "group.min.session.timeout.ms=500"]
    with open(tmp_path / "broker.log", "w") as log_file:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log_file, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("groupcoord listening on "), line
        yield line.rsplit(" ", 1)[1].strip()
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _describe(bootstrap: str, group: str) -> list[tuple[str, bytes, bytes]]:
    with AdminClient(bootstrap) as admin:
        r = admin.coordinator(group).call(
            DESCRIBE_GROUPS, groups=[group], include_authorized_operations=False
        )
        return [
            (m.client_id, bytes(m.member_metadata), bytes(m.member_assignment)) for m in r.groups[0].members
        ]


@pytest.mark.e2e
def test_live_capture_matches_the_fixtures(broker_address: str) -> None:
    """Two confluent-kafka consumers (range) on our broker send exactly CAPTURED_RDK_RANGE_META, and
    their leader's assignment is what our RangeAssignor computes."""
    from confluent_kafka import Consumer
    from confluent_kafka.admin import AdminClient as ConfluentAdmin
    from confluent_kafka.admin import NewTopic

    admin = ConfluentAdmin({"bootstrap.servers": broker_address})
    for future in admin.create_topics([NewTopic("capt", 4, 1), NewTopic("capu", 2, 1)]).values():
        future.result(30)
    consumers = [
        Consumer(
            {
                "bootstrap.servers": broker_address,
                "group.id": "wire-capture",
                "client.id": f"rdk{i}",
                "partition.assignment.strategy": "range",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
            }
        )
        for i in range(2)
    ]
    try:
        for c in consumers:
            c.subscribe(["capt", "capu"])
        deadline = time.monotonic() + 90
        members: list[tuple[str, bytes, bytes]] = []
        while time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.05)
            members = _describe(broker_address, "wire-capture")
            if len(members) == 2 and all(assign for _, _, assign in members):
                break
        else:
            raise AssertionError(f"group did not settle: {members}")
    finally:
        for c in consumers:
            c.close()
    assert [meta for _, meta, _ in members] == [CAPTURED_RDK_RANGE_META, CAPTURED_RDK_RANGE_META]
    theirs = {client: set(assignment_from_bytes(assign).partitions) for client, _, assign in members}
    subs = {f"{client}-member": subscription_from_bytes(meta) for client, meta, _ in members}
    ours = RangeAssignor().assign({"capt": 4, "capu": 2}, subs)
    assert {m.removesuffix("-member"): set(a.partitions) for m, a in ours.items()} == theirs
