"""A KIP-848 consumer group on the live console, in headless Chromium: real confluent-kafka
consumers with ``group.protocol=consumer`` (as ``tests/e2e/test_consumer_protocol_confluent.py``
configures them) against the in-process broker.

The values the pages must show are not guessed: they are read over the wire with
ConsumerGroupDescribe (API 69, the request Kafka's ``kafka-consumer-groups --describe`` sends for
a consumer group: group epoch, assignment epoch, assignor, and per member its epoch, assignment and
target assignment; Kafka 4.1 ``ConsumerGroup.asDescribedGroup``), and the page is compared with a
describe taken at the same time, until both agree. Two members subscribed to a 4-partition topic
each own 2 partitions once reconciled (the uniform assignor spreads partitions evenly: Kafka's
``UniformHomogeneousAssignmentBuilder``), with nothing pending revocation, and the group is Stable
(``ConsumerGroup.maybeUpdateGroupState``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from chromium_cdp import Chromium, Page
from confluent_kafka import Consumer, Producer, TopicPartition
from console_helpers import PolledConsumer, table_rows, wait_until
from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest

from groupcoord.protocol.client import WireClient
from groupcoord.protocol.registry import load_messages
from groupcoord.testing import Broker

pytestmark = pytest.mark.timeout(300)

TOPIC = "kip848-orders"
PARTITIONS = 4
RECORDS = 5
COMMITTED = 2
GROUP = "kip848-group"
#: members learn of reconciliation steps on their next heartbeat: 500 ms keeps the test short
SETTINGS = {
    "console.listen": "127.0.0.1:0",
    "group.initial.rebalance.delay.ms": 0,
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
}


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker(SETTINGS) as b:
        b.create_topic(TOPIC, PARTITIONS)
        producer = Producer({"bootstrap.servers": b.bootstrap})
        for partition in range(PARTITIONS):
            for i in range(RECORDS):
                producer.produce(TOPIC, f"r{i}".encode(), partition=partition)
        assert producer.flush(30) == 0
        yield b


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    with Chromium() as chromium:
        yield chromium


def describe(broker: Broker, *, found: bool = True) -> Any:
    """ConsumerGroupDescribe v1 of the group, over the wire (with ``found`` False: None while
    the group does not exist yet)."""
    host, port = broker.bootstrap.rsplit(":", 1)
    with WireClient(host, int(port)) as c:
        response = c.call_entity(
            load_messages(69, 1),
            ConsumerGroupDescribeRequest(group_ids=(GROUP,), include_authorized_operations=False),
        )
    (described,) = response.groups
    if not found and described.error_code == 69:  # GROUP_ID_NOT_FOUND
        return None
    assert described.error_code == 0, described
    return described


def shown(assignment: Any) -> str:
    """An assignment of the describe response as the console writes it: ``topic: 0, 1``."""
    return "; ".join(
        f"{t.topic_name}: {', '.join(str(p) for p in sorted(t.partitions))}"
        for t in sorted(assignment.topic_partitions, key=lambda t: t.topic_name)
    )


def partitions_of(assignment: Any) -> list[tuple[str, int]]:
    return sorted((t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions)


@pytest.fixture(scope="module")
def members(broker: Broker) -> Iterator[dict[str, PolledConsumer]]:
    """Two consumer-protocol members, reconciled to 2 partitions each, each having committed
    offset COMMITTED on the partitions it owns (so the group lags by RECORDS - COMMITTED on each)."""
    consumers = {
        name: PolledConsumer(broker.bootstrap, GROUP, name, [TOPIC], consumer_protocol=True)
        for name in ("cg-a", "cg-b")
    }
    try:

        def reconciled() -> Any:
            d = describe(broker, found=False)
            if d is None or d.group_state != "Stable" or len(d.members) != 2:
                return None
            for m in d.members:
                if len(partitions_of(m.assignment)) != 2 or shown(m.assignment) != shown(m.target_assignment):
                    return None
            return d

        described = wait_until(reconciled, what="two members owning 2 partitions each, Stable")
        for m in described.members:
            consumers[m.client_id].commit((t, p, COMMITTED) for t, p in partitions_of(m.assignment))
        # each commit is sent from the consumer's own thread; wait for all four to be visible
        wait_until(lambda: _total_lag(broker) == PARTITIONS * (RECORDS - COMMITTED), what="the commits")
        yield consumers
    finally:
        for c in consumers.values():
            c.leave()


def _total_lag(broker: Broker) -> int | None:
    reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP})
    try:
        got = reader.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30)
    finally:
        reader.close()
    if any(tp.offset < 0 for tp in got):
        return None
    return sum(RECORDS - tp.offset for tp in got)


def live(page: Page) -> None:
    page.wait_for("document.getElementById('status').textContent==='live'")


def test_overview_shows_the_consumer_group_with_type_consumer(
    broker: Broker, members: dict[str, PolledConsumer], browser: Chromium
) -> None:
    """The overview's row: type ``consumer``, protocol ``consumer · <assignor>`` (the assignor
    ConsumerGroupDescribe names), state Stable, 2 members, lag 4 x (5 - 2) = 12 records."""
    page = browser.page()
    try:
        url = broker.console_url
        assert url is not None
        page.goto(url)
        live(page)
        assignor = describe(broker).assignor_name
        assert assignor == "uniform"  # Kafka's default group.consumer.assignors is [uniform, range]
        row = wait_until(
            lambda: next((r for r in table_rows(page, "groups-table") or [] if r[0] == GROUP), None),
            what="the group's row",
        )
        _group, kind, protocol, state, count, lag = row[:6]
        assert (kind, protocol, state, count, lag) == (
            "consumer",
            f"consumer · {assignor}",
            "Stable",
            "2",
            "12",
        )
        # the consumer group's committed offsets are not listed a second time as a classic group
        assert [r[0] for r in table_rows(page, "groups-table") or []].count(GROUP) == 1
        assert page.problems() == []
    finally:
        page.close()


def test_group_page_shows_the_epochs_and_each_members_assignment_and_target(
    broker: Broker, members: dict[str, PolledConsumer], browser: Chromium
) -> None:
    """The group page against ConsumerGroupDescribe: the group epoch and assignment epoch in
    its facts; per member its member epoch, the assignment it owns (2 partitions), its target
    (the same, reconciled) and nothing pending revocation; each partition's owner and lag."""
    page = browser.page()
    try:
        url = broker.console_url
        assert url is not None
        page.goto(url + "groups/" + GROUP)
        live(page)

        def agrees() -> tuple[Any, list[list[str]]] | None:
            d = describe(broker)
            facts = page.eval("document.getElementById('facts').textContent") or ""
            rows = table_rows(page, "members-table") or []
            if (
                f"{d.group_epoch}Group epoch" not in facts
                or f"{d.assignment_epoch}Assignment epoch" not in facts
            ):
                return None
            expected = sorted(
                [
                    m.member_id,
                    m.client_id,
                    str(m.member_epoch),
                    shown(m.assignment),
                    shown(m.target_assignment),
                    "",
                ]
                for m in d.members
            )
            got = sorted([r[0], r[1], r[6], r[5], r[7], r[8]] for r in rows if len(r) == 9)
            return (d, rows) if got == expected else None

        described, rows = wait_until(agrees, what="the page to show what ConsumerGroupDescribe says")
        assert described.group_epoch >= 1 and described.assignment_epoch == described.group_epoch
        facts = page.eval("document.getElementById('facts').textContent")
        assert "consumerType" in facts and "StableState" in facts and "12Lag (records)" in facts
        owned = sorted(p for m in described.members for p in partitions_of(m.assignment))
        assert owned == [(TOPIC, p) for p in range(PARTITIONS)]
        for r in rows:
            assert r[2] == "/127.0.0.1" and r[3] == "" and r[4] == ""  # host; no instance id, no leader
        owner_of = {tp: m.member_id for m in described.members for tp in partitions_of(m.assignment)}
        parts = table_rows(page, "partitions-table")
        assert parts is not None
        assert [p[:5] for p in parts] == [
            [TOPIC, str(p), str(COMMITTED), str(RECORDS), str(RECORDS - COMMITTED)] for p in range(PARTITIONS)
        ]
        assert [p[6] for p in parts] == [owner_of[TOPIC, p] for p in range(PARTITIONS)]
        assert page.problems() == []
    finally:
        page.close()


