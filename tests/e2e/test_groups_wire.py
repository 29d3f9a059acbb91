"""Group APIs over a raw socket: kio requests against a real broker process, exact error codes.

No client library: a small synchronous client (below) frames requests with
``encode_request`` and reads responses with ``decode_response``. A JoinGroup that the
coordinator parks mutes its connection, so every member that may be parked has its own
connection; a parked request is *sent* and its answer *received* later, which needs no threads.

Scenario numbers refer to reference/kafka-group-coordinator.md §6.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import BrokerProcess, wait_until

from groupcoord.errors import ErrorCode
from groupcoord.formats.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.protocol.client import WireClient
from groupcoord.protocol.codec import build_request, encode_request, request_messages
from groupcoord.protocol.headers import decode_request_header

# api keys
OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR = 8, 9, 10
JOIN, HEARTBEAT, LEAVE, SYNC = 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, CREATE_TOPICS, DELETE_GROUPS, OFFSET_DELETE = 15, 16, 19, 42, 47

TOPIC = "wire-orders"
TOPIC_PARTITIONS = 3
OTHER_TOPIC = "wire-audit"
OFFSETS_PARTITIONS = 4
SETTINGS = (
    "group.initial.rebalance.delay.ms=0",
    "group.min.session.timeout.ms=1000",
    f"offsets.topic.num.partitions={OFFSETS_PARTITIONS}",
)
MEMBER_ID = re.compile(r"^(?P<prefix>.+)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
SUB = encode_subscription(Subscription(topics=(TOPIC,)))
RANGE = ({"name": "range", "metadata": SUB},)
SESSION_MS = 30_000


# ------------------------------------------------------------------------------ raw client
class Wire(WireClient):
    """One connection to the broker under test (the package's raw wire client)."""

    def __init__(self, port: int, client_id: str = "wire") -> None:
        super().__init__("127.0.0.1", port, client_id=client_id)


def code(value: Any) -> ErrorCode:
    return ErrorCode(int(value))


# ------------------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def wire_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("wire")
    b = BrokerProcess(base / "data", settings=SETTINGS)
    b.start()
    try:
        admin = Wire(b.port)
        created = admin.call(
            CREATE_TOPICS,
            4,
            topics=[
                {
                    "name": name,
                    "num_partitions": TOPIC_PARTITIONS,
                    "replication_factor": 1,
                    "assignments": [],
                    "configs": [],
                }
                for name in (TOPIC, OTHER_TOPIC)
            ],
            timeout=5000,
            validate_only=False,
        )
        assert [code(t.error_code) for t in created.topics] == [ErrorCode.NONE, ErrorCode.NONE]
        admin.close()
        yield b
    finally:
        b.stop()


@pytest.fixture
def conns(wire_broker: BrokerProcess) -> Iterator[list[Wire]]:
    """Connections a test opens via ``open_conn``; all closed at teardown."""
    made: list[Wire] = []
    yield made
    for c in made:
        c.close()


def open_conn(broker: BrokerProcess, made: list[Wire], client_id: str = "wire") -> Wire:
    c = Wire(broker.port, client_id)
    made.append(c)
    return c


# ------------------------------------------------------------------------------ group steps
def send_join(
    c: Wire,
    group: str,
    member_id: str = "",
    *,
    version: int = 5,
    session_ms: int = SESSION_MS,
    rebalance_ms: int = SESSION_MS,
    protocol_type: str = "consumer",
    protocols: tuple[dict[str, Any], ...] = RANGE,
    instance_id: str | None = None,
) -> int:
    fields: dict[str, Any] = {
        "group_id": group,
        "session_timeout": session_ms,
        "member_id": member_id,
        "protocol_type": protocol_type,
        "protocols": list(protocols),
    }
    if version >= 1:
        fields["rebalance_timeout"] = rebalance_ms
    if version >= 5:
        fields["group_instance_id"] = instance_id
    return c.send(JOIN, version, **fields)


def join(c: Wire, group: str, member_id: str = "", **kw: Any) -> Any:
    send_join(c, group, member_id, **kw)
    return c.recv()


def join_new(c: Wire, group: str, **kw: Any) -> Any:
    """A dynamic member's whole JoinGroup (v4+: through MEMBER_ID_REQUIRED) answered at once."""
    r = join(c, group, **kw)
    if code(r.error_code) is ErrorCode.MEMBER_ID_REQUIRED:
        r = join(c, group, r.member_id, **kw)
    return r


def sync(
    c: Wire,
    group: str,
    generation: int,
    member_id: str,
    assignments: dict[str, bytes] | None = None,
    *,
    version: int = 3,
    instance_id: str | None = None,
) -> Any:
    fields: dict[str, Any] = {
        "group_id": group,
        "generation_id": generation,
        "member_id": member_id,
        "assignments": [{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
    }
    if version >= 3:
        fields["group_instance_id"] = instance_id
    if version >= 5:
        fields["protocol_type"] = "consumer"
        fields["protocol_name"] = "range"
    return c.call(SYNC, version, **fields)


def heartbeat(
    c: Wire, group: str, generation: int, member_id: str, *, instance_id: str | None = None, version: int = 3
) -> ErrorCode:
    fields: dict[str, Any] = {"group_id": group, "generation_id": generation, "member_id": member_id}
    if version >= 3:
        fields["group_instance_id"] = instance_id
    return code(c.call(HEARTBEAT, version, **fields).error_code)


def commit(
    c: Wire,
    group: str,
    generation: int,
    member_id: str,
    offsets: dict[tuple[str, int], int],
    *,
    version: int = 7,
    instance_id: str | None = None,
) -> dict[tuple[str, int], ErrorCode]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (t, p), off in offsets.items():
        part: dict[str, Any] = {
            "partition_index": p,
            "committed_offset": off,
            "committed_metadata": f"m{off}",
        }
        if version >= 6:
            part["committed_leader_epoch"] = -1
        by_topic.setdefault(t, []).append(part)
    fields: dict[str, Any] = {
        "group_id": group,
        "generation_id_or_member_epoch": generation,
        "member_id": member_id,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
    if 2 <= version <= 4:
        fields["retention_time"] = -1
    if version >= 7:
        fields["group_instance_id"] = instance_id
    r = c.call(OFFSET_COMMIT, version, **fields)
    return {(t.name, int(p.partition_index)): code(p.error_code) for t in r.topics for p in t.partitions}


def describe(c: Wire, group: str) -> Any:
    r = c.call(DESCRIBE_GROUPS, 5, groups=[group], include_authorized_operations=False)
    assert len(r.groups) == 1
    return r.groups[0]


def assignment_for(*partitions: int) -> bytes:
    return encode_assignment(Assignment(partitions=((TOPIC, partitions),)))


def stable_single(c: Wire, group: str, **kw: Any) -> tuple[str, int]:
    """One dynamic member that owns every partition: (member_id, generation 1)."""
    r = join_new(c, group, **kw)
    assert code(r.error_code) is ErrorCode.NONE
    assert (r.generation_id, r.leader) == (1, r.member_id)
    s = sync(c, group, 1, r.member_id, {r.member_id: assignment_for(0, 1, 2)})
    assert code(s.error_code) is ErrorCode.NONE
    return r.member_id, 1


def stable_pair(a: Wire, b: Wire, group: str, **kw: Any) -> tuple[str, str, int]:
    """Leader A and follower B, Stable in generation 2."""
    a_id, _ = stable_single(a, group, **kw)
    r = join(b, group, **kw)
    if code(r.error_code) is ErrorCode.MEMBER_ID_REQUIRED:
        send_join(b, group, r.member_id, **kw)  # parked until A rejoins
    else:  # pragma: no cover - only v0-3 joins get here
        raise AssertionError(f"unexpected {r}")
    assert heartbeat(a, group, 1, a_id) is ErrorCode.REBALANCE_IN_PROGRESS
    ra = join(a, group, a_id, **kw)
    rb = b.recv()
    b_id = rb.member_id
    assert (code(ra.error_code), code(rb.error_code)) == (ErrorCode.NONE, ErrorCode.NONE)
    assert (ra.generation_id, rb.generation_id, ra.leader, rb.leader) == (2, 2, a_id, a_id)
    assert sorted(m.member_id for m in ra.members) == sorted([a_id, b_id])
    assert rb.members == ()
    sa = sync(a, group, 2, a_id, {a_id: assignment_for(0, 1), b_id: assignment_for(2)})
    sb = sync(b, group, 2, b_id)
    assert bytes(sa.assignment) == assignment_for(0, 1)
    assert bytes(sb.assignment) == assignment_for(2)
    return a_id, b_id, 2


# ============================================================================== JoinGroup
@pytest.mark.parametrize("session_ms", [999, 1_800_001])
def test_join_with_session_timeout_out_of_bounds_is_invalid_session_timeout_echoing_member_id(
    wire_broker: BrokerProcess, conns: list[Wire], session_ms: int
) -> None:
    c = open_conn(wire_broker, conns)
    for member_id in ("", "someone-123"):
        r = join(c, "g-session", member_id, session_ms=session_ms)
        assert code(r.error_code) is ErrorCode.INVALID_SESSION_TIMEOUT
        assert (r.member_id, r.generation_id, r.leader, r.members) == (member_id, -1, "", ())
    # Checked before the group is looked up or created (scenario 2, 3).
    assert describe(c, "g-session").group_state == "Dead"


def test_error_join_responses_carry_empty_protocol_name_before_v7_and_null_from_v7(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    c = open_conn(wire_broker, conns)
    r6 = join(c, "g-errv", "nobody", version=6)
    r7 = join(c, "g-errv", "nobody", version=7)
    assert code(r6.error_code) is code(r7.error_code) is ErrorCode.UNKNOWN_MEMBER_ID
    assert r6.protocol_name == ""
    assert (r7.protocol_type, r7.protocol_name) == (None, None)
    ok = join_new(c, "g-errv", version=7)
    assert (ok.protocol_type, ok.protocol_name, ok.generation_id) == ("consumer", "range", 1)


@pytest.mark.parametrize(
    ("version", "forged"),
    [(0, b"\x7f\xff\xff\xff"), (5, b"\xff\xff\xff\xff"), (6, b"\x00"), (9, b"\xfe\xff\xff\xff\x0f")],
)
def test_join_with_a_forged_protocols_count_closes_only_that_connection_with_one_line(
    wire_broker: BrokerProcess, conns: list[Wire], version: int, forged: bytes
) -> None:
    """A JoinGroup whose protocols array is null or counts more elements than the frame holds
    (read by ``protocol/hot.py``, not kio): the broker closes that connection with one warning
    naming the request, no traceback, and answers a well-formed JoinGroup on another connection
    (Kafka's ``SocketServer`` closes a connection whose request fails to parse)."""
    group = f"g-forged-v{version}"
    m = request_messages(JOIN, version)
    fields: dict[str, Any] = {
        "group_id": group,
        "session_timeout": SESSION_MS,
        "rebalance_timeout": SESSION_MS,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": list(RANGE),
    }
    frame = bytearray(encode_request(m, 1, build_request(m.request_type, fields), "forger"))
    # the protocols count follows group id, timeouts, member id, instance id and protocol type
    flexible = version >= 6
    string = 1 if flexible else 2  # a string's length prefix
    body = 4 + decode_request_header(bytes(frame[4:]), m.request_header_version).body_offset
    at = body + string + len(group) + (8 if version >= 1 else 4) + string
    at += (string if version >= 5 else 0) + string + len("consumer")
    width = 1 if flexible else 4
    assert frame[at : at + width] == (b"\x02" if flexible else b"\x00\x00\x00\x01")
    frame[at : at + width] = forged
    frame[:4] = (len(frame) - 4).to_bytes(4, "big")
    before = wire_broker.log_path.read_text()
    c = open_conn(wire_broker, conns, client_id="forger")
    c.sock.sendall(bytes(frame))
    assert c.readable(15)
    assert c.sock.recv(1) == b""  # closed, unanswered
    wait_until(lambda: f"bad join_group v{version} body" in wire_broker.log_path.read_text()[len(before) :])
    new_lines = wire_broker.log_path.read_text()[len(before) :].splitlines()
    closed = [line for line in new_lines if "closing conn=" in line]
    assert len(closed) == 1 and f"bad join_group v{version} body" in closed[0], closed
    assert "Traceback" not in "\n".join(new_lines)
    ok = join_new(open_conn(wire_broker, conns), group, version=version)
    assert (code(ok.error_code), ok.generation_id) == (ErrorCode.NONE, 1)


def test_join_with_unknown_member_id_is_unknown_member_on_new_and_existing_group(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    c = open_conn(wire_broker, conns)
    r = join(c, "g-unknown-join", "ghost-1")
    assert (code(r.error_code), r.member_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "ghost-1")
    stable_single(c, "g-unknown-join")
    r = join(c, "g-unknown-join", "ghost-2")
    assert (code(r.error_code), r.member_id, r.generation_id) == (ErrorCode.UNKNOWN_MEMBER_ID, "ghost-2", -1)


def test_join_v4_and_later_requires_member_id_then_forms_generation_1(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    for version in range(4, 10):
        group = f"g-mid-v{version}"
        c = open_conn(wire_broker, conns, client_id=f"cli-v{version}")
        first = join(c, group, version=version)
        assert code(first.error_code) is ErrorCode.MEMBER_ID_REQUIRED
        match = MEMBER_ID.match(first.member_id)
        assert match is not None and match["prefix"] == f"cli-v{version}"
        assert (first.generation_id, first.leader, first.members) == (-1, "", ())
        # The pending member starts no rebalance (scenario 6).
        assert describe(c, group).group_state == "Empty"
        second = join(c, group, first.member_id, version=version)
        assert code(second.error_code) is ErrorCode.NONE
        assert (second.member_id, second.generation_id, second.leader) == (
            first.member_id,
            1,
            first.member_id,
        )
        assert [(m.member_id, bytes(m.metadata)) for m in second.members] == [(first.member_id, SUB)]


def test_join_v0_to_v3_gets_a_member_id_and_generation_1_in_one_round_trip(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    for version in range(4):
        c = open_conn(wire_broker, conns, client_id=f"old-client-{version}")
        r = join(c, f"g-v{version}", version=version)
        assert code(r.error_code) is ErrorCode.NONE
        match = MEMBER_ID.match(r.member_id)
        assert match is not None and match["prefix"] == f"old-client-{version}"
        assert (r.generation_id, r.leader, r.protocol_name) == (1, r.member_id, "range")
        assert [m.member_id for m in r.members] == [r.member_id]


def test_join_with_other_protocol_type_or_no_common_protocol_is_inconsistent_group_protocol(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-inconsistent"
    a, b = open_conn(wire_broker, conns), open_conn(wire_broker, conns)
    a_id, gen = stable_single(a, group)
    cases: list[dict[str, Any]] = [
        {"protocol_type": "connect"},  # scenario 13
        {"protocols": ({"name": "roundrobin", "metadata": SUB},)},  # scenario 14
    ]
    for kw in cases:
        for version in (3, 5):
            r = join(b, group, version=version, **kw)
            assert code(r.error_code) is ErrorCode.INCONSISTENT_GROUP_PROTOCOL, (kw, version)
            assert r.member_id == ""
    # Nothing changed for the member already there.
    assert heartbeat(a, group, gen, a_id) is ErrorCode.NONE
    # On a fresh group: empty protocol type or empty protocol list (scenarios 11, 12).
    assert (
        code(join(b, "g-inconsistent-2", protocol_type="").error_code)
        is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    )
    r = join(b, "g-inconsistent-3", version=3, protocols=())
    assert code(r.error_code) is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert code(join(b, "g-inconsistent-3", version=3).error_code) is ErrorCode.NONE


# ============================================================================== Heartbeat / Sync
def test_heartbeat_and_sync_from_unknown_member_or_group_are_unknown_member(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    c = open_conn(wire_broker, conns)
    assert heartbeat(c, "g-nowhere", 1, "ghost") is ErrorCode.UNKNOWN_MEMBER_ID
    assert code(sync(c, "g-nowhere", 1, "ghost").error_code) is ErrorCode.UNKNOWN_MEMBER_ID
    _, gen = stable_single(c, "g-unknown-hb")
    for version in (0, 4):
        assert heartbeat(c, "g-unknown-hb", gen, "ghost", version=version) is ErrorCode.UNKNOWN_MEMBER_ID
    for version in (0, 5):
        s = sync(c, "g-unknown-hb", gen, "ghost", version=version)
        assert (code(s.error_code), bytes(s.assignment)) == (ErrorCode.UNKNOWN_MEMBER_ID, b"")


def test_wrong_generation_is_illegal_generation_for_heartbeat_sync_and_commit(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-illegal"
    c = open_conn(wire_broker, conns)
    member, gen = stable_single(c, group)
    assert heartbeat(c, group, gen + 1, member) is ErrorCode.ILLEGAL_GENERATION
    assert code(sync(c, group, gen - 1, member).error_code) is ErrorCode.ILLEGAL_GENERATION
    for version in (2, 7, 9):
        assert commit(c, group, gen + 4, member, {(TOPIC, 0): 5}, version=version) == {
            (TOPIC, 0): ErrorCode.ILLEGAL_GENERATION
        }
    # The right generation still works, and nothing was committed by the refused ones.
    assert heartbeat(c, group, gen, member) is ErrorCode.NONE
    assert fetch_offsets(c, group, {TOPIC: [0]}) == {(TOPIC, 0): (-1, "")}


def test_sync_v5_with_another_protocol_type_or_name_is_inconsistent_group_protocol(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-sync-v5"
    c = open_conn(wire_broker, conns)
    r = join_new(c, group, version=7)
    fields: dict[str, Any] = {
        "group_id": group,
        "generation_id": 1,
        "member_id": r.member_id,
        "group_instance_id": None,
        "assignments": [{"member_id": r.member_id, "assignment": assignment_for(0, 1, 2)}],
    }
    for protocol_type, protocol_name in (("connect", "range"), ("consumer", "roundrobin")):
        s = c.call(SYNC, 5, protocol_type=protocol_type, protocol_name=protocol_name, **fields)
        assert code(s.error_code) is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert (s.protocol_type, s.protocol_name, bytes(s.assignment)) == (None, None, b"")
    s = c.call(SYNC, 5, protocol_type="consumer", protocol_name="range", **fields)
    assert (code(s.error_code), s.protocol_type, s.protocol_name) == (ErrorCode.NONE, "consumer", "range")
    assert bytes(s.assignment) == assignment_for(0, 1, 2)


def test_sync_during_rebalance_is_rebalance_in_progress(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-sync-rebalance"
    a, b = open_conn(wire_broker, conns), open_conn(wire_broker, conns)
    a_id, gen = stable_single(a, group)
    rb = join(b, group)
    send_join(b, group, rb.member_id)  # parked: the group is now PreparingRebalance
    wait_until(lambda: describe(a, group).group_state == "PreparingRebalance", 5, "rebalance to start")
    s = sync(a, group, gen, a_id)
    assert (code(s.error_code), bytes(s.assignment)) == (ErrorCode.REBALANCE_IN_PROGRESS, b"")
    assert heartbeat(a, group, gen, a_id) is ErrorCode.REBALANCE_IN_PROGRESS
    ra = join(a, group, a_id)
    assert (code(ra.error_code), ra.generation_id) == (ErrorCode.NONE, gen + 1)
    assert code(b.recv().error_code) is ErrorCode.NONE


# ============================================================================== max size, static
@pytest.fixture(scope="module")
def max_size_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    base = tmp_path_factory.mktemp("wire-max")
    b = BrokerProcess(base / "data", settings=(*SETTINGS, "group.max.size=2"))
    b.start()
    try:
        yield b
    finally:
        b.stop()


def test_third_dynamic_member_gets_group_max_size_reached_with_empty_member_id(
    max_size_broker: BrokerProcess,
) -> None:
    group = "g-max"
    made: list[Wire] = []
    try:
        a, b, c = (open_conn(max_size_broker, made, client_id=n) for n in ("a", "b", "c"))
        a_id, b_id, gen = stable_pair(a, b, group)
        for version in (3, 4, 9):
            r = join(c, group, version=version)
            assert code(r.error_code) is ErrorCode.GROUP_MAX_SIZE_REACHED, version
            assert (r.member_id, r.generation_id) == ("", -1)
        # The two accepted members are untouched and can rejoin.
        assert heartbeat(a, group, gen, a_id) is ErrorCode.NONE
        assert heartbeat(b, group, gen, b_id) is ErrorCode.NONE
        g = describe(a, group)
        assert (g.group_state, sorted(m.member_id for m in g.members)) == ("Stable", sorted([a_id, b_id]))
    finally:
        for w in made:
            w.close()


def test_old_member_id_of_a_rejoined_static_member_is_fenced(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-static"
    old, new = open_conn(wire_broker, conns), open_conn(wire_broker, conns)
    first = join(old, group, instance_id="inst-1")
    assert code(first.error_code) is ErrorCode.NONE  # static members never get MEMBER_ID_REQUIRED
    old_id = first.member_id
    assert MEMBER_ID.match(old_id) is not None and old_id.startswith("inst-1-")
    sync(old, group, 1, old_id, {old_id: assignment_for(0, 1, 2)}, instance_id="inst-1")
    # The "restarted" process: empty member id, same instance id (scenario 55/56, pre-v9).
    again = join(new, group, instance_id="inst-1")
    new_id = again.member_id
    assert code(again.error_code) is ErrorCode.NONE
    assert new_id != old_id and new_id.startswith("inst-1-")
    assert (again.generation_id, again.leader, again.members) == (1, old_id, ())
    s = sync(new, group, 1, new_id, instance_id="inst-1")
    assert bytes(s.assignment) == assignment_for(0, 1, 2)
    assert heartbeat(old, group, 1, old_id, instance_id="inst-1") is ErrorCode.FENCED_INSTANCE_ID
    assert code(sync(old, group, 1, old_id, instance_id="inst-1").error_code) is ErrorCode.FENCED_INSTANCE_ID
    assert commit(old, group, 1, old_id, {(TOPIC, 0): 1}, instance_id="inst-1") == {
        (TOPIC, 0): ErrorCode.FENCED_INSTANCE_ID
    }
    assert heartbeat(new, group, 1, new_id, instance_id="inst-1") is ErrorCode.NONE
    g = describe(new, group)
    assert (g.group_state, [(m.member_id, m.group_instance_id) for m in g.members]) == (
        "Stable",
        [(new_id, "inst-1")],
    )


# ============================================================================== LeaveGroup
def test_leave_group_v3_batch_reports_each_member(wire_broker: BrokerProcess, conns: list[Wire]) -> None:
    group = "g-leave-batch"
    a, b = open_conn(wire_broker, conns), open_conn(wire_broker, conns)
    ra = join(a, group, instance_id="L1")
    sync(a, group, 1, ra.member_id, {ra.member_id: assignment_for(0)}, instance_id="L1")
    send_join(b, group, instance_id="L2")  # parked until L1 rejoins
    join(a, group, ra.member_id, instance_id="L1")
    rb = b.recv()
    assert rb.generation_id == 2
    r = a.call(
        LEAVE,
        3,
        group_id=group,
        members=[
            {"member_id": "", "group_instance_id": "L1"},
            {"member_id": "", "group_instance_id": "nobody"},
            {"member_id": ra.member_id, "group_instance_id": "L2"},
        ],
    )
    assert code(r.error_code) is ErrorCode.NONE
    assert [(m.member_id, m.group_instance_id, code(m.error_code)) for m in r.members] == [
        ("", "L1", ErrorCode.NONE),
        ("", "nobody", ErrorCode.UNKNOWN_MEMBER_ID),
        (ra.member_id, "L2", ErrorCode.FENCED_INSTANCE_ID),
    ]
    g = describe(a, group)
    assert [m.group_instance_id for m in g.members] == ["L2"]
    # Unknown group: top-level NONE, each member UNKNOWN_MEMBER_ID (scenario 50).
    r = a.call(LEAVE, 3, group_id="g-leave-none", members=[{"member_id": "x", "group_instance_id": None}])
    assert code(r.error_code) is ErrorCode.NONE
    assert [(m.member_id, code(m.error_code)) for m in r.members] == [("x", ErrorCode.UNKNOWN_MEMBER_ID)]


def test_leave_group_v0_reports_the_member_error_at_top_level(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-leave-v0"
    c = open_conn(wire_broker, conns)
    assert code(c.call(LEAVE, 0, group_id="g-leave-v0-none", member_id="x").error_code) is (
        ErrorCode.UNKNOWN_MEMBER_ID
    )
    member, _ = stable_single(c, group)
    assert code(c.call(LEAVE, 0, group_id=group, member_id="ghost").error_code) is ErrorCode.UNKNOWN_MEMBER_ID
    assert code(c.call(LEAVE, 0, group_id=group, member_id=member).error_code) is ErrorCode.NONE
    g = describe(c, group)
    assert (g.group_state, g.members) == ("Empty", ())


# ============================================================================== offsets
def fetch_offsets(
    c: Wire, group: str, topics: dict[str, list[int]] | None, version: int = 1
) -> dict[tuple[str, int], tuple[int, str]]:
    if version >= 8:
        r = c.call(
            OFFSET_FETCH,
            version,
            groups=[
                {
                    "group_id": group,
                    "topics": None
                    if topics is None
                    else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()],
                }
            ],
            require_stable=False,
        )
        assert code(r.groups[0].error_code) is ErrorCode.NONE
        found = r.groups[0].topics
    else:
        fields: dict[str, Any] = {"group_id": group}
        fields["topics"] = (
            None if topics is None else [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]
        )
        if version >= 7:
            fields["require_stable"] = False
        r = c.call(OFFSET_FETCH, version, **fields)
        found = r.topics
    out = {}
    for t in found:
        for p in t.partitions:
            assert code(p.error_code) is ErrorCode.NONE
            out[(t.name, int(p.partition_index))] = (int(p.committed_offset), p.metadata)
    return out


def test_offset_fetch_of_never_committed_partitions_is_minus_one_with_empty_metadata(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    c = open_conn(wire_broker, conns)
    assert commit(c, "g-fetch-some", -1, "", {(TOPIC, 1): 42}) == {(TOPIC, 1): ErrorCode.NONE}
    want = {(TOPIC, 0): (-1, ""), (TOPIC, 1): (42, "m42"), (TOPIC, 2): (-1, "")}
    for version in (1, 5, 7):
        assert fetch_offsets(c, "g-fetch-some", {TOPIC: [0, 1, 2]}, version=version) == want
        assert fetch_offsets(c, "g-fetch-never", {TOPIC: [0, 2]}, version=version) == {
            (TOPIC, 0): (-1, ""),
            (TOPIC, 2): (-1, ""),
        }
    # v8 and v9: several groups in one request, each answered on its own.
    for version in (8, 9):
        assert_multi_group_fetch(c, version)


def assert_multi_group_fetch(c: Wire, version: int) -> None:
    r = c.call(
        OFFSET_FETCH,
        version,
        groups=[
            {"group_id": "g-fetch-some", "topics": [{"name": TOPIC, "partition_indexes": [1, 2]}]},
            {"group_id": "g-fetch-never", "topics": [{"name": TOPIC, "partition_indexes": [1]}]},
            {"group_id": "g-fetch-some", "topics": None},
        ],
        require_stable=False,
    )
    got = [
        (
            g.group_id,
            code(g.error_code),
            [
                (t.name, int(p.partition_index), int(p.committed_offset), p.metadata, code(p.error_code))
                for t in g.topics
                for p in t.partitions
            ],
        )
        for g in r.groups
    ]
    assert got == [
        (
            "g-fetch-some",
            ErrorCode.NONE,
            [(TOPIC, 1, 42, "m42", ErrorCode.NONE), (TOPIC, 2, -1, "", ErrorCode.NONE)],
        ),
        ("g-fetch-never", ErrorCode.NONE, [(TOPIC, 1, -1, "", ErrorCode.NONE)]),
        ("g-fetch-some", ErrorCode.NONE, [(TOPIC, 1, 42, "m42", ErrorCode.NONE)]),
    ]


def test_offset_commit_to_unknown_topic_or_partition_fails_only_those_partitions(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    c = open_conn(wire_broker, conns)
    for version in (2, 8, 9):
        group = f"g-commit-unknown-v{version}"
        got = commit(
            c, group, -1, "", {(TOPIC, 0): 7, (TOPIC, 3): 7, ("no-such-topic", 0): 7}, version=version
        )
        assert got == {
            (TOPIC, 0): ErrorCode.NONE,
            (TOPIC, 3): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert fetch_offsets(c, group, None, version=2) == {(TOPIC, 0): (7, "m7")}


def test_offset_delete_spares_subscribed_topics_of_a_stable_group(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-offset-delete"
    c = open_conn(wire_broker, conns)
    member, gen = stable_single(c, group)  # subscribed to TOPIC only
    assert commit(c, group, gen, member, {(TOPIC, 0): 3, (OTHER_TOPIC, 0): 9}) == {
        (TOPIC, 0): ErrorCode.NONE,
        (OTHER_TOPIC, 0): ErrorCode.NONE,
    }
    r = c.call(
        OFFSET_DELETE,
        0,
        group_id=group,
        topics=[
            {"name": TOPIC, "partitions": [{"partition_index": 0}]},
            {"name": OTHER_TOPIC, "partitions": [{"partition_index": 0}]},
        ],
    )
    assert code(r.error_code) is ErrorCode.NONE
    assert [(t.name, int(p.partition_index), code(p.error_code)) for t in r.topics for p in t.partitions] == [
        (TOPIC, 0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC),
        (OTHER_TOPIC, 0, ErrorCode.NONE),
    ]
    assert fetch_offsets(c, group, None, version=2) == {(TOPIC, 0): (3, "m3")}
    r = c.call(OFFSET_DELETE, 0, group_id="g-offset-delete-none", topics=[])
    assert code(r.error_code) is ErrorCode.GROUP_ID_NOT_FOUND


# ============================================================================== admin APIs
def test_describe_unknown_group_is_dead_with_no_members(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    c = open_conn(wire_broker, conns)
    for version in (0, 5):
        fields: dict[str, Any] = {"groups": ["g-never-seen"]}
        if version >= 3:
            fields["include_authorized_operations"] = False
        g = c.call(DESCRIBE_GROUPS, version, **fields).groups[0]
        assert (
            code(g.error_code),
            g.group_id,
            g.group_state,
            g.protocol_type,
            g.protocol_data,
            g.members,
        ) == (
            ErrorCode.NONE,
            "g-never-seen",
            "Dead",
            "",
            "",
            (),
        )


def test_describe_stable_group_shows_members_with_metadata_and_assignment(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-describe"
    a = open_conn(wire_broker, conns, client_id="descr-a")
    b = open_conn(wire_broker, conns, client_id="descr-b")
    a_id, b_id, _ = stable_pair(a, b, group)
    g = describe(a, group)
    assert (g.group_state, g.protocol_type, g.protocol_data) == ("Stable", "consumer", "range")
    rows = sorted(
        (m.member_id, m.client_id, m.client_host, bytes(m.member_metadata), bytes(m.member_assignment))
        for m in g.members
    )
    assert rows == sorted(
        [
            (a_id, "descr-a", "/127.0.0.1", SUB, assignment_for(0, 1)),
            (b_id, "descr-b", "/127.0.0.1", SUB, assignment_for(2)),
        ]
    )


def test_list_groups_filters_by_state_case_insensitively(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    c = open_conn(wire_broker, conns)
    stable_single(c, "g-list-stable")
    commit(c, "g-list-empty", -1, "", {(TOPIC, 0): 1})

    def listed(version: int, states: list[str] | None = None) -> dict[str, tuple[str, str]]:
        fields: dict[str, Any] = {}
        if version >= 4:
            fields["states_filter"] = states or []
        if version >= 5:
            fields["types_filter"] = []
        r = c.call(LIST_GROUPS, version, **fields)
        assert code(r.error_code) is ErrorCode.NONE
        return {
            g.group_id: (g.protocol_type, getattr(g, "group_state", "-"))
            for g in r.groups
            if g.group_id.startswith("g-list-")
        }

    assert listed(3) == {"g-list-stable": ("consumer", "-"), "g-list-empty": ("", "-")}
    assert listed(4) == {"g-list-stable": ("consumer", "Stable"), "g-list-empty": ("", "Empty")}
    assert listed(4, ["Stable"]) == {"g-list-stable": ("consumer", "Stable")}
    assert listed(5, ["empty"]) == {"g-list-empty": ("", "Empty")}
    assert listed(5, ["PreparingRebalance", "dead"]) == {}


def test_delete_groups_refuses_non_empty_deletes_empty_with_offsets_and_reports_unknown(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    c = open_conn(wire_broker, conns)
    stable_single(c, "g-del-busy")
    assert commit(c, "g-del-empty", -1, "", {(TOPIC, 0): 10, (TOPIC, 2): 20}) == {
        (TOPIC, 0): ErrorCode.NONE,
        (TOPIC, 2): ErrorCode.NONE,
    }
    for version in (0, 2):
        r = c.call(DELETE_GROUPS, version, groups_names=["g-del-busy", "g-del-empty", "g-del-unknown"])
        got = [(x.group_id, code(x.error_code)) for x in r.results]
        if version == 0:
            assert got == [
                ("g-del-busy", ErrorCode.NON_EMPTY_GROUP),
                ("g-del-empty", ErrorCode.NONE),
                ("g-del-unknown", ErrorCode.GROUP_ID_NOT_FOUND),
            ]
        else:  # deleted by the first round
            assert got == [
                ("g-del-busy", ErrorCode.NON_EMPTY_GROUP),
                ("g-del-empty", ErrorCode.GROUP_ID_NOT_FOUND),
                ("g-del-unknown", ErrorCode.GROUP_ID_NOT_FOUND),
            ]
    assert fetch_offsets(c, "g-del-empty", {TOPIC: [0, 2]}) == {(TOPIC, 0): (-1, ""), (TOPIC, 2): (-1, "")}
    assert fetch_offsets(c, "g-del-empty", None, version=2) == {}
    assert describe(c, "g-del-empty").group_state == "Dead"
    assert describe(c, "g-del-busy").group_state == "Stable"


def test_find_coordinator_answers_groups_and_transactional_ids_singly_and_batched(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    """One broker coordinates every group and every transactional id (key type 1 leads to the
    transaction coordinator, Kafka's ``TransactionCoordinator`` on the ``__transaction_state``
    partition leader)."""
    c = open_conn(wire_broker, conns)
    r0 = c.call(FIND_COORDINATOR, 0, key="g-any")
    assert (code(r0.error_code), r0.host, r0.port) == (ErrorCode.NONE, "127.0.0.1", wire_broker.port)
    r3 = c.call(FIND_COORDINATOR, 3, key="tx-1", key_type=1)
    assert (code(r3.error_code), r3.node_id, r3.host, r3.port) == (
        ErrorCode.NONE,
        r0.node_id,
        "127.0.0.1",
        wire_broker.port,
    )
    for version in (4, 6):
        r = c.call(FIND_COORDINATOR, version, key_type=0, coordinator_keys=["g-1", "g-2", ""])
        assert [(k.key, code(k.error_code), k.node_id, k.host, k.port) for k in r.coordinators] == [
            (key, ErrorCode.NONE, r0.node_id, "127.0.0.1", wire_broker.port) for key in ("g-1", "g-2", "")
        ]
        r = c.call(FIND_COORDINATOR, version, key_type=1, coordinator_keys=["tx-a", "tx-b"])
        assert [(k.key, code(k.error_code), k.node_id, k.port) for k in r.coordinators] == [
            ("tx-a", ErrorCode.NONE, r0.node_id, wire_broker.port),
            ("tx-b", ErrorCode.NONE, r0.node_id, wire_broker.port),
        ]


# ============================================================================== parked joins
def test_client_disconnecting_while_parked_leaves_others_working_and_expires_by_session_timeout(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-disconnect"
    a = open_conn(wire_broker, conns, client_id="stays")
    a_id, gen = stable_single(a, group, session_ms=20_000)
    quitter = open_conn(wire_broker, conns, client_id="quits")
    r = join(quitter, group, session_ms=1500, rebalance_ms=20_000)
    quitter_id = r.member_id
    send_join(quitter, group, quitter_id, session_ms=1500, rebalance_ms=20_000)  # parked
    send_describe = quitter.send(DESCRIBE_GROUPS, 5, groups=[group], include_authorized_operations=False)
    assert send_describe == 3
    # The parked connection is muted: its DescribeGroups is not answered while another
    # connection's DescribeGroups is.
    assert describe(a, group).group_state == "PreparingRebalance"
    assert not quitter.readable(0.2)
    quitter.close()
    # A is not disturbed: it rejoins, completes the join with the departed member still listed,
    # and becomes Stable as leader.
    assert heartbeat(a, group, gen, a_id) is ErrorCode.REBALANCE_IN_PROGRESS
    ra = join(a, group, a_id, session_ms=20_000, rebalance_ms=20_000)
    assert (code(ra.error_code), ra.generation_id, ra.leader) == (ErrorCode.NONE, gen + 1, a_id)
    assert sorted(m.member_id for m in ra.members) == sorted([a_id, quitter_id])
    sa = sync(a, group, gen + 1, a_id, {a_id: assignment_for(0, 1), quitter_id: assignment_for(2)})
    assert code(sa.error_code) is ErrorCode.NONE
    # The departed member never syncs or heartbeats: its 1.5 s session ends its membership and
    # the group rebalances without it.
    wait_until(
        lambda: [m.member_id for m in describe(a, group).members] == [a_id],
        timeout=10,
        what="the disconnected member to expire",
    )
    assert heartbeat(a, group, gen + 1, a_id) is ErrorCode.REBALANCE_IN_PROGRESS
    ra = join(a, group, a_id, session_ms=20_000)
    assert (code(ra.error_code), ra.generation_id, [m.member_id for m in ra.members]) == (
        ErrorCode.NONE,
        gen + 2,
        [a_id],
    )


# ============================================================================== __group_events
def test_group_events_topic_records_a_scripted_rebalance_in_order(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    from confluent_kafka import Consumer, TopicPartition

    group = "g-events"
    a, b = open_conn(wire_broker, conns, client_id="ev-a"), open_conn(wire_broker, conns, client_id="ev-b")
    a_id, b_id, gen = stable_pair(a, b, group)
    r = b.call(
        LEAVE,
        5,
        group_id=group,
        members=[{"member_id": b_id, "group_instance_id": None, "reason": "scripted shutdown"}],
    )
    assert code(r.members[0].error_code) is ErrorCode.NONE
    assert heartbeat(a, group, gen, a_id) is ErrorCode.REBALANCE_IN_PROGRESS
    ra = join(a, group, a_id)
    sync(a, group, ra.generation_id, a_id, {a_id: assignment_for(0, 1, 2)})
    assert ra.generation_id == 3

    consumer = Consumer(
        {
            "bootstrap.servers": wire_broker.bootstrap,
            "group.id": "events-reader-unused",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([TopicPartition("__group_events", p, 0) for p in range(OFFSETS_PARTITIONS)])
        events: list[dict[str, Any]] = []
        deadline = time.monotonic() + 15

        def last_is_final() -> bool:
            return bool(events) and events[-1]["generation"] == 3 and events[-1]["to_state"] == "Stable"

        while not last_is_final() and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None or msg.error() is not None:
                continue
            if msg.key() == group.encode():
                events.append(json.loads(msg.value()))
    finally:
        consumer.close()
    got = [(e["type"], e["from_state"], e["to_state"], e["reason"], e["generation"]) for e in events]
    assert got == [
        ("state_change", None, "Empty", "group_created", 0),
        ("member_added", None, None, "new_member_joined", 0),
        ("state_change", "Empty", "PreparingRebalance", "new_member_joined", 0),
        ("state_change", "PreparingRebalance", "CompletingRebalance", "join_completed", 1),
        ("state_change", "CompletingRebalance", "Stable", "assignment_persisted", 1),
        ("member_added", None, None, "new_member_joined", 1),
        ("state_change", "Stable", "PreparingRebalance", "new_member_joined", 1),
        ("state_change", "PreparingRebalance", "CompletingRebalance", "join_completed", 2),
        ("state_change", "CompletingRebalance", "Stable", "assignment_persisted", 2),
        ("member_removed", None, None, "member_left", 2),
        ("state_change", "Stable", "PreparingRebalance", "member_left", 2),
        ("state_change", "PreparingRebalance", "CompletingRebalance", "join_completed", 3),
        ("state_change", "CompletingRebalance", "Stable", "assignment_persisted", 3),
    ]
    by_member = [
        (e["type"], e["member_id"], e["client_id"], e["client_reason"])
        for e in events
        if e["type"] != "state_change"
    ]
    assert by_member == [
        ("member_added", a_id, "ev-a", None),
        ("member_added", b_id, "ev-b", None),
        ("member_removed", b_id, "ev-b", "scripted shutdown"),
    ]


def test_commit_only_to_unknown_topics_does_not_create_the_group(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    c = open_conn(wire_broker, conns)
    assert commit(c, "g-commit-nothing", -1, "", {("no-such-topic", 0): 1, (TOPIC, 9): 1}) == {
        ("no-such-topic", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        (TOPIC, 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert describe(c, "g-commit-nothing").group_state == "Dead"
    r = c.call(LIST_GROUPS, 4, states_filter=[])
    assert "g-commit-nothing" not in [g.group_id for g in r.groups]


@pytest.mark.parametrize("version", [1, 2, 8, 9])
def test_commit_of_a_known_topic_with_no_partitions_does_not_create_the_group(
    wire_broker: BrokerProcess, conns: list[Wire], version: int
) -> None:
    """Kafka's ``KafkaApis.handleOffsetCommitRequest`` keeps a known topic only
    ``if (!topicWithValidPartitions.partitions.isEmpty)``, and with nothing kept answers without
    asking the coordinator: no group is created. v1 goes through kio's entity, v2-9 through
    ``protocol/hot.py``'s request, which the handler must not pass on as it is here. The answer
    lists no topic: ``OffsetCommitResponse.Builder.addPartitions`` creates a topic's entry only
    when it adds a partition to it."""
    c = open_conn(wire_broker, conns)
    group = f"g-commit-no-partitions-v{version}"
    fields: dict[str, Any] = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [{"name": TOPIC, "partitions": []}],
    }
    if 2 <= version <= 4:
        fields["retention_time"] = -1
    if version >= 7:
        fields["group_instance_id"] = None
    r = c.call(OFFSET_COMMIT, version, **fields)
    assert list(r.topics) == []  # the builder adds a topic with its first partition: none here
    assert describe(c, group).group_state == "Dead"


@pytest.mark.parametrize("api", ["join", "sync", "heartbeat", "leave"])
def test_empty_group_id_is_invalid_group_id_for_membership_requests(
    wire_broker: BrokerProcess, conns: list[Wire], api: str
) -> None:
    c = open_conn(wire_broker, conns)
    if api == "join":
        got = code(join(c, "").error_code)
    elif api == "sync":
        got = code(sync(c, "", 1, "m").error_code)
    elif api == "heartbeat":
        got = heartbeat(c, "", 1, "m")
    else:
        got = code(c.call(LEAVE, 0, group_id="", member_id="m").error_code)
    assert got is ErrorCode.INVALID_GROUP_ID


def test_follower_sync_waits_for_the_leader_and_heartbeats_are_fine_meanwhile(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-follower-first"
    a, b = open_conn(wire_broker, conns), open_conn(wire_broker, conns)
    a_id, gen = stable_single(a, group)
    rb = join(b, group)
    send_join(b, group, rb.member_id)
    ra = join(a, group, a_id)
    b_id = b.recv().member_id
    assert ra.generation_id == gen + 1
    # CompletingRebalance: heartbeats are answered NONE (scenario 45).
    assert heartbeat(a, group, gen + 1, a_id) is ErrorCode.NONE
    b.send(
        SYNC,
        3,
        group_id=group,
        generation_id=gen + 1,
        member_id=b_id,
        group_instance_id=None,
        assignments=[],
    )
    assert describe(a, group).group_state == "CompletingRebalance"
    assert not b.readable(0.3)  # the follower's SyncGroup is held for the leader's
    sa = sync(a, group, gen + 1, a_id, {a_id: assignment_for(0), b_id: assignment_for(1, 2)})
    sb = b.recv()
    assert (code(sa.error_code), bytes(sa.assignment)) == (ErrorCode.NONE, assignment_for(0))
    assert (code(sb.error_code), bytes(sb.assignment)) == (ErrorCode.NONE, assignment_for(1, 2))
    assert describe(a, group).group_state == "Stable"


def test_static_leader_rejoining_with_v9_skips_assignment_and_keeps_generation(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-static-v9"
    old, new = open_conn(wire_broker, conns), open_conn(wire_broker, conns)
    first = join(old, group, version=9, instance_id="lead")
    sync(old, group, 1, first.member_id, {first.member_id: assignment_for(0, 1, 2)}, instance_id="lead")
    again = join(new, group, version=9, instance_id="lead")
    assert code(again.error_code) is ErrorCode.NONE
    assert again.member_id != first.member_id
    assert (again.generation_id, again.leader, again.skip_assignment) == (1, again.member_id, True)
    assert [(m.member_id, m.group_instance_id) for m in again.members] == [(again.member_id, "lead")]
    s = sync(new, group, 1, again.member_id, version=5, instance_id="lead")
    assert (code(s.error_code), bytes(s.assignment)) == (ErrorCode.NONE, assignment_for(0, 1, 2))
    assert describe(new, group).group_state == "Stable"


def test_parked_join_mutes_its_connection_until_answered(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-muted"
    a, x = open_conn(wire_broker, conns), open_conn(wire_broker, conns)
    a_id, gen = stable_single(a, group)
    b_id = join(x, group).member_id
    send_join(x, group, b_id)  # parked: x is muted from here on
    # Behind the parked JoinGroup, the same connection asks to remove A. Were it read now, A
    # would leave and B's join would complete at once.
    x.send(LEAVE, 3, group_id=group, members=[{"member_id": a_id, "group_instance_id": None}])
    assert not x.readable(0.3)
    g = describe(a, group)
    assert (g.group_state, sorted(m.member_id for m in g.members)) == (
        "PreparingRebalance",
        sorted([a_id, b_id]),
    )
    # A rejoins: the join completes, x is answered and unmuted, and only then is its
    # LeaveGroup read and applied.
    ra = join(a, group, a_id)
    assert (ra.generation_id, sorted(m.member_id for m in ra.members)) == (gen + 1, sorted([a_id, b_id]))
    rb = x.recv()
    assert (code(rb.error_code), rb.member_id, rb.generation_id) == (ErrorCode.NONE, b_id, gen + 1)
    leave = x.recv()
    assert [(m.member_id, code(m.error_code)) for m in leave.members] == [(a_id, ErrorCode.NONE)]
    g = describe(a, group)
    assert (g.group_state, [m.member_id for m in g.members]) == ("PreparingRebalance", [b_id])


# ============================================================================== loading
def test_requests_for_a_loading_partition_get_the_reference_codes(tmp_path: Path) -> None:
    """An in-process broker whose coordinator is held loading every partition (a real server
    on loopback, driven by the same raw client): reference §2.1."""
    import asyncio
    import threading

    from groupcoord.app import build_dispatcher
    from groupcoord.broker.state import Broker
    from groupcoord.clock import ManualClock
    from groupcoord.config import BrokerConfig
    from groupcoord.runtime.group_runtime import GroupRuntime
    from groupcoord.server.app import KafkaServer

    ready = threading.Event()
    stop = threading.Event()
    port: list[int] = []

    async def serve() -> None:
        config = BrokerConfig.load(None, ["listeners=PLAINTEXT://127.0.0.1:0", *SETTINGS])
        broker = Broker.open(config, tmp_path / "data", ManualClock())
        runtime = GroupRuntime(broker)
        runtime.ensure_topics()
        broker.logs.create_topic("t", 2, {})
        for p in range(OFFSETS_PARTITIONS):
            runtime.coordinator.begin_loading(p)  # and never complete
        server = KafkaServer(
            build_dispatcher(broker, runtime),
            host="127.0.0.1",
            port=0,
            max_frame_bytes=config.socket_request_max_bytes,
        )
        _, bound = await server.start()
        broker.advertised_port = bound
        port.append(bound)
        ready.set()
        try:
            while not stop.is_set():
                await asyncio.sleep(0.01)
        finally:
            await server.stop(grace_s=1)
            await broker.close()

    thread = threading.Thread(target=lambda: asyncio.run(serve()))
    thread.start()
    try:
        assert ready.wait(15)
        c = Wire(port[0])
        try:
            group = "g-loading"
            load = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
            assert code(join(c, group).error_code) is load
            assert heartbeat(c, group, 1, "m") is ErrorCode.NONE  # answered blindly
            assert code(sync(c, group, 1, "m").error_code) is ErrorCode.REBALANCE_IN_PROGRESS  # 3.x
            assert commit(c, group, -1, "", {("t", 0): 1}) == {("t", 0): load}
            r = c.call(LEAVE, 3, group_id=group, members=[{"member_id": "m", "group_instance_id": None}])
            assert (code(r.error_code), r.members) == (load, ())
            g = describe(c, group)
            assert (code(g.error_code), g.group_state) == (load, "Dead")
            r = c.call(DELETE_GROUPS, 2, groups_names=[group])
            assert [(x.group_id, code(x.error_code)) for x in r.results] == [(group, load)]
            # OffsetFetch: v1 has no top-level error, so each partition carries it; v2+ top level;
            # v8 per group.
            r = c.call(OFFSET_FETCH, 1, group_id=group, topics=[{"name": "t", "partition_indexes": [0, 1]}])
            assert [
                (t.name, int(p.partition_index), int(p.committed_offset), code(p.error_code))
                for t in r.topics
                for p in t.partitions
            ] == [("t", 0, -1, load), ("t", 1, -1, load)]
            r = c.call(OFFSET_FETCH, 7, group_id=group, topics=None, require_stable=False)
            assert (code(r.error_code), r.topics) == (load, ())
            r = c.call(OFFSET_FETCH, 8, groups=[{"group_id": group, "topics": None}], require_stable=False)
            assert [(g.group_id, code(g.error_code), g.topics) for g in r.groups] == [(group, load, ())]
        finally:
            c.close()
    finally:
        stop.set()
        thread.join(15)


def test_commit_metadata_longer_than_the_limit_fails_only_that_partition(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    c = open_conn(wire_broker, conns)
    group = "g-metadata-size"
    # offset.metadata.max.bytes=4096 counts UTF-16 code units: 2048 astral characters are 4096.
    fits, too_long = "\U0001f600" * 2048, "x" * 4097
    r = c.call(
        OFFSET_COMMIT,
        8,
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=[
            {
                "name": TOPIC,
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 5,
                        "committed_leader_epoch": -1,
                        "committed_metadata": too_long,
                    },
                    {
                        "partition_index": 1,
                        "committed_offset": 6,
                        "committed_leader_epoch": -1,
                        "committed_metadata": fits,
                    },
                ],
            }
        ],
    )
    assert [(int(p.partition_index), code(p.error_code)) for p in r.topics[0].partitions] == [
        (0, ErrorCode.OFFSET_METADATA_TOO_LARGE),
        (1, ErrorCode.NONE),
    ]
    assert fetch_offsets(c, group, {TOPIC: [0, 1]}) == {(TOPIC, 0): (-1, ""), (TOPIC, 1): (6, fits)}


def test_member_that_never_syncs_is_removed_at_the_rebalance_timeout(
    wire_broker: BrokerProcess, conns: list[Wire]
) -> None:
    group = "g-pending-sync"
    a, b = open_conn(wire_broker, conns), open_conn(wire_broker, conns)
    timeouts = {"session_ms": 30_000, "rebalance_ms": 1500}
    a_id, gen = stable_single(a, group, **timeouts)
    b_id = join(b, group, **timeouts).member_id
    send_join(b, group, b_id, **timeouts)
    ra = join(a, group, a_id, **timeouts)
    assert (b.recv().generation_id, ra.generation_id) == (gen + 1, gen + 1)
    sa = sync(a, group, gen + 1, a_id, {a_id: assignment_for(0, 1), b_id: assignment_for(2)})
    assert code(sa.error_code) is ErrorCode.NONE
    # B never sends SyncGroup (scenario 39): 1.5 s after the join completed it is removed.
    wait_until(
        lambda: [m.member_id for m in describe(a, group).members] == [a_id],
        timeout=10,
        what="the member that never synced to be removed",
    )
    assert heartbeat(b, group, gen + 1, b_id) is ErrorCode.UNKNOWN_MEMBER_ID
    assert heartbeat(a, group, gen + 1, a_id) is ErrorCode.REBALANCE_IN_PROGRESS
