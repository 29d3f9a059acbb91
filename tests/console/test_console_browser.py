"""The live console (``console.listen``) in a real browser: Debian's headless Chromium, driven over
the DevTools protocol (``chromium_cdp.py``), against an in-process broker and real
confluent-kafka consumers.

What is checked is what the page shows once its scripts ran (the text of its tables), and that it
logged nothing: no script error, no Content-Security-Policy violation, no dialog (``alert``).
Live updates are checked by changing the group while the page stays open (a marker set on the
page's ``window`` survives, so no reload happened) and waiting, with a generous limit, for the
change to be shown.

Rebalance causes are the coordinator's reasons (``docs/group-events.md``): a member joining a
Stable group rebalances it with ``new_member_joined`` (Kafka's ``addMemberAndRebalance``), a
LeaveGroup with ``member_left`` (``removeMemberAndUpdateGroup``).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest
from chromium_cdp import Chromium, Page
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as CTopicPartition
from console_helpers import PolledConsumer, commit_simple, table_rows, wait_until

from groupcoord.testing import Broker

pytestmark = pytest.mark.timeout(300)

TOPIC = "orders"
#: the records' CreateTime: an hour before the test, so time lag reads "1 h ..."
HOUR_AGO_MS = int(time.time() * 1000) - 3_600_000
HOSTILE = ("<script>alert(1)</script>", '"><img src=x onerror=alert(2)>', "'><svg onload=alert(3)>")


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker({"console.listen": "127.0.0.1:0"}) as b:
        b.create_topic(TOPIC, 2)
        producer = Producer({"bootstrap.servers": b.bootstrap})
        for partition in (0, 1):
            for i in range(10):
                producer.produce(TOPIC, f"r{i}".encode(), partition=partition, timestamp=HOUR_AGO_MS)
        assert producer.flush(30) == 0
        yield b


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    with Chromium() as chromium:
        yield chromium


@pytest.fixture
def page(browser: Chromium) -> Iterator[Page]:
    tab = browser.page()
    yield tab
    tab.close()


def console(broker: Broker) -> str:
    url = broker.console_url
    assert url is not None
    return url


def group_url(broker: Broker, group: str) -> str:
    return console(broker) + "groups/" + urllib.parse.quote(group, safe="")


#: JavaScript: the full member ids of the rebalance table's "Triggered by" cells
TRIGGER_IDS = (
    "Array.prototype.map.call(document.querySelectorAll('#rebalances-table tbody td:nth-child(3) span'),"
    "function(s){return s.title})"
)


def live(page: Page) -> None:
    page.wait_for("document.getElementById('status').textContent==='live'")


def row_of(rows: list[list[str]] | None, first: str) -> list[str] | None:
    return next((r for r in rows or [] if r[0] == first), None)


# ------------------------------------------------------------------------------ overview
@pytest.fixture(scope="module")
def billing(broker: Broker) -> Iterator[PolledConsumer]:
    """Group ``billing``: one consumer ``c1`` owning both partitions, committed at 3 and 8."""
    c1 = PolledConsumer(broker.bootstrap, "billing", "c1", [TOPIC])
    assert c1.assigned.wait(60)
    c1.commit([(TOPIC, 0, 3), (TOPIC, 1, 8)])
    wait_until(lambda: _committed(broker, "billing") == {0: 3, 1: 8}, what="billing's commits")
    yield c1
    c1.leave()


def _committed(broker: Broker, group: str) -> dict[int, int]:
    probe = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        got = probe.committed([CTopicPartition(TOPIC, 0), CTopicPartition(TOPIC, 1)], timeout=30)
        return {tp.partition: tp.offset for tp in got if tp.offset >= 0}
    finally:
        probe.close()


def test_overview_lists_groups_with_type_state_members_and_lag(
    broker: Broker, billing: PolledConsumer, page: Page
) -> None:
    page.goto(console(broker))
    live(page)
    row = row_of(table_rows(page, "groups-table"), "billing")
    assert row is not None
    _group, kind, protocol, state, members, lag, time_lag, last, cause, stood = row
    assert (kind, protocol, state, members, lag) == ("classic", "consumer · range", "Stable", "1", "9")
    assert time_lag.startswith("1 h ")  # the first unconsumed record was written an hour ago
    assert cause == "new_member_joined" and last and stood
    topics = table_rows(page, "topics-table")
    orders = row_of(topics, TOPIC)
    assert orders is not None and orders[1:4] == ["no", "2", "20"]
    assert orders[5] == "0: 0-10, 1: 0-10"
    assert page.problems() == []


def test_group_page_shows_members_partitions_and_lag(
    broker: Broker, billing: PolledConsumer, page: Page
) -> None:
    page.goto(group_url(broker, "billing"))
    live(page)
    members = table_rows(page, "members-table")
    assert members is not None and len(members) == 1
    member_id, client_id, host, instance, leader, assignment = members[0]
    assert member_id.startswith("c1-") and client_id == "c1" and host == "/127.0.0.1"
    assert (instance, leader, assignment) == ("", "leader", "orders: 0, 1")
    parts = table_rows(page, "partitions-table")
    assert parts is not None
    assert [p[:5] for p in parts] == [[TOPIC, "0", "3", "10", "7"], [TOPIC, "1", "8", "10", "2"]]
    assert all(p[5].startswith("1 h ") and p[6] == member_id and p[7] == "c1" for p in parts)
    facts = page.eval("document.getElementById('facts').textContent")
    assert "9Lag (records)" in facts and "StableState" in facts
    # the lag charts are drawn from the samples taken while the page is open
    page.wait_for("document.querySelectorAll('#lag svg').length===2")
    assert page.problems() == []


# ------------------------------------------------------------------------------ live
def test_a_join_and_a_leave_appear_on_the_open_pages_with_their_causes(
    broker: Broker, browser: Chromium
) -> None:
    group = "live-group"
    c1 = PolledConsumer(broker.bootstrap, group, "first-consumer", [TOPIC])
    c2: PolledConsumer | None = None
    try:
        assert c1.assigned.wait(60)
        tab = browser.page()
        overview = browser.page()
        tab.goto(group_url(broker, group))
        overview.goto(console(broker))
        live(tab)
        live(overview)
        tab.eval("window.__sameDocument = 1")
        overview.eval("window.__sameDocument = 1")
        # a new group appears on the open overview
        late = PolledConsumer(broker.bootstrap, "late-group", "late", [TOPIC])
        try:
            row = wait_until(
                lambda: (
                    (r := row_of(table_rows(overview, "groups-table"), "late-group"))
                    and r[3] == "Stable"
                    and r
                ),
                what="late-group's row, Stable",
            )
            assert row[4] == "1"
        finally:
            late.leave()

        c2 = PolledConsumer(broker.bootstrap, group, "second-consumer", [TOPIC])

        def joined() -> list[str] | None:
            members = table_rows(tab, "members-table") or []
            rebalances = table_rows(tab, "rebalances-table") or []
            if sorted(m[1] for m in members) != ["first-consumer", "second-consumer"]:
                return None
            return next(
                (r for r in rebalances if r[1] == "new_member_joined" and r[3] == "second-consumer"), None
            )

        rebalance = wait_until(joined, what="the second consumer's join on the group page")
        member, count = rebalance[2], rebalance[6]
        assert member.startswith("second-consumer-") and count.startswith("1 → ")
        # the trigger, shortened in the cell, is the joining member's id in full in its tooltip
        members = table_rows(tab, "members-table") or []
        second_id = next(m[0] for m in members if m[1] == "second-consumer")
        assert second_id in tab.eval(TRIGGER_IDS)
        wait_until(
            lambda: (
                (rows := table_rows(tab, "rebalances-table"))
                and rows[0][3] == "second-consumer"
                and rows[0][9] == "Stable"
            ),
            what="the join's rebalance ended Stable",
        )
        rows = table_rows(tab, "rebalances-table")
        assert rows is not None and rows[0][6] == "1 → 2"
        assert "orders-" in rows[0][8]  # one partition moved from the first consumer to the second

        c1.leave()

        def left() -> list[str] | None:
            members = table_rows(tab, "members-table") or []
            rebalances = table_rows(tab, "rebalances-table") or []
            if [m[1] for m in members] != ["second-consumer"]:
                return None
            return next((r for r in rebalances if r[1] == "member_left" and r[3] == "first-consumer"), None)

        rebalance = wait_until(left, what="the first consumer's leave on the group page")
        assert rebalance[2].startswith("first-consumer-")
        events = table_rows(tab, "events-table") or []
        assert any(
            e[1] == "member_removed" and e[2] == "member_left" and e[5] == "first-consumer" for e in events
        )
        assert any(
            e[1] == "member_added" and e[2] == "new_member_joined" and e[5] == "second-consumer"
            for e in events
        )
        # no reload happened: the marker set before the changes is still there
        assert tab.eval("window.__sameDocument") == 1
        assert overview.eval("window.__sameDocument") == 1
        assert int(tab.eval("document.body.getAttribute('data-updates')")) > 0
        assert tab.problems() == [] and overview.problems() == []
    finally:
        if c2 is not None:
            c2.leave()
        if c1.thread.is_alive():
            c1.leave()


# ------------------------------------------------------------------------------ hostile names
def test_hostile_group_and_client_names_render_as_text(broker: Broker, page: Page) -> None:
    commit_simple(broker.bootstrap, list(HOSTILE), TOPIC, 0, 1)
    member = PolledConsumer(broker.bootstrap, HOSTILE[1], "<img src=y onerror=alert(4)>", [TOPIC])
    try:
        assert member.assigned.wait(60)
        page.goto(console(broker))
        live(page)
        rows = table_rows(page, "groups-table")
        for name in HOSTILE:
            assert row_of(rows, name) is not None, name
        assert page.eval("document.querySelectorAll('img,#content svg,script:not([src])').length") == 0
        for name in HOSTILE:
            page.goto(group_url(broker, name))
            live(page)
            assert page.eval("document.getElementById('title').firstChild.textContent") == name + " "
            assert page.eval("document.title") == f"{name} · groupcoord console"
            assert page.eval("document.querySelectorAll('img,svg[onload],script:not([src])').length") == 0
        page.goto(group_url(broker, HOSTILE[1]))
        live(page)
        members = table_rows(page, "members-table")
        assert members is not None and members[0][1] == "<img src=y onerror=alert(4)>"
        assert page.eval("document.querySelectorAll('img').length") == 0
        assert page.problems() == []
    finally:
        member.leave()


def test_an_unknown_group_is_a_no_such_group_page(broker: Broker, page: Page) -> None:
    name = "<b>nobody</b>"
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(group_url(broker, name), timeout=30)
    assert answer.value.code == 404
    page.goto(group_url(broker, name))
    assert page.eval("document.querySelector('h1').textContent") == "No such group"
    assert page.eval("document.getElementById('missing').textContent") == name
    assert page.eval("document.querySelectorAll('#content b').length") == 1  # only the page's own
    # the browser logs the 404 of the page itself, and nothing else
    assert [p for p in page.problems() if "status of 404 (Not Found)" not in p] == []
    assert len(page.problems()) == 1


# ------------------------------------------------------------------------------ scale
def test_ten_thousand_groups_render_and_filter(page: Page) -> None:
    with Broker({"console.listen": "127.0.0.1:0"}) as big:
        big.create_topic("fleet-topic", 1)
        groups = [f"fleet-{i:05d}" for i in range(10_000)]
        commit_simple(big.bootstrap, groups, "fleet-topic", 0, 0)
        page.goto(console(big), timeout=120)
        live(page)
        assert page.eval("document.getElementById('groups-table').tBodies[0].rows.length") == 10_000
        assert page.eval("document.getElementById('cards').textContent").startswith("10,000groups")
        shown = page.eval(
            """(function(){var box=document.querySelector('#summary input.filter');box.value='fleet-0123';
            box.dispatchEvent(new Event('input'));
            var rows=document.getElementById('groups-table').tBodies[0].rows;
            return Array.prototype.filter.call(rows,function(r){return r.style.display!=='none'})
              .map(function(r){return r.cells[0].textContent})})()"""
        )
        assert shown == [f"fleet-{i:05d}" for i in range(1230, 1240)]
        states = page.eval(
            "Array.prototype.map.call(document.getElementById('groups-table').tBodies[0].rows,"
            "function(r){return r.cells[3].textContent}).filter(function(s){return s!=='Empty'}).length"
        )
        assert states == 0  # simple groups (offsets only) are Empty
        assert json.dumps(page.problems()) == "[]"
