"""The generic member (AbstractCoordinator) with a custom protocol type, as Kafka Connect uses
the group protocol: the leader sees every member's metadata and hands out opaque assignments."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from member_world import GROUP, World

from groupcoord.client import messages as m
from groupcoord.client.config import RebalanceConfig
from groupcoord.client.member import AbstractCoordinator
from groupcoord.client.states import MemberState


class Worker(AbstractCoordinator):
    def __init__(self, name: str) -> None:
        super().__init__(
            RebalanceConfig(
                group_id=GROUP,
                session_timeout_ms=1000,
                heartbeat_interval_ms=300,
                rebalance_timeout_ms=3000,
                retry_backoff_ms=50,
                retry_backoff_max_ms=400,
            )
        )
        self.name = name
        self.plan: bytes | None = None
        self.led: list[dict[str, bytes]] = []

    def protocol_type(self) -> str:
        return "workers"

    def metadata(self) -> Sequence[tuple[str, bytes]]:
        return (("v1", f"url={self.name}".encode()),)

    def perform_assignment(
        self,
        leader_id: str,
        protocol: str,
        members: Sequence[m.JoinGroupResponseMember],
        skip: bool,
        now_ms: int,
    ) -> Mapping[str, bytes]:
        seen = {x.member_id: x.metadata for x in members}
        self.led.append(seen)
        urls = sorted(v.decode() for v in seen.values())
        return {mid: f"leader={self.name};all={','.join(urls)}".encode() for mid in seen}

    def on_join_complete(
        self, generation_id: int, member_id: str, protocol: str | None, assignment: bytes, now_ms: int
    ) -> None:
        self.plan = assignment


def test_custom_protocol_type_members_elect_a_leader_and_share_its_plan() -> None:
    """Any protocol type works: JoinGroup carries "workers", the leader assigns from every
    member's metadata, every member gets the leader's plan; a leader that leaves is replaced."""
    w = World({})
    a, b, c = Worker("a"), Worker("b"), Worker("c")
    for x in (a, b, c):
        w.add_core(x.name, x)
    w.run(1000)
    assert all(x.state is MemberState.STABLE for x in (a, b, c))
    leader = next(x for x in (a, b, c) if x.led)
    assert {x.plan for x in (a, b, c)} == {f"leader={leader.name};all=url=a,url=b,url=c".encode()}
    join = w.members["a"].sent_of(m.JoinGroupRequest)[-1].request
    assert join.protocol_type == "workers" and join.protocols == (("v1", b"url=a"),)
    assert w.coordinator.group(GROUP).protocol_type == "workers"  # type: ignore[union-attr]
    leader.close_member(w.now())  # leaves: LeaveGroup, the others rebalance at once
    w.run(500)
    assert len(w.members[leader.name].sent_of(m.LeaveGroupRequest)) == 1
    assert leader.state is MemberState.UNJOINED
    rest = [x for x in (a, b, c) if x is not leader]
    assert all(x.state is MemberState.STABLE for x in rest)
    new_leader = next(x for x in rest if x.led)
    assert {x.plan for x in rest} == {
        f"leader={new_leader.name};all={','.join(sorted('url=' + x.name for x in rest))}".encode()
    }
