"""What ``Broker`` offers a test (time control, faults, observation) works on a ``Cluster``
across its nodes: on a group whose coordinator is not node 0 (where the kit's own wire calls
start), in-process and in a subprocess.

The group protocol steps are Kafka's classic ones (``GroupMetadataManagerTest``: a member joins
a new group, the initial rebalance delay ends, the leader syncs, the session expires without
heartbeats and the group is left Empty).
"""

from __future__ import annotations

import pytest

from groupcoord.errors import ErrorCode
from groupcoord.protocol.api_keys import ApiKey as K
from groupcoord.protocol.client import WireClient
from groupcoord.testing import Cluster


@pytest.mark.parametrize("subprocess", [False, True], ids=["in-process", "subprocess"])
def test_time_faults_and_observation_act_on_the_node_that_coordinates(subprocess: bool) -> None:
    group = "kit-across"
    # a subprocess broker's clock is the wall clock plus what advance() added: waits long on the
    # wall clock (a 60 s initial delay, a 60 s session) end only by advance()
    settings = {"group.initial.rebalance.delay.ms": 60_000}
    with Cluster(settings, brokers=3, subprocess=subprocess) as cluster:
        cluster.move_coordinator(group, 2)
        assert cluster.coordinator_of(group) == 2
        host, port = cluster.address_of(2).split(":")
        with WireClient(host, int(port)) as c:
            c.send(
                K.JOIN_GROUP,
                3,
                group_id=group,
                session_timeout=60_000,
                rebalance_timeout=120_000,
                member_id="",
                protocol_type="consumer",
                protocols=[{"name": "range", "metadata": b""}],
            )
            cluster.wait_for_group(group, state="PreparingRebalance", members=1)
            assert not c.readable(0.2)  # parked for the initial rebalance delay (broker clock)
            cluster.advance(60)  # time control: node 2's shard completes the join
            join = c.recv()
            assert int(join.error_code) == 0 and int(join.generation_id) == 1
            member = join.member_id
            sync = c.call(
                K.SYNC_GROUP,
                3,
                group_id=group,
                generation_id=1,
                member_id=member,
                group_instance_id=None,
                assignments=[{"member_id": member, "assignment": b""}],
            )
            assert int(sync.error_code) == 0
            view = cluster.describe_group(group)  # observation: asked of node 2 via FindCoordinator
            assert (view.state, view.generation, [m.member_id for m in view.members]) == (
                "Stable",
                1,
                [member],
            )

            def heartbeat() -> int:
                r = c.call(
                    K.HEARTBEAT, 3, group_id=group, generation_id=1, member_id=member, group_instance_id=None
                )
                return int(r.error_code)

            cluster.fail_next("Heartbeat", "REBALANCE_IN_PROGRESS", group=group)  # a fault on node 2
            assert heartbeat() == int(ErrorCode.REBALANCE_IN_PROGRESS)
            assert heartbeat() == 0
            cluster.advance(60.001)  # the session runs out on node 2's timers
            assert cluster.wait_for_group(group, state="Empty", members=0).generation == 2
            assert heartbeat() == int(ErrorCode.UNKNOWN_MEMBER_ID)
            assert cluster.disconnect() >= 1  # severs connections to every node, node 2's too
            with pytest.raises((ConnectionError, OSError)):
                heartbeat()
        events = cluster.events(group)  # read from the leader of its __group_events partition
        assert [e.to_state for e in events if e.to_state is not None][-1] == "Empty"
        assert any(e.member_id == member for e in events)