def test_a_member_leaving_shows_on_the_open_page_with_the_new_epochs(
    broker: Broker, members: dict[str, PolledConsumer], browser: Chromium
) -> None:
    """With the page open, one member leaves (its heartbeat with epoch -1, KIP-848's leave):
    the group epoch moves on and the remaining member's epoch and its 4 partitions appear
    without a reload, as ConsumerGroupDescribe then reports them."""
    page = browser.page()
    try:
        url = broker.console_url
        assert url is not None
        page.goto(url + "groups/" + GROUP)
        live(page)
        before = describe(broker).group_epoch
        page.eval("window.__sameDocument = 1")
        members.pop("cg-b").leave()

        def updated() -> tuple[Any, list[str]] | None:
            d = describe(broker)
            if d.group_state != "Stable" or len(d.members) != 1 or d.group_epoch <= before:
                return None
            (m,) = d.members
            rows = table_rows(page, "members-table") or []
            facts = page.eval("document.getElementById('facts').textContent") or ""
            if len(rows) != 1 or f"{d.group_epoch}Group epoch" not in facts:
                return None
            return (d, rows[0]) if rows[0][6] == str(m.member_epoch) else None

        described, row = wait_until(updated, what="the leave on the open page")
        (m,) = described.members
        assert row[1] == "cg-a" and row[5] == row[7] == f"{TOPIC}: 0, 1, 2, 3" == shown(m.assignment)

        # The leave's epoch bump is on the rebalance timeline (newest first in the table): caused by
        # cg-b's leave, from the epoch before to the one ConsumerGroupDescribe reports, over once
        # cg-a has reconciled (Stable), the two partitions cg-b held moved to cg-a, and nobody
        # stood still (Kafka's consumer group protocol: GroupMetadataManager bumps the epoch on a
        # leave, CurrentAssignmentBuilder hands the freed partitions over without revocations).
        def on_timeline() -> list[list[str]] | None:
            rows = table_rows(page, "rebalances-table") or []
            return rows if rows and rows[0][-1] == "Stable" and rows[0][1] == "member_left" else None

        rebalances = wait_until(on_timeline, what="the leave's epoch bump on the rebalance timeline")
        newest = rebalances[0]
        assert newest[3] == "cg-b"
        assert newest[5].startswith("none (reconciled in ")
        assert newest[6] == "2 → 1"
        assert newest[7] == f"{described.group_epoch - 1} → {described.group_epoch}"
        assert newest[8].startswith("2")
        # the two joins before it: the first member's (the group's creation) and the second's
        assert [r[1] for r in rebalances[1:]] == ["new_member_joined", "group_created"]
        assert sorted(r[3] for r in rebalances[1:]) == ["cg-a", "cg-b"]
        assert all(r[5].startswith("none (") and r[9] == "Stable" for r in rebalances)
        bars = page.eval(
            "Array.prototype.map.call(document.querySelectorAll('#rebalances svg rect title'),"
            " t => t.textContent)"
        )
        assert [b.split(":")[0] for b in bars] == ["group_created", "new_member_joined", "member_left"]
        assert all("nobody stopped; reconciled in" in b for b in bars)
        text = page.eval("document.getElementById('rebalances').textContent") or ""
        assert "3 epoch bumps kept (consumer group protocol, KIP-848)" in text
        assert page.eval("window.__sameDocument") == 1
        assert page.problems() == []
    finally:
        page.close()
