"""Replay, loading and unloading (reference §6, 73; §2.13), the transition table, and group events."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from coord_harness import DELAY, GROUP, SESSION, Harness

from groupcoord.coordinator.events import EventReason, GroupEvent
from groupcoord.coordinator.group import ClassicGroup
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    decode_record,
    encode_record,
    encode_value,
)
from groupcoord.coordinator.state import VALID_PREVIOUS_STATES, GroupState, check_transition
from groupcoord.errors import ErrorCode, IllegalStateError
from groupcoord.protocol.group_messages import OffsetFetchGroup, OffsetFetchRequest

ROOT = Path(__file__).resolve().parents[2]


def _reload(h: Harness, **config: object) -> Harness:
    """A fresh coordinator that loads the partition from h's records, passed through the byte codec."""
    h2 = Harness(**config)  # type: ignore[arg-type]
    p = h2.c.partition_for(GROUP)
    h2.c.unload_partition(p)
    h2.c.begin_loading(p)
    for partition, records in h.sink.appended:
        if partition != p:
            continue
        for rec in records:
            decoded = decode_record(*encode_record(rec))
            assert decoded is not None
            h2.c.replay(decoded)
    return h2


# 73
def test_reloaded_stable_group_keeps_generation_members_assignments_and_offsets() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    h.commit({("t", 0): 5}, member_id=a, generation=gen, metadata="m")
    h2 = _reload(h)
    p = h2.c.partition_for(GROUP)
    # while loading: joins wait, heartbeats are answered blindly, syncs must rejoin
    assert h2.join(a).error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert h2.heartbeat(a, gen) is ErrorCode.NONE
    assert h2.sync(a, gen).error is ErrorCode.REBALANCE_IN_PROGRESS
    h2.c.complete_loading(p)
    assert h2.state() == "Stable"
    g = h2.c.group(GROUP)
    assert g is not None
    assert (g.generation, g.leader_id, g.protocol_name, g.protocol_type) == (gen, a, "range", "consumer")
    assert [(m.member_id, m.assignment) for m in g.members.values()] == [
        (a, b"assignment-0"),
        (b, b"assignment-1"),
    ]
    assert h2.fetch({"t": (0,)}) == {("t", 0): (5, None, "m", ErrorCode.NONE)}
    assert h2.sync(b, gen).assignment == b"assignment-1"
    # a loaded member only knows its selected protocol's metadata (as in Kafka): a follower
    # rejoining with exactly that does not rebalance
    assert h2.join(b, protocols=(("range", b"range-md"),)).generation_id == gen
    assert h2.state() == "Stable"
    assert [e.reason for e in h2.events if e.type == "state_change"] == [EventReason.LOADED]


def test_members_of_a_reloaded_group_expire_a_session_timeout_after_the_load() -> None:
    h = Harness()
    (a, _b), gen = h.stable_group(2)
    h2 = _reload(h)
    h2.advance(10_000)  # time spent loading does not count
    h2.c.complete_loading(h2.c.partition_for(GROUP))
    h2.advance(SESSION - 1)
    assert h2.heartbeat(a, gen) is ErrorCode.NONE
    h2.advance(1)
    g = h2.c.group(GROUP)
    assert g is not None and list(g.members) == [a]
    assert h2.state() == "PreparingRebalance"


def test_reloaded_group_over_max_size_rebalances_at_once() -> None:
    h = Harness()
    h.stable_group(3)
    h2 = _reload(h, group_max_size=2)
    h2.c.complete_loading(h2.c.partition_for(GROUP))
    assert h2.state() == "PreparingRebalance"
    assert [e.reason for e in h2.events if e.type == "state_change"] == [
        EventReason.LOADED,
        EventReason.MAX_SIZE_EXCEEDED,
    ]


def test_reload_of_an_empty_group_and_of_a_deleted_group() -> None:
    h = Harness(offsets_topic_num_partitions=1)  # both groups in the one partition
    (a,), gen = h.stable_group(1)
    h.commit({("t", 0): 1}, member_id=a, generation=gen)
    h.leave((a, None))
    h.commit({("t", 0): 1}, group="gone")
    h.c.delete_groups(["gone"], lambda _r: None)
    h2 = _reload(h, offsets_topic_num_partitions=1)
    h2.c.complete_loading(0)
    g = h2.c.group(GROUP)
    assert g is not None and (g.state, g.generation, g.members) == (GroupState.EMPTY, gen + 1, {})
    assert h2.fetch(None) == {("t", 0): (1, None, "", ErrorCode.NONE)}
    assert h2.c.group("gone") is None


