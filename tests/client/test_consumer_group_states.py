"""The consumer-protocol member's state table, its generated page, and group.protocol config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.client.config import ConsumerConfig
from groupcoord.client.consumer_group_states import (
    STATE_ORDER,
    TRANSITIONS,
    ConsumerGroupMemberState,
    IllegalConsumerGroupTransition,
    can_handle_new_assignment,
    check_transition,
    heartbeats_now,
    skips_heartbeat,
)
from groupcoord.client.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
S = ConsumerGroupMemberState

#: Kafka's MemberState static block: each state's previousValidStates (clients 4.x).
KAFKA_PREVIOUS_VALID_STATES = {
    S.STABLE: {S.JOINING, S.ACKNOWLEDGING, S.RECONCILING},
    S.RECONCILING: {S.STABLE, S.JOINING, S.ACKNOWLEDGING, S.RECONCILING},
    S.ACKNOWLEDGING: {S.RECONCILING},
    S.FATAL: {
        S.JOINING,
        S.STABLE,
        S.RECONCILING,
        S.ACKNOWLEDGING,
        S.PREPARE_LEAVING,
        S.LEAVING,
        S.UNSUBSCRIBED,
    },
    S.FENCED: {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.PREPARE_LEAVING, S.LEAVING},
    S.JOINING: {S.FENCED, S.UNSUBSCRIBED, S.STALE},
    S.PREPARE_LEAVING: {S.JOINING, S.STABLE, S.RECONCILING, S.ACKNOWLEDGING, S.UNSUBSCRIBED},
    S.LEAVING: {S.PREPARE_LEAVING},
    S.UNSUBSCRIBED: {S.PREPARE_LEAVING, S.LEAVING, S.FENCED},
    S.STALE: {S.LEAVING},
}


def test_states_are_kafkas_ten() -> None:
    assert [s.value for s in STATE_ORDER] == [
        "UNSUBSCRIBED",
        "JOINING",
        "RECONCILING",
        "ACKNOWLEDGING",
        "STABLE",
        "FENCED",
        "PREPARE_LEAVING",
        "LEAVING",
        "FATAL",
        "STALE",
    ]


def test_transition_table_is_kafkas_member_state_table() -> None:
    """Every (from, to) of the table is in Kafka's MemberState.previousValidStates and back."""
    ours = {(a, b) for (a, b) in TRANSITIONS}
    kafka = {(prev, state) for state, prevs in KAFKA_PREVIOUS_VALID_STATES.items() for prev in prevs}
    assert ours == kafka


def test_transitions_outside_the_table_raise() -> None:
    check_transition(S.STABLE, S.STABLE)  # Java transitionTo accepts staying
    with pytest.raises(IllegalConsumerGroupTransition, match="STALE -> STABLE"):
        check_transition(S.STALE, S.STABLE)
    with pytest.raises(IllegalConsumerGroupTransition):
        check_transition(S.FATAL, S.JOINING)


def test_heartbeat_rules_per_state() -> None:
    """shouldSkipHeartbeat, shouldHeartbeatNow, canHandleNewAssignment."""
    assert {s for s in S if skips_heartbeat(s)} == {S.UNSUBSCRIBED, S.FATAL, S.STALE, S.FENCED}
    assert {s for s in S if heartbeats_now(s)} == {S.JOINING, S.ACKNOWLEDGING, S.LEAVING}
    assert {s for s in S if can_handle_new_assignment(s)} == {
        S.STABLE,
        S.JOINING,
        S.ACKNOWLEDGING,
        S.RECONCILING,
    }


def test_generated_page_is_current() -> None:
    page = ROOT / "docs" / "consumer-group-client-state-machine.md"
    script = ROOT / "scripts" / "gen_consumer_group_state_machine.py"
    done = subprocess.run([sys.executable, str(script), "--check", str(page)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    text = page.read_text()
    for (a, b), cause in TRANSITIONS.items():
        assert f"| {a.value} | {b.value} | {cause} |" in text


# ---------------------------------------------------------------------------------- config
def test_group_protocol_defaults_to_classic_and_accepts_consumer_in_any_case() -> None:
    assert ConsumerConfig.from_dict({"group.id": "g"}).group_protocol == "classic"
    c = ConsumerConfig.from_dict(
        {"group.id": "g", "group.protocol": "CONSUMER", "group.remote.assignor": "range"}
    )
    assert (c.group_protocol, c.group_remote_assignor) == ("consumer", "range")


@pytest.mark.parametrize(
    "key", ["session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"]
)
def test_consumer_protocol_refuses_the_keys_the_broker_decides(key: str) -> None:
    """ConsumerConfig CONSUMER_PROTOCOL_UNSUPPORTED_CONFIGS: a non-blank value is refused, even the
    default; the message names the key."""
    value = {"session.timeout.ms": 45_000, "heartbeat.interval.ms": 3_000}.get(key, "range")
    with pytest.raises(ConfigError, match=rf"^{key} cannot be set when group.protocol=CONSUMER$"):
        ConsumerConfig.from_dict({"group.id": "g", "group.protocol": "consumer", key: value})
    with pytest.raises(ConfigError, match=r"partition\.assignment\.strategy, heartbeat\.interval\.ms"):
        ConsumerConfig.from_dict(
            {
                "group.protocol": "consumer",
                "heartbeat.interval.ms": 1_000,
                "partition.assignment.strategy": "range",
            }
        )
    ConsumerConfig.from_dict({"group.id": "g", "group.protocol": "classic", key: value})  # classic: fine


def test_classic_protocol_refuses_a_remote_assignor() -> None:
    """CLASSIC_PROTOCOL_UNSUPPORTED_CONFIGS; an empty value is not 'set'."""
    with pytest.raises(
        ConfigError, match=r"^group\.remote\.assignor cannot be set when group\.protocol=CLASSIC$"
    ):
        ConsumerConfig.from_dict({"group.id": "g", "group.remote.assignor": "uniform"})
    assert (
        ConsumerConfig.from_dict({"group.id": "g", "group.remote.assignor": ""}).group_remote_assignor == ""
    )


def test_unknown_group_protocol_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"group\.protocol must be one of classic, consumer"):
        ConsumerConfig.from_dict({"group.protocol": "streams"})
