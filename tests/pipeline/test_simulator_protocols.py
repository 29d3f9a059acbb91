"""``simulate --protocol consumer|mixed``: KIP-848 member cores against the coordinator core in
virtual time, with a ground truth that the data directory reproduces exactly.

No Spark here: the truth is checked against the group events the coordinator core itself wrote to
``__group_events`` (the data the pipeline reads), and the cost of each disruption against the
protocols' defining property (KIP-848: a member whose partitions do not move is not touched).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline.cli import main
from groupcoord.pipeline.segments import iter_records, plan_splits, walk_split
from groupcoord.pipeline.simledger import OwnershipLedger
from groupcoord.pipeline.simulate import GroundTruth, SimulationConfig, simulate

SMALL = dict(groups=2, members=3, minutes=6, seed=1, partitions=4, offsets_partitions=5)


def _events(data_dir: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for split in plan_splits(data_dir, topics=frozenset({"__group_events"})):
        for _h, rec in iter_records(walk_split(split)):
            assert rec.value is not None
            out.append(json.loads(rec.value))
    return sorted(out, key=lambda e: e["time_ms"])  # one partition: already in order; stable


def _labels(events: list[dict[str, Any]]) -> dict[str, str]:
    """member id -> the simulator's label (instance id, else client id), from member_added."""
    return {
        e["member_id"]: e["group_instance_id"] or e["client_id"]
        for e in events
        if e["type"] == "member_added" and e["member_id"] is not None
    }


def _consumer_rebalances(events: list[dict[str, Any]], group_id: str) -> list[tuple[int, str, str]]:
    """(time, cause, member label) of every group-epoch bump of a consumer group: the member is the
    one added (a join) or removed (a leave, a session timeout) at the same instant."""
    labels = _labels(events)
    out = []
    for e in events:
        if e["group_id"] != group_id or e["type"] != "epoch_bump":
            continue
        if e["member_id"] is not None:
            member = labels[e["member_id"]]
        else:
            (removed,) = [
                x
                for x in events
                if x["group_id"] == group_id
                and x["type"] == "member_removed"
                and x["time_ms"] == e["time_ms"]
                and x["generation"] == e["generation"]
            ]
            member = labels[removed["member_id"]]
        # the first member's epoch bump creates the group: a member joining, as the truth says
        cause = "new_member_joined" if e["reason"] == "group_created" else e["reason"]
        out.append((e["time_ms"], cause, member))
    return out


def _assert_exact(truth: GroundTruth, events: list[dict[str, Any]], group_id: str) -> None:
    expected = [r for r in truth.rebalances if r.group_id == group_id]
    found = _consumer_rebalances(events, group_id)
    assert len(found) == len(expected), (found, expected)
    for t in expected:
        matches = [
            f
            for f in found
            if f[1] == t.cause and f[2] == t.member and t.earliest_start_ms <= f[0] <= t.latest_start_ms
        ]
        assert len(matches) == 1, (t, found)
    for q in truth.quiet:
        if q.group_id == group_id:
            assert not [f for f in found if q.from_ms <= f[0] <= q.to_ms], (q, found)


@pytest.fixture(scope="module")
def consumer_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[GroundTruth, list[dict[str, Any]]]:
    out = tmp_path_factory.mktemp("sim-consumer") / "data"
    truth = simulate(out, SimulationConfig(**SMALL, protocol="consumer"))  # type: ignore[arg-type]
    return truth, _events(out)


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[GroundTruth, list[dict[str, Any]], Path]:
    out = tmp_path_factory.mktemp("sim-mixed") / "data"
    truth = simulate(out, SimulationConfig(**SMALL, protocol="mixed"))  # type: ignore[arg-type]
    return truth, _events(out), out


@pytest.mark.parametrize("protocol", ["consumer", "mixed"])
def test_a_consumer_protocol_simulation_is_deterministic_for_a_seed(tmp_path: Path, protocol: str) -> None:
    cfg = SimulationConfig(
        groups=1, members=3, minutes=3, seed=11, partitions=2, offsets_partitions=3, protocol=protocol
    )
    a = simulate(tmp_path / "a", cfg)
    b = simulate(tmp_path / "b", cfg)
    assert (a.rebalances, a.quiet, a.commits, a.produced, a.episodes) == (
        b.rebalances,
        b.quiet,
        b.commits,
        b.produced,
        b.episodes,
    )
    seg = "00000000000000000000.log"
    for name in ("__group_events-0", *(f"__consumer_offsets-{p}" for p in range(3))):
        assert (tmp_path / "a" / name / seg).read_bytes() == (tmp_path / "b" / name / seg).read_bytes()


def test_every_group_epoch_bump_is_in_the_ground_truth_with_its_cause_member_and_time(
    consumer_run: Any,
) -> None:
    """Kafka's GroupMetadataManager bumps the group epoch when a member joins, leaves (epoch -1,
    also on the member's poll timeout) or is fenced by its session timeout, and not when a static
    member leaves with epoch -2 and comes back within its session timeout (its assignment is
    kept: ``consumerGroupStaticMemberLeftTemporarily`` / static member replacement)."""
    truth, events = consumer_run
    assert dict(truth.protocols) == {"group-0": "consumer", "group-1": "consumer"}
    kinds = {r.disruption for r in truth.rebalances} | {q.disruption for q in truth.quiet}
    assert kinds == {"initial_join", "join", "crash", "leave", "slow", "static_restart"}
    for group_id in ("group-0", "group-1"):
        _assert_exact(truth, events, group_id)
    # a temporary static leave is recorded as such, and no epoch bump follows it
    assert [e for e in events if e["reason"] == "static_member_left_temporarily"]