def test_replay_reads_old_record_versions() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    rec = h.sink.records[-1]
    assert rec.value is not None
    h2 = Harness()
    p = h2.c.partition_for(GROUP)
    h2.c.unload_partition(p)
    h2.c.begin_loading(p)
    key_bytes, _ = encode_record(rec)
    assert isinstance(rec.value, GroupMetadataValue)
    old = replace(rec.value, current_state_timestamp=None)  # v1: no timestamp, no instance ids
    decoded = decode_record(key_bytes, encode_value(old, version=1))
    assert decoded is not None
    h2.c.replay(decoded)
    h2.c.complete_loading(p)
    g = h2.c.group(GROUP)
    assert g is not None and (g.generation, list(g.members)) == (gen, [a, b])


def test_unload_answers_parked_requests_with_not_coordinator_and_forgets_the_group() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    ra = h.join(a)
    p = h.c.partition_for(GROUP)
    h.c.unload_partition(p)
    assert (ra.error, ra.member_id) == (ErrorCode.NOT_COORDINATOR, a)
    assert h.c.group(GROUP) is None
    assert h.heartbeat(b, gen) is ErrorCode.NOT_COORDINATOR
    assert h.join().error is ErrorCode.NOT_COORDINATOR
    assert h.c.next_deadline() is not None  # only the retention check is left
    assert [e.reason for e in h.events][-1] is EventReason.COORDINATOR_UNLOADED


def test_unowned_partition_answers_not_coordinator_everywhere() -> None:
    h = Harness()
    p = h.c.partition_for(GROUP)
    h.c.unload_partition(p)
    assert h.commit({("t", 0): 1}) == {("t", 0): ErrorCode.NOT_COORDINATOR}
    assert h.sync("m", 1).error is ErrorCode.NOT_COORDINATOR
    assert h.leave(("m", None)).error is ErrorCode.NOT_COORDINATOR


# ------------------------------------------------------------------ transition table
def test_every_transition_outside_the_table_raises_illegal_state_error() -> None:
    for source in GroupState:
        for target in GroupState:
            if source in VALID_PREVIOUS_STATES[target]:
                check_transition(source, target)
            else:
                with pytest.raises(IllegalStateError):
                    check_transition(source, target)


def test_transition_stamps_time_and_remembers_the_previous_state() -> None:
    g = ClassicGroup("g", 5)
    g.transition_to(GroupState.PREPARING_REBALANCE, 17)
    assert (g.state, g.previous_state, g.state_timestamp) == (
        GroupState.PREPARING_REBALANCE,
        GroupState.EMPTY,
        17,
    )
    with pytest.raises(IllegalStateError):
        g.transition_to(GroupState.STABLE, 18)
    assert (g.state, g.state_timestamp) == (GroupState.PREPARING_REBALANCE, 17)


def test_state_machine_doc_is_generated_from_the_table() -> None:
    script = ROOT / "scripts" / "gen_state_machine.py"
    doc = ROOT / "docs" / "state-machine.md"
    ok = subprocess.run([sys.executable, str(script), "--check", str(doc)], capture_output=True)
    assert ok.returncode == 0, ok.stderr
    out = subprocess.run([sys.executable, str(script)], capture_output=True, check=True).stdout.decode()
    assert "| Stable | CompletingRebalance |" in out
    assert "    CompletingRebalance --> Stable" in out


def test_state_machine_check_fails_on_a_stale_doc(tmp_path: Path) -> None:
    stale = tmp_path / "state-machine.md"
    stale.write_text("old\n")
    script = ROOT / "scripts" / "gen_state_machine.py"
    r = subprocess.run([sys.executable, str(script), "--check", str(stale)], capture_output=True)
    assert r.returncode == 1


