"""How the consumers apply the member core's events to the fetcher (no broker needed).

The core reports a rebalance's new partitions (PartitionsAssigned, delivered to the
application's callbacks on its own thread inside poll) and, after its OffsetFetch, their
starting positions (StartingPositions). Both can be collected before the application's
thread delivers the first one (a synchronous commit or committed() inside poll's callbacks
pumps the network too); the positions must not be lost then.
"""

from __future__ import annotations

from groupcoord.client import events as ev
from groupcoord.client.config import ConsumerConfig
from groupcoord.client.engine import ConsumerEngine
from groupcoord.client.types import OffsetAndMetadata, TopicPartition

A = TopicPartition("t", 0)
B = TopicPartition("t", 1)


def engine() -> ConsumerEngine:
    e = ConsumerEngine(ConsumerConfig.from_dict({"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}))
    e.subscribe(["t"], None, None, None)
    return e


def test_starting_positions_collected_before_the_assignment_is_delivered_are_kept() -> None:
    e = engine()
    e.take_events(
        [
            ev.PartitionsAssigned(partitions=(A, B), generation_id=1),
            ev.StartingPositions(positions=((A, OffsetAndMetadata(offset=42)), (B, None))),
        ]
    )
    assert e.fetcher.assigned() == set()  # nothing applied before the application's thread delivers
    seen: list[list[TopicPartition]] = []
    e.callbacks.on_assign = seen.append
    calls = e.deliver()
    for callback, parts in calls:
        callback(parts)
    assert seen == [[A, B]]
    assert e.fetcher.position(A) == 42
    assert e.fetcher.awaiting() == []  # B resets by auto.offset.reset (nothing committed)


def test_revoked_then_lost_partitions_leave_the_fetcher_and_reach_their_callbacks_in_order() -> None:
    e = engine()
    e.take_events([ev.PartitionsAssigned(partitions=(A, B), generation_id=1)])
    e.deliver()
    order: list[tuple[str, list[TopicPartition]]] = []
    e.callbacks.on_revoke = lambda parts: order.append(("revoke", parts))
    e.callbacks.on_lost = lambda parts: order.append(("lost", parts))
    e.take_events([ev.PartitionsRevoked(partitions=(A,)), ev.PartitionsLost(partitions=(B,))])
    for callback, parts in e.deliver():
        callback(parts)
    assert order == [("revoke", [A]), ("lost", [B])]
    assert e.fetcher.assigned() == set()