def test_consumer_protocol_members_commit_with_offset_commit_v9(consumer_run: Any) -> None:
    """The members auto-commit with their member epoch; a commit below v9 would be refused
    UNSUPPORTED_VERSION (Kafka's ``ConsumerGroup.validateOffsetCommit``) and none would be written."""
    truth, _ = consumer_run
    assert truth.commits > 0


def test_unaffected_members_never_stop_under_the_consumer_protocol(consumer_run: Any) -> None:
    """KIP-848: only the members whose partitions move take part; the others go on processing."""
    truth, _ = consumer_run
    assert truth.episodes
    for ep in truth.episodes:
        assert ep.protocol == "consumer"
        assert ep.members_stopped == 0, ep
        assert ep.moved <= 2, ep
        if ep.disruption in ("join", "leave", "crash", "slow"):
            assert ep.unaffected >= ep.members - 2, ep


def test_mixed_twins_share_one_plan_and_each_keeps_its_own_exact_truth(mixed_run: Any) -> None:
    truth, events, out = mixed_run
    protocols = dict(truth.protocols)
    assert protocols == {
        "group-0-classic": "classic",
        "group-0-consumer": "consumer",
        "group-1-classic": "classic",
        "group-1-consumer": "consumer",
    }
    for g in (0, 1):
        plans = {}
        for protocol in ("classic", "consumer"):
            gid = f"group-{g}-{protocol}"
            plans[protocol] = [
                (e.disruption, e.member.removeprefix(f"group-{g}-{protocol}-"))
                for e in truth.episodes
                if e.group_id == gid
            ]
            assert plans[protocol]
        assert plans["classic"] == plans["consumer"]
        _assert_exact(truth, events, f"group-{g}-consumer")
        # the classic twin: one PreparingRebalance per injected rebalance, at its time
        starts = [
            e["time_ms"]
            for e in events
            if e["group_id"] == f"group-{g}-classic"
            and e["type"] == "state_change"
            and e["to_state"] == "PreparingRebalance"
        ]
        expected = [r for r in truth.rebalances if r.group_id == f"group-{g}-classic"]
        assert len(starts) == len(expected)
        for r in expected:
            assert len([t for t in starts if r.earliest_start_ms <= t <= r.latest_start_ms]) == 1, r
    # the classic (eager, range) twin stops every member on a join; the consumer twin none
    for ep in truth.episodes:
        if ep.disruption == "join":
            if ep.protocol == "classic":
                assert ep.unaffected == 0 and ep.members_revoking == ep.members - 1, ep
            else:
                assert ep.members_stopped == 0 and ep.members_revoking <= 1, ep
    # consumer groups' records name topics by id: each partition says which (Kafka's file)
    meta = (out / "topic-0-consumer-0" / "partition.metadata").read_text()
    assert meta.startswith("version: 0\ntopic_id: ")


def test_the_ledger_measures_a_stop_the_world_pause_and_an_incremental_move() -> None:
    ledger = OwnershipLedger()
    parts = [("t", 0), ("t", 1), ("t", 2)]
    ledger.add_group("g", parts)
    ledger.assigned("g", "a", parts[:2], 0)
    ledger.assigned("g", "b", parts[2:], 0)
    # eager: both revoke everything at 100 and 300, assignment at 500 (a keeps 0, c joins)
    ledger.open("g", "classic", "join", "c", 50, ["a", "b"])
    ledger.released("g", "a", parts[:2], 100)
    ledger.released("g", "b", parts[2:], 300)
    ledger.assigned("g", "a", parts[:1], 500)
    ledger.assigned("g", "b", parts[2:], 500)
    ledger.assigned("g", "c", parts[1:2], 500)
    eager = ledger.close("g", 600, ["a", "b", "c"])
    assert (eager.settle_ms, eager.moved, eager.stopped_partition_ms) == (550, 1, 400 + 400 + 200)
    assert (eager.members_stopped, eager.max_member_stop_ms, eager.members_revoking, eager.unaffected) == (
        2,
        400,
        2,
        0,
    )
    # incremental: only a gives up partition 0, to d
    ledger.open("g", "consumer", "join", "d", 1_000, ["a", "b", "c"])
    ledger.released("g", "a", parts[:1], 1_200)
    ledger.assigned("g", "d", parts[:1], 1_700)
    inc = ledger.close("g", 1_700, ["a", "b", "c", "d"])
    assert (inc.settle_ms, inc.moved, inc.stopped_partition_ms) == (700, 1, 500)
    assert (inc.members_stopped, inc.members_revoking, inc.unaffected) == (0, 1, 2)


def test_the_simulate_command_takes_the_protocol_and_prints_each_protocols_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "sim"
    args = ["simulate", "--out", str(out), "--groups", "1", "--members", "3", "--minutes", "4"]
    args += ["--partitions", "4", "--offsets-partitions", "3", "--protocol", "mixed"]
    assert main([*args, "--remote-assignor", "range"]) == 0
    printed = capsys.readouterr().out
    assert "what each disruption cost" in printed
    rows = [line for line in printed.splitlines() if line.startswith("| ") and "disruption" not in line]
    assert {line.split("|")[2].strip() for line in rows} == {"classic", "consumer"}
    truth = GroundTruth.load(out / "ground_truth.json")
    assert dict(truth.protocols) == {"group-0-classic": "classic", "group-0-consumer": "consumer"}
    assert (out / "topic-0-consumer-0").is_dir() and (out / "topic-0-classic-3").is_dir()
    with pytest.raises(SystemExit):
        main(["simulate", "--out", str(tmp_path / "x"), "--protocol", "eager"])
