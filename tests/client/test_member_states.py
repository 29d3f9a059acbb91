"""The member state machine's table, and its generated page."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from groupcoord.client.states import (
    STATE_ORDER,
    TRANSITIONS,
    IllegalMemberTransition,
    MemberState,
    check_transition,
    has_not_joined_group,
    heartbeats_enabled_in,
    rebalance_in_progress,
)

ROOT = Path(__file__).resolve().parents[2]
U, P, C, S = STATE_ORDER


def test_states_are_the_seeds_four() -> None:
    assert [s.value for s in MemberState] == [
        "UNJOINED",
        "PREPARING_REBALANCE",
        "COMPLETING_REBALANCE",
        "STABLE",
    ]


def test_helpers_match_java_member_state() -> None:
    """MemberState.hasNotJoinedGroup and AbstractCoordinator.rebalanceInProgress."""
    assert [has_not_joined_group(s) for s in STATE_ORDER] == [True, True, False, False]
    assert [rebalance_in_progress(s) for s in STATE_ORDER] == [False, True, True, False]
    assert [heartbeats_enabled_in(s) for s in STATE_ORDER] == [False, False, True, True]


@pytest.mark.parametrize("source", STATE_ORDER)
@pytest.mark.parametrize("target", STATE_ORDER)
def test_only_listed_transitions_are_allowed(source: MemberState, target: MemberState) -> None:
    if (source, target) in TRANSITIONS:
        check_transition(source, target)
    else:
        with pytest.raises(IllegalMemberTransition):
            check_transition(source, target)


def test_no_shortcut_to_stable() -> None:
    # STABLE only after the SyncGroup response, i.e. from COMPLETING_REBALANCE
    assert {s for (s, t) in TRANSITIONS if t is S} == {C}
    assert {s for (s, t) in TRANSITIONS if t is C} == {P}


def test_generated_page_is_current_and_the_check_catches_drift(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "gen_client_state_machine.py"
    page = ROOT / "docs" / "client-state-machine.md"
    ok = subprocess.run([sys.executable, str(script), "--check", str(page)], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    stale = tmp_path / "stale.md"
    stale.write_text(
        page.read_text(encoding="utf-8").replace("| Heartbeat | ILLEGAL_GENERATION |", "| Heartbeat | X |")
    )
    bad = subprocess.run([sys.executable, str(script), "--check", str(stale)], capture_output=True, text=True)
    assert bad.returncode == 1 and "out of date" in bad.stderr
