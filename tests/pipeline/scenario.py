"""A scripted scenario written with the storage layer, whose tables are known in advance.

Topic ``orders`` (2 partitions) gets a batch of 10 records every 10 s (partition 1 stops after 30 s).
Group ``shop`` goes through four rebalances:

1. t=1.0 s  A joins the empty group; join completes after the 3 s initial delay (t=4.0), Stable at
   t=4.05 (generation 1, A owns orders-0 and orders-1).
2. t=15 s   B joins; CompletingRebalance t=15.5, Stable t=15.6 (generation 2, A: orders-0, B: orders-1).
3. t=40 s   B sends LeaveGroup because its poll timeout expired; CompletingRebalance t=42, Stable
   t=42.2 (generation 3, A owns both again).
4. t=50 s   static member C (instance pod-c) joins; CompletingRebalance t=50.3 (generation 4) but A's
   session times out at t=50.4, so the group goes back to PreparingRebalance; CompletingRebalance
   t=51.0, Stable t=51.1 (generation 5, C owns both). Generation 4 never reached Stable, so it has no
   GroupMetadata record.

Group ``audit`` only makes "simple" commits (generation -1, no members) and keeps up.
Times below are milliseconds after :data:`T0`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from groupcoord.coordinator.events import EventReason, GroupEvent
from groupcoord.coordinator.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadataRecord,
    OffsetCommitKey,
    OffsetCommitValue,
)
from groupcoord.formats.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from groupcoord.pipeline.datadir import DataDirWriter

T0 = 1_700_000_000_000
END = 60_000  # analysis "now" (--until) relative to T0
OFFSETS_PARTITIONS = 3

A = ("a-1", None, "app-a", "/10.0.0.1")
B = ("b-1", None, "app-b", "/10.0.0.2")
C = ("c-1", "pod-c", "app-c", "/10.0.0.3")
POLL_REASON = "consumer poll timeout has expired."


@dataclass(frozen=True, kw_only=True)
class Written:
    data_dir: Path
    corrupt_partition: int
    corrupt_next_offset: int


def _member(who: tuple[str, str | None, str, str], parts: tuple[int, ...]) -> MemberMetadataRecord:
    mid, inst, client, host = who
    return MemberMetadataRecord(
        member_id=mid,
        group_instance_id=inst,
        client_id=client,
        client_host=host,
        rebalance_timeout=60_000,
        session_timeout=10_000,
        subscription=encode_subscription(Subscription(topics=("orders",))),
        assignment=encode_assignment(Assignment(partitions=(("orders", parts),) if parts else ())),
    )


def _gm(
    generation: int, leader: str, at: int, members: tuple[MemberMetadataRecord, ...]
) -> CoordinatorRecord:
    return CoordinatorRecord(
        key=GroupMetadataKey(group="shop"),
        value=GroupMetadataValue(
            protocol_type="consumer",
            generation=generation,
            protocol="range",
            leader=leader,
            current_state_timestamp=T0 + at,
            members=members,
        ),
    )


def _commit(group: str, partition: int, offset: int, at: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        key=OffsetCommitKey(group=group, topic="orders", partition=partition),
        value=OffsetCommitValue(
            offset=offset, leader_epoch=None, metadata="", commit_timestamp=T0 + at, expire_timestamp=None
        ),
    )


def _sc(
    at: int,
    gen: int,
    frm: str,
    to: str,
    reason: EventReason,
    count: int,
    who: tuple[str, str | None, str, str] | None = None,
    client_reason: str | None = None,
) -> GroupEvent:
    return GroupEvent(
        time_ms=T0 + at,
        group_id="shop",
        generation=gen,
        type="state_change",
        from_state=frm,
        to_state=to,
        reason=reason,
        member_id=who[0] if who else None,
        group_instance_id=who[1] if who else None,
        client_id=who[2] if who else None,
        client_host=who[3] if who else None,
        client_reason=client_reason,
        protocol_type="consumer",
        protocol_name="range" if to in ("CompletingRebalance", "Stable") else None,
        member_count=count,
    )


def _member_event(
    at: int,
    gen: int,
    kind: str,
    reason: EventReason,
    count: int,
    who: tuple[str, str | None, str, str],
    client_reason: str | None = None,
) -> GroupEvent:
    return GroupEvent(
        time_ms=T0 + at,
        group_id="shop",
        generation=gen,
        type=kind,
        from_state=None,
        to_state=None,
        reason=reason,
        member_id=who[0],
        group_instance_id=who[1],
        client_id=who[2],
        client_host=who[3],
        client_reason=client_reason,
        protocol_type="consumer",
        protocol_name=None,
        member_count=count,
    )


def write_scenario(data_dir: Path) -> Written:
    w = DataDirWriter(data_dir, offsets_partitions=OFFSETS_PARTITIONS, events_partitions=2)
    w.create_topic("orders", 2)
    R = EventReason
    actions: list[tuple[int, int, object]] = []  # (time, sequence, action)

    def at(t: int, action: object) -> None:
        actions.append((t, len(actions), action))

    for t in range(0, 60_000, 10_000):
        at(t, ("produce", 0))
        if t <= 30_000:
            at(t, ("produce", 1))
    # rebalance 1
    at(1_000, _member_event(1_000, 0, "member_added", R.NEW_MEMBER_JOINED, 1, A))
    at(1_000, _sc(1_000, 0, "Empty", "PreparingRebalance", R.NEW_MEMBER_JOINED, 1, A))
    at(4_000, _sc(4_000, 1, "PreparingRebalance", "CompletingRebalance", R.JOIN_COMPLETED, 1))
    at(4_050, ("records", "shop", [_gm(1, "a-1", 4_050, (_member(A, (0, 1)),))]))
    at(4_050, _sc(4_050, 1, "CompletingRebalance", "Stable", R.ASSIGNMENT_PERSISTED, 1))
    # rebalance 2
    at(15_000, _member_event(15_000, 1, "member_added", R.NEW_MEMBER_JOINED, 2, B))
    at(15_000, _sc(15_000, 1, "Stable", "PreparingRebalance", R.NEW_MEMBER_JOINED, 2, B))
    at(15_500, _sc(15_500, 2, "PreparingRebalance", "CompletingRebalance", R.JOIN_COMPLETED, 2))
    at(15_600, ("records", "shop", [_gm(2, "a-1", 15_600, (_member(A, (0,)), _member(B, (1,))))]))
    at(15_600, _sc(15_600, 2, "CompletingRebalance", "Stable", R.ASSIGNMENT_PERSISTED, 2))
    # rebalance 3: B's poll timeout
    at(40_000, _member_event(40_000, 2, "member_removed", R.MEMBER_LEFT, 1, B, POLL_REASON))
    at(40_000, _sc(40_000, 2, "Stable", "PreparingRebalance", R.MEMBER_LEFT, 1, B, POLL_REASON))
    at(42_000, _sc(42_000, 3, "PreparingRebalance", "CompletingRebalance", R.JOIN_COMPLETED, 1))
    at(42_200, ("records", "shop", [_gm(3, "a-1", 42_200, (_member(A, (0, 1)),))]))
    at(42_200, _sc(42_200, 3, "CompletingRebalance", "Stable", R.ASSIGNMENT_PERSISTED, 1))
    # rebalance 4: static C joins, A times out during CompletingRebalance
    at(50_000, _member_event(50_000, 3, "member_added", R.NEW_MEMBER_JOINED, 2, C))
    at(50_000, _sc(50_000, 3, "Stable", "PreparingRebalance", R.NEW_MEMBER_JOINED, 2, C))
    at(50_300, _sc(50_300, 4, "PreparingRebalance", "CompletingRebalance", R.JOIN_COMPLETED, 2))
    at(50_400, _member_event(50_400, 4, "member_removed", R.SESSION_TIMEOUT, 1, A))
    at(50_400, _sc(50_400, 4, "CompletingRebalance", "PreparingRebalance", R.SESSION_TIMEOUT, 1, A))
    at(51_000, _sc(51_000, 5, "PreparingRebalance", "CompletingRebalance", R.JOIN_COMPLETED, 1))
    at(51_100, ("records", "shop", [_gm(5, "c-1", 51_100, (_member(C, (0, 1)),))]))
    at(51_100, _sc(51_100, 5, "CompletingRebalance", "Stable", R.ASSIGNMENT_PERSISTED, 1))
    # commits of shop
    at(5_000, ("records", "shop", [_commit("shop", 0, 10, 5_000), _commit("shop", 1, 10, 5_000)]))
    for t, off in ((15_000, 20), (25_000, 25), (35_000, 30), (45_000, 35), (55_000, 40)):
        at(t, ("records", "shop", [_commit("shop", 0, off, t)]))
    for t, off in ((22_000, 15), (26_000, 18), (30_000, 20)):
        at(t, ("records", "shop", [_commit("shop", 1, off, t)]))
    # audit keeps up with simple commits
    for t, off in ((10_000, 20), (20_000, 30), (50_000, 60)):
        at(t, ("records", "audit", [_commit("audit", 0, off, t)]))
    # something written after the analysed range (until = END) must not count
    at(61_000, ("records", "audit", [_commit("audit", 0, 0, 61_000)]))

    for t, _seq, action in sorted(actions, key=lambda a: (a[0], a[1])):
        if isinstance(action, GroupEvent):
            w.event(action.to_json())
        elif isinstance(action, tuple) and action[0] == "produce":
            w.produce("orders", int(action[1]), 10, T0 + t)
        elif isinstance(action, tuple) and action[0] == "records":
            w.coordinator_records(str(action[1]), list(action[2]), T0 + t)  # type: ignore[call-overload]
    from groupcoord.coordinator.records import partition_for

    shop_part = partition_for("shop", OFFSETS_PARTITIONS)
    next_offset = w.log_end_offset("__consumer_offsets", shop_part)
    w.close()
    # A torn write at the end of shop's offsets partition: the reader must flag it, not fail.
    seg = sorted((data_dir / f"__consumer_offsets-{shop_part}").glob("*.log"))[-1]
    with open(seg, "ab") as f:
        f.write(b"\x00" * 8 + b"\x00\x00\x01\x00" + b"\x07" * 20)
    return Written(data_dir=data_dir, corrupt_partition=shop_part, corrupt_next_offset=next_offset)
