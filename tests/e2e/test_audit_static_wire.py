"""Issue 11 audit, seen on the wire: a replaced static member keeps its client id, across a restart.

Raw-socket requests (the small client of ``test_groups_wire.py``) against a real broker process.
"""

from __future__ import annotations

from collections.abc import Callable

from conftest import BrokerProcess
from test_groups_wire import OFFSET_DELETE, SETTINGS, Wire, assignment_for, code, describe, join, sync

from groupcoord.errors import ErrorCode


def test_replaced_static_member_keeps_its_client_id_in_describe_groups_across_a_restart(
    broker_factory: Callable[..., BrokerProcess],
) -> None:
    """``ClassicGroup.java`` ``replaceStaticMember``: the new member is built from the removed
    one's ``clientId()`` and ``clientHost()``, and that member is what the group record persists.
    Also Kafka's ``isValidGroupId``: OffsetDelete with group id "" is INVALID_GROUP_ID."""
    b = broker_factory(*SETTINGS)
    group = "g-audit-static"
    first, second = Wire(b.port, "first-process"), Wire(b.port, "second-process")
    try:
        j = join(first, group, instance_id="inst-1")
        assert code(j.error_code) is ErrorCode.NONE
        s = sync(first, group, 1, j.member_id, {j.member_id: assignment_for(0, 1, 2)}, instance_id="inst-1")
        assert code(s.error_code) is ErrorCode.NONE
        again = join(second, group, instance_id="inst-1")
        assert code(again.error_code) is ErrorCode.NONE and again.member_id != j.member_id
        g = describe(second, group)
        assert [(m.member_id, m.group_instance_id, m.client_id) for m in g.members] == [
            (again.member_id, "inst-1", "first-process")
        ]
        r = second.call(OFFSET_DELETE, 0, group_id="", topics=[])
        assert code(r.error_code) is ErrorCode.INVALID_GROUP_ID
    finally:
        first.close()
        second.close()
    b.restart()
    after = Wire(b.port, "admin")
    try:
        g = describe(after, group)
        assert (g.group_state, [(m.member_id, m.client_id) for m in g.members]) == (
            "Stable",
            [(again.member_id, "first-process")],
        )
    finally:
        after.close()
