"""The console's HTML: whole pages for a first load, and the pieces the live stream replaces.

Drawn with the report's components (:mod:`groupcoord.ui.components`: badges, tables, the lag
charts and the rebalance timeline), so the live page and the after-the-fact report read the
same. Every value from a client (group, member, client and instance ids, hosts, topic names,
reasons) goes through :func:`~groupcoord.ui.components.esc`; the browser's script only moves
these pieces into place, and the server forbids inline scripts (``Content-Security-Policy``,
:mod:`groupcoord.console.server`) besides.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from groupcoord.console.views import (
    GroupDetail,
    GroupSummary,
    MemberView,
    Overview,
    Partitions,
    RebalanceView,
    TopicView,
)
from groupcoord.coordinator.events import EventReason
from groupcoord.ui.components import (
    Bar,
    Cell,
    badge,
    cause_colours,
    esc,
    human_count,
    human_duration,
    slug,
    svg_lines,
    svg_timeline,
    table,
    table_row,
)

#: One colour per cause, the same on every page (the order of the coordinator's reasons).
CAUSE_COLOURS = cause_colours([r.value for r in EventReason])
#: the states, in the order the overview counts them
STATES = ("Stable", "PreparingRebalance", "CompletingRebalance", "Empty", "Dead")
#: the states only consumer (KIP-848) groups have (the others they share)
CONSUMER_STATES = ("Assigning", "Reconciling")
#: rows of the overview's group table at most (a note says how many more)
MAX_GROUP_ROWS = 50_000
#: how far back the group page's lag charts and timeline reach
WINDOW_MS = 10 * 60_000

GROUP_HEADERS = (
    "Group",
    "Type",
    "Protocol",
    "State",
    "Members",
    "Lag (records)",
    "Lag (time)",
    "Last rebalance",
    "Cause",
    "Stood still",
)


def group_href(group_id: str) -> str:
    return "/groups/" + quote(group_id, safe="")


def row_id(group_id: str) -> str:
    return "row-" + slug(group_id)


def _page(title: str, header: str, body: str, *, attrs: str = "") -> str:
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{esc(title)}</title><link rel='stylesheet' href='/static/ui.css'></head>"
        f"<body{attrs}><header>{header}"
        "<p><span id='live' class='live' title='live updates'></span><span id='status'>"
        "connecting…</span> · <span id='zone'>Times are in UTC.</span></p></header>"
        f"<div id='content'>{body}</div>"
        "<script src='/static/ui.js'></script><script src='/static/console.js'></script></body></html>"
    )


def _cause(cause: str) -> str:
    return badge(cause, CAUSE_COLOURS.get(cause, "#777"))


def _stood_still(r: RebalanceView | None, now_ms: int) -> Cell:
    if r is None:
        return Cell("", "")
    ms = r.stood_still_ms(now_ms)
    if r.protocol == "consumer":
        # an epoch bump stops nobody: members reconcile one heartbeat at a time
        took = (
            f"reconciling, {human_duration(ms)} so far"
            if r.ended_ms is None
            else f"reconciled in {human_duration(ms)}"
        )
        return Cell(f"none ({esc(took)})", 0, num=True)
    if r.ended_ms is None:
        return Cell(f"{esc(human_duration(ms))} so far", ms, num=True)
    return Cell.duration(ms)


def _protocol(g: GroupSummary) -> str:
    return " · ".join(x for x in (g.protocol_type, g.protocol_name) if x)


# ------------------------------------------------------------------------------ overview
def group_row(g: GroupSummary, now_ms: int) -> str:
    r = g.last_rebalance
    return table_row(
        [
            Cell(f"<a href='{esc(group_href(g.group_id))}'>{esc(g.group_id)}</a>", g.group_id),
            Cell.text(g.group_type),
            Cell.text(_protocol(g)),
            Cell(badge(g.state), g.state),
            Cell.count(g.members),
            Cell.count(g.lag),
            Cell.duration(g.time_lag_ms),
            Cell.when(None if r is None else r.started_ms),
            Cell("" if r is None else _cause(r.cause), "" if r is None else r.cause),
            _stood_still(r, now_ms),
        ],
        row_id=row_id(g.group_id),
    )


def cards(groups: Sequence[GroupSummary]) -> str:
    counts = Counter(g.state for g in groups)
    lagging = sum(1 for g in groups if g.lag)
    out = ["<div class='cards' id='cards'>", f"<div class='card'><b>{len(groups):,}</b>groups</div>"]
    for state in STATES[:-1]:
        out.append(f"<div class='card'><b>{counts.get(state, 0):,}</b>{badge(state)}</div>")
    for state in CONSUMER_STATES:  # KIP-848 groups' own states, when there are any
        if counts.get(state):
            out.append(f"<div class='card'><b>{counts[state]:,}</b>{badge(state)}</div>")
    out.append(f"<div class='card'><b>{lagging:,}</b>groups with lag</div></div>")
    return "".join(out)


def topics_section(topics: Sequence[TopicView]) -> str:
    rows = []
    for t in topics:
        parts = t.partitions
        detail = ", ".join(f"{p.partition}: {p.log_start:,}-{p.log_end:,}" for p in parts[:64])
        if len(parts) > 64:
            detail += f", … ({len(parts) - 64} more)"
        rows.append(
            [
                Cell.text(t.name),
                Cell.text("yes" if t.internal else "no"),
                Cell.count(len(parts)),
                Cell.count(sum(p.log_end - p.log_start for p in parts)),
                Cell.count(sum(p.size_bytes for p in parts)),
                Cell(esc(detail), None, css="moves"),
            ]
        )
    return (
        "<section id='topics'><h2>Topics</h2>"
        + table(
            (
                "Topic",
                "Internal",
                "Partitions",
                "Records (end - start)",
                "Bytes",
                "Log start-end by partition",
            ),
            rows,
            filter_label="topics",
            table_id="topics-table",
        )
        + "</section>"
    )


def overview_page(ov: Overview, *, node_id: int, since: str) -> str:
    groups = ov.groups
    body = [
        "<section id='summary'><h2>Groups</h2>",
        cards(groups),
        "<input class='filter' type='search' placeholder='Filter groups…' aria-label='Filter groups'>",
        "<table class='data' id='groups-table'><thead><tr>",
        *[f"<th>{esc(h)}</th>" for h in GROUP_HEADERS],
        "</tr></thead><tbody>",
        *(group_row(g, ov.now_ms) for g in groups[:MAX_GROUP_ROWS]),
        "</tbody></table>",
    ]
    if len(groups) > MAX_GROUP_ROWS:
        body.append(f"<p class='note'>{len(groups) - MAX_GROUP_ROWS:,} more groups not listed.</p>")
    if not groups:
        body.append("<p class='empty' id='no-groups'>No groups yet.</p>")
    body.append("</section>")
    body.append(topics_section(ov.topics))
    header = f"<h1>Consumer groups</h1><p>groupcoord broker {node_id}, live.</p>"
    return _page(
        "groupcoord console", header, "".join(body), attrs=f" data-page='overview' data-since='{esc(since)}'"
    )


# ------------------------------------------------------------------------------ one group
def _tps(tps: Partitions | None, nbytes: int) -> str:
    if tps is None:
        return f"{nbytes:,} bytes" if nbytes else ""
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return "; ".join(f"{t}: {', '.join(str(p) for p in ps)}" for t, ps in by_topic.items())


def _facts(d: GroupDetail) -> str:
    g = d.summary
    facts = [
        ("Type", esc(g.group_type)),
        ("Protocol", esc(_protocol(g)) or "-"),
        ("State", badge(g.state)),
        ("Generation", esc(g.generation)),
        ("Members", f"{g.members:,}" + (f" (+{d.pending_members} pending)" if d.pending_members else "")),
        ("Lag (records)", esc(human_count(g.lag)) or "-"),
        ("Lag (time)", esc(human_duration(g.time_lag_ms)) or "-"),
    ]
    if d.group_epoch is not None:
        facts.append(("Group epoch", esc(d.group_epoch)))
    if d.assignment_epoch is not None:
        facts.append(("Assignment epoch", esc(d.assignment_epoch)))
    inner = "".join(f"<div><b>{v}</b>{esc(k)}</div>" for k, v in facts)
    return f"<section id='facts'><div class='facts'>{inner}</div></section>"


def _members(d: GroupDetail) -> str:
    epochs = any(m.member_epoch is not None for m in d.members)
    headers = ["Member id", "Client id", "Host", "Instance id", "Leader", "Assignment"]
    if epochs:
        headers += ["Member epoch", "Target assignment", "Pending revocation"]

    def row(m: MemberView) -> list[Cell]:
        cells = [
            Cell.text(m.member_id, css="mono"),
            Cell.text(m.client_id),
            Cell.text(m.client_host),
            Cell.text(m.instance_id),
            Cell.text("leader" if m.leader else ""),
            Cell.text(_tps(m.assignment, m.assignment_bytes), css="moves"),
        ]
        if epochs:
            cells += [
                Cell.count(m.member_epoch),
                Cell.text(_tps(m.target_assignment, 0), css="moves"),
                Cell.text(_tps(m.pending_revocation, 0), css="moves"),
            ]
        return cells

    out = [f"<section id='members'><h2>Members ({len(d.members)})</h2>"]
    if not d.members:
        out.append("<p class='note'>No members.</p>")
    else:
        out.append(
            table(headers, [row(m) for m in d.members], filter_label="members", table_id="members-table")
        )
    out.append("</section>")
    return "".join(out)


def _partitions(d: GroupDetail) -> str:
    out = ["<section id='partitions'><h2>Partitions</h2>"]
    if not d.partitions:
        out.append("<p class='note'>No committed offsets and no assigned partitions.</p>")
    else:
        rows = [
            [
                Cell.text(p.topic),
                Cell.count(p.partition),
                Cell.count(p.committed),
                Cell.count(p.log_end),
                Cell.count(p.lag),
                Cell.duration(p.time_lag_ms),
                Cell.text(p.owner, css="mono"),
                Cell.text(p.owner_client),
            ]
            for p in d.partitions
        ]
        out.append(
            table(
                (
                    "Topic",
                    "Partition",
                    "Committed offset",
                    "Log end",
                    "Lag (records)",
                    "Lag (time)",
                    "Owner",
                    "Owner's client id",
                ),
                rows,
                filter_label="partitions",
                table_id="partitions-table",
            )
        )
    out.append("</section>")
    return "".join(out)


def _lag(d: GroupDetail) -> str:
    points = [p for p in d.lag_history if p.time_ms >= d.now_ms - WINDOW_MS]
    out = ["<section id='lag'><h2>Lag over the last minutes</h2>"]
    if not points:
        out.append("<p class='note'>No lag sampled yet (the console samples while a page is open).</p>")
    else:
        xs = [p.time_ms for p in points]
        out.append(
            svg_lines(
                [("offset lag", xs, [float(p.lag) for p in points])],
                title="lag (records, all partitions)",
                y_format=lambda v: f"{v:,.0f}",
            )
        )
        out.append(
            svg_lines(
                [("time lag", xs, [p.time_lag_ms for p in points])],
                title="lag (time, worst partition)",
                y_format=human_duration,
            )
        )
    out.append("</section>")
    return "".join(out)


#: a member id as Kafka makes it: the client id, a dash, a UUID
_MEMBER_ID = re.compile(r"^(.*)-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def short_member(member_id: str | None) -> str:
    """A member id made short for a crowded cell: ``client-1-2b1c…`` (client id and the UUID's
    first characters); other ids as they are."""
    if member_id is None:
        return "(unassigned)"
    found = _MEMBER_ID.match(member_id)
    return member_id if found is None else f"{found.group(1)}-{found.group(2)[:4]}…"


def _member(member_id: str | None) -> str:
    """A member id shortened, the whole id in its tooltip (escaped HTML)."""
    if member_id is None:
        return ""
    return f"<span title='{esc(member_id)}'>{esc(short_member(member_id))}</span>"


def _moves(r: RebalanceView) -> str:
    """The partitions that changed owner, one a line (escaped HTML)."""
    if not r.moved:
        return ""
    lines = [
        f"{esc(m.topic)}-{m.partition}: {esc(short_member(m.before))} → {esc(short_member(m.after))}"
        for m in r.moved[:20]
    ]
    if len(r.moved) > 20:
        lines.append(f"… {len(r.moved) - 20} more")
    return f"<b>{len(r.moved)}</b><br>" + "<br>".join(lines)


def _rebalances(d: GroupDetail) -> str:
    rbs = d.rebalances
    out = ["<section id='rebalances'><h2>Rebalances</h2>"]
    if not rbs:
        out.append("<p class='note'>No rebalance since the broker started.</p></section>")
        return "".join(out)
    now = d.now_ms
    running = rbs[-1].ended_ms is None
    classic = [r for r in rbs if r.protocol != "consumer"]
    bumps = len(rbs) - len(classic)
    if classic:
        total = esc(human_duration(sum(r.stood_still_ms(now) for r in classic)))
        out.append(
            f"<p>{len(classic)} rebalances kept; the group stood still for {total} in all"
            + (" — <b>rebalancing now</b>" if running and not bumps else "")
            + ".</p>"
        )
    if bumps:
        out.append(
            f"<p>{bumps} epoch bumps kept (consumer group protocol, KIP-848): the members reconcile "
            "incrementally and none stands still for another's rebalance"
            + (" — <b>reconciling now</b>" if running else "")
            + ".</p>"
        )
    start = min(min(r.started_ms for r in rbs), now - WINDOW_MS)
    out.append("<div>")
    out.append(
        svg_timeline(
            [Bar(r.started_ms, float(r.stood_still_ms(now)), r.cause, r.protocol != "consumer") for r in rbs],
            CAUSE_COLOURS,
            start_ms=start,
            end_ms=now,
        )
    )
    out.append("</div>")
    rows = [
        [
            Cell.when(r.started_ms),
            Cell(_cause(r.cause) + "".join(" → " + _cause(c) for c in r.restarts), r.cause),
            Cell(_member(r.member_id), r.member_id or "", css="mono"),
            Cell.text(r.client_id),
            Cell.text(r.client_reason),
            _stood_still(r, now),
            Cell.text(f"{r.members_before} → {'' if r.members_after is None else r.members_after}"),
            Cell.text(f"{r.generation_before} → {'' if r.generation_after is None else r.generation_after}"),
            Cell(_moves(r), len(r.moved), css="lines"),
            Cell(badge(r.outcome) if r.outcome else badge("running", "#b26a00"), r.outcome or ""),
        ]
        for r in reversed(rbs)
    ]
    out.append(
        table(
            (
                "Started",
                "Cause",
                "Triggered by",
                "Client id",
                "Reason given",
                "Stood still",
                "Members",
                "Generation / epoch",
                "Partitions moved",
                "Outcome",
            ),
            rows,
            filter_label="rebalances",
            table_id="rebalances-table",
        )
    )
    out.append("</section>")
    return "".join(out)


def _events(d: GroupDetail) -> str:
    out = ["<section id='events'><h2>Recent events</h2>"]
    if not d.events:
        out.append("<p class='note'>No event since the broker started.</p></section>")
        return "".join(out)
    rows = [
        [
            Cell.when(e.time_ms),
            Cell.text(e.type),
            Cell(_cause(e.reason), e.reason),
            Cell.text(f"{e.from_state or '-'} → {e.to_state}" if e.type == "state_change" else ""),
            Cell.text(e.member_id, css="mono"),
            Cell.text(e.client_id),
            Cell.text(e.client_host),
            Cell.text(e.client_reason),
            Cell.count(e.generation),
            Cell.count(e.member_count),
        ]
        for e in d.events
    ]
    out.append(
        table(
            (
                "Time",
                "Event",
                "Reason",
                "State",
                "Member id",
                "Client id",
                "Host",
                "Reason given",
                "Generation",
                "Members",
            ),
            rows,
            filter_label="events",
            table_id="events-table",
        )
    )
    out.append("</section>")
    return "".join(out)


def group_sections(d: GroupDetail) -> list[tuple[str, str]]:
    """(element id, HTML) of each part of the group page the live stream replaces."""
    g = d.summary
    title = f"<span id='title'>{esc(g.group_id)} {badge(g.state)}</span>"
    return [
        ("title", title),
        ("facts", _facts(d)),
        ("members", _members(d)),
        ("partitions", _partitions(d)),
        ("rebalances", _rebalances(d)),
        ("lag", _lag(d)),
        ("events", _events(d)),
    ]


def group_page(d: GroupDetail) -> str:
    sections = group_sections(d)
    header = f"<p><a href='/'>← all groups</a></p><h1>{sections[0][1]}</h1>"
    return _page(
        f"{d.summary.group_id} · groupcoord console",
        header,
        "".join(html for _, html in sections[1:]),
        attrs=f" data-page='group' data-group='{esc(d.summary.group_id)}'",
    )


def gone_sections(group_id: str) -> list[tuple[str, str]]:
    """What replaces a group page's parts when the group no longer exists."""
    note = (
        f"<section id='facts'><p class='empty'>No such group any more: {esc(group_id)} was deleted "
        "or its coordinator moved.</p></section>"
    )
    empty = [
        (name, f"<section id='{name}'></section>") for name in ("members", "partitions", "rebalances", "lag")
    ]
    return [("title", f"<span id='title'>{esc(group_id)} {badge('Dead')}</span>"), ("facts", note), *empty]


def no_such_group_page(group_id: str) -> str:
    body = (
        "<section><h2>No such group</h2>"
        f"<p class='empty'>The broker has no group <b class='mono' id='missing'>{esc(group_id)}</b>: it was "
        "never created, or it was deleted (a group exists once a member joins or an offset is "
        "committed for it).</p><p><a href='/'>See every group</a></p></section>"
    )
    return _page(
        "No such group · groupcoord console", "<h1>No such group</h1>", body, attrs=" data-page='none'"
    )


def not_found_page(path: str) -> str:
    body = (
        f"<section><p class='empty'>Nothing at {esc(path)}.</p>"
        "<p><a href='/'>See every group</a></p></section>"
    )
    return _page("Not found · groupcoord console", "<h1>Not found</h1>", body, attrs=" data-page='none'")


def rows_payload(groups: Iterable[GroupSummary], removed: Iterable[str], now_ms: int) -> dict[str, object]:
    """The overview's live update: rows to put in place (by id) and rows to take out."""
    return {
        "rows": [{"id": row_id(g.group_id), "html": group_row(g, now_ms)} for g in groups],
        "removed": [row_id(gid) for gid in removed],
    }
