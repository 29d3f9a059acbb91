"""The console's pages rendered from values, without a broker: a consumer-protocol (KIP-848)
group's epochs and target assignment get their columns, a classic group's page has none, and a
client's text in any field stays text (parsed back with the standard library's HTML parser: no
element but the page's own)."""

from __future__ import annotations

from html.parser import HTMLParser

from groupcoord.console import pages
from groupcoord.console.views import (
    EventView,
    GroupDetail,
    GroupSummary,
    LagPoint,
    MemberView,
    Move,
    Overview,
    PartitionLag,
    RebalanceView,
)

EVIL = "<img src=x onerror=alert(1)>"


def detail(*, consumer: bool, name: str = "g") -> GroupDetail:
    rebalance = RebalanceView(
        started_ms=1_000,
        cause="new_member_joined",
        member_id=EVIL,
        client_id=EVIL,
        instance_id=EVIL,
        client_host=EVIL,
        client_reason=EVIL,
        generation_before=1,
        members_before=1,
        restarts=(),
        ended_ms=1_500,
        outcome="Stable",
        generation_after=2,
        members_after=2,
        moved=(Move(topic=EVIL, partition=0, before=EVIL, after="b"),),
    )
    member = MemberView(
        member_id=EVIL,
        client_id=EVIL,
        client_host=EVIL,
        instance_id=EVIL,
        leader=True,
        assignment=((EVIL, 0),),
        assignment_bytes=20,
        member_epoch=7 if consumer else None,
        target_assignment=((EVIL, 0), (EVIL, 1)) if consumer else None,
    )
    return GroupDetail(
        now_ms=2_000,
        summary=GroupSummary(
            group_id=name,
            group_type="consumer" if consumer else "classic",
            protocol_type=EVIL,
            protocol_name=EVIL,
            state="Stable",
            generation=2,
            members=1,
            lag=5,
            time_lag_ms=1_000.0,
            last_rebalance=rebalance,
        ),
        leader=EVIL,
        members=(member,),
        pending_members=0,
        partitions=(
            PartitionLag(
                topic=EVIL,
                partition=0,
                committed=1,
                log_end=6,
                lag=5,
                time_lag_ms=1_000.0,
                owner=EVIL,
                owner_client=EVIL,
            ),
        ),
        rebalances=(rebalance,),
        events=(
            EventView(
                time_ms=1_000,
                type="member_added",
                reason="new_member_joined",
                from_state=None,
                to_state=None,
                generation=1,
                member_id=EVIL,
                client_id=EVIL,
                instance_id=EVIL,
                client_host=EVIL,
                client_reason=EVIL,
                member_count=2,
            ),
        ),
        lag_history=(
            LagPoint(time_ms=1_000, lag=3, time_lag_ms=10.0),
            LagPoint(time_ms=2_000, lag=5, time_lag_ms=1_000.0),
        ),
        group_epoch=9 if consumer else None,
        assignment_epoch=8 if consumer else None,
    )


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.handlers: list[tuple[str, str]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.handlers += [(tag, k) for k, _ in attrs if k.startswith("on")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    return tags


def test_a_consumer_groups_page_shows_epochs_and_target_assignment() -> None:
    page = pages.group_page(detail(consumer=True))
    assert "<th>Member epoch</th><th>Target assignment</th>" in page
    assert "<b>9</b>Group epoch" in page and "<b>8</b>Assignment epoch" in page
    assert "<td data-v='7' class='num'>7</td>" in page


def test_a_classic_groups_page_has_no_epoch_columns() -> None:
    page = pages.group_page(detail(consumer=False))
    assert "Member epoch" not in page and "Group epoch" not in page and "Target assignment" not in page


def test_every_client_value_stays_text_on_every_page() -> None:
    d = detail(consumer=True, name=EVIL)
    for page in (
        pages.group_page(d),
        pages.overview_page(_overview(d), node_id=0, since="0a1b2c3d.0"),
        pages.no_such_group_page(EVIL),
        "".join(html for _, html in pages.gone_sections(EVIL)),
    ):
        parsed = parse(page)
        assert "img" not in parsed.tags and parsed.handlers == []
        assert any(EVIL in t for t in parsed.text)


def _overview(d: GroupDetail) -> Overview:
    return Overview(now_ms=d.now_ms, groups=(d.summary,), topics=())