# ------------------------------------------------------------------ events
def test_a_rebalance_cycle_emits_state_and_member_events_with_reasons() -> None:
    h = Harness()
    first = h.join(client_id="app")
    a = h.join(first.member_id, client_id="app", reason="starting up")
    h.advance(DELAY)
    h.sync(a.member_id, 1, ((a.member_id, b"A"),))
    h.leave((a.member_id, None), reason="shutting down")
    got = [(e.type, e.from_state, e.to_state, e.reason.value, e.generation, e.member_count) for e in h.events]
    assert got == [
        ("state_change", None, "Empty", "group_created", 0, 0),
        ("member_added", None, None, "new_member_joined", 0, 1),
        ("state_change", "Empty", "PreparingRebalance", "new_member_joined", 0, 1),
        ("state_change", "PreparingRebalance", "CompletingRebalance", "join_completed", 1, 1),
        ("state_change", "CompletingRebalance", "Stable", "assignment_persisted", 1, 1),
        ("member_removed", None, None, "member_left", 1, 0),
        ("state_change", "Stable", "PreparingRebalance", "member_left", 1, 0),
        ("state_change", "PreparingRebalance", "Empty", "join_completed", 2, 0),
    ]
    added = h.events[1]
    assert (added.member_id, added.client_id, added.client_host, added.client_reason) == (
        a.member_id,
        "app",
        "/127.0.0.1",
        "starting up",
    )
    assert h.events[5].client_reason == "shutting down"


def test_session_timeout_rebalance_cause_is_on_the_transition_into_preparing() -> None:
    h = Harness()
    (a, b), gen = h.stable_group(2)
    h.advance(SESSION - 1)
    h.heartbeat(a, gen)
    h.advance(1)
    removed = [e for e in h.events if e.type == "member_removed"]
    assert [(e.member_id, e.reason) for e in removed] == [(b, EventReason.SESSION_TIMEOUT)]
    cause = [e for e in h.events if e.to_state == "PreparingRebalance"][-1]
    assert (cause.reason, cause.member_id) == (EventReason.SESSION_TIMEOUT, b)


def test_group_event_json_round_trip_uses_the_field_names_and_reason_string() -> None:
    e = GroupEvent(
        time_ms=1,
        group_id="g",
        generation=2,
        type="member_added",
        from_state=None,
        to_state=None,
        reason=EventReason.NEW_MEMBER_JOINED,
        member_id="m",
        group_instance_id=None,
        client_id="c",
        client_host="/h",
        client_reason=None,
        protocol_type="consumer",
        protocol_name=None,
        member_count=1,
    )
    assert e.to_json() == (
        b'{"time_ms":1,"group_id":"g","generation":2,"type":"member_added","from_state":null,'
        b'"to_state":null,"reason":"new_member_joined","member_id":"m","group_instance_id":null,'
        b'"client_id":"c","client_host":"/h","client_reason":null,"protocol_type":"consumer",'
        b'"protocol_name":null,"member_count":1}'
    )
    assert GroupEvent.from_json(e.to_json()) == e
    with pytest.raises(ValueError):
        GroupEvent.from_json(e.to_json().replace(b'"member_added"', b'"bogus"'))


def test_offsets_written_before_a_group_tombstone_load_as_a_simple_group() -> None:
    # A log written by another broker: group metadata, an offset, then a group tombstone
    # without offset tombstones (what a 3.x broker can leave behind).
    h = Harness()
    (a,), gen = h.stable_group(1)
    h.commit({("t", 0): 3}, member_id=a, generation=gen)
    records = [*h.sink.records, CoordinatorRecord(key=GroupMetadataKey(group=GROUP), value=None)]
    h2 = Harness()
    p = h2.c.partition_for(GROUP)
    h2.c.unload_partition(p)
    h2.c.begin_loading(p)
    for rec in records:
        h2.c.replay(rec)
    h2.c.complete_loading(p)
    g = h2.c.group(GROUP)
    assert g is not None
    assert (g.state, g.generation, g.protocol_type, g.members) == (GroupState.EMPTY, 0, None, {})
    assert h2.fetch(None) == {("t", 0): (3, None, "", ErrorCode.NONE)}


def test_fetch_describe_list_and_delete_while_loading_report_load_in_progress() -> None:
    h = Harness()
    p = h.c.partition_for(GROUP)
    h.c.unload_partition(p)
    h.c.begin_loading(p)
    fetched: list[Any] = []
    h.c.offset_fetch(
        OffsetFetchRequest(groups=(OffsetFetchGroup(group_id=GROUP, topics=None),)), fetched.append
    )
    assert fetched[0].groups[0].error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    described: list[Any] = []
    h.c.describe_groups([GROUP], described.append)
    assert described[0].groups[0].error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    listed: list[Any] = []
    h.c.list_groups(None, listed.append)
    assert listed[0].error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    deleted: list[Any] = []
    h.c.delete_groups([GROUP], deleted.append)
    assert deleted[0].results[0].error is ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert h.commit({("t", 0): 1}) == {("t", 0): ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
