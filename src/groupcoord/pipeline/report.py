"""``OUT/report.html``: one self-contained file answering an operator's questions.

Which groups are unhealthy and why, why a group rebalanced and how long it stopped, how far behind
it is in records and in time. A summary (every group with its status in words), a legend for every
status, and one section per group: lag over time, the rebalance timeline coloured by cause, the
rebalances, the partitions' health and the partitions that changed owner. Charts are inline SVG,
tables sort (click a header) and filter (type in the box) with a few lines of inline JavaScript;
nothing is loaded from anywhere, so the file reads offline. Times are written in UTC and shown in
the reader's local time zone (named) when scripts run.

The report reads the (small) gold tables back from ``OUT/tables`` into pandas; :func:`render_html`
is Spark-free and takes those frames directly, so it is testable on its own.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Mapping, Sequence
from datetime import UTC
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groupcoord.pipeline.compare import has_both_protocols, protocol_comparison
from groupcoord.ui.components import (
    CAUSE_PALETTE,
    STATUS_COLOURS,
    Bar,
    Cell,
    asset,
    badge,
    esc,
    human_count,
    human_duration,
    missing,
    slug,
    svg_lines,
    svg_timeline,
    table,
    time_html,
)

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

REPORT_TABLES = (
    "group_status",
    "partition_status",
    "rebalances",
    "rebalance_summary",
    "group_lag_series",
    "partition_ownership",
)
#: rows of one table shown per group (the Parquet tables hold all of them)
MAX_ROWS = 500
NO_GROUPS = (
    "No groups yet: the data directory holds no consumer-group records (no group has joined or "
    "committed offsets)."
)

#: Every status the report shows, with what it means for the operator (Burrow's rules, docs/pipeline.md).
PARTITION_STATUS_TEXT = {
    "OK": "keeping up: the lag reached zero (or the allowed lag) or went down within the last commits.",
    "WARN": "falling behind: the consumer commits, but the lag grew at every one of the last commits.",
    "STOP": "not committing: no commit for longer than the last commits spanned while records wait "
    "(the consumer stopped, crashed or lost its partitions; expected after a clean shutdown).",
    "STALL": "stuck: the consumer keeps committing the same offset while records wait.",
    "REWIND": "went back: a committed offset is lower than an earlier one (an offset reset or reprocessing).",
}
GROUP_STATUS_TEXT = {
    "OK": "every partition is keeping up.",
    "WARN": "at least one partition is falling behind; none is stopped, stuck or rewound.",
    "ERR": "at least one partition is stopped (STOP), stuck (STALL) or went back (REWIND).",
}
_RANK = {"REWIND": 0, "STALL": 1, "STOP": 2, "WARN": 3, "OK": 4}


# ------------------------------------------------------------------------------ formatting
# The pieces (badges, tables, charts, the timeline, the page's CSS and script) are
# groupcoord.ui's, shared with the live console.
_esc = esc
_missing = missing
_badge = badge
_COLOURS = STATUS_COLOURS
_CAUSE_PALETTE = CAUSE_PALETTE


def _ms(v: Any) -> int | None:
    """Epoch milliseconds of a pandas/py timestamp (naive values are UTC)."""
    if _missing(v):
        return None
    if isinstance(v, int | float):
        return int(v)
    ts = v.to_pydatetime() if hasattr(v, "to_pydatetime") else v
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return int(ts.timestamp() * 1000)


def _time(v: Any) -> str:
    return time_html(_ms(v))


def _table(headers: Sequence[str], rows: Sequence[Sequence[Cell]], *, filter_label: str) -> str:
    return table(
        headers,
        rows,
        filter_label=filter_label,
        max_rows=MAX_ROWS,
        more_note="more rows in the Parquet tables",
    )


def _num(v: Any) -> Cell:
    return Cell.count(v)


def _dur(v: Any) -> Cell:
    return Cell.duration(v)


def _median(v: Any) -> Cell:
    """A median count (halves kept: 2.5)."""
    return Cell("", "", num=True) if _missing(v) else Cell(f"{float(v):g}", float(v), num=True)


def _when(v: Any) -> Cell:
    return Cell.when(_ms(v))


def _text(v: Any) -> Cell:
    return Cell.text(v)


def _svg_timeline(rebalances: pd.DataFrame, colours: Mapping[str, str], *, start_ms: int, end_ms: int) -> str:
    """Rebalances of one group on a time axis (:func:`groupcoord.ui.components.svg_timeline`)."""
    bars = []
    for _, r in rebalances.iterrows():
        s = _ms(r["started_at"])
        if s is None:
            continue
        d = None if _missing(r.get("duration_ms")) else float(r["duration_ms"])
        cause = "unknown" if _missing(r.get("cause")) else str(r["cause"])
        bars.append(Bar(s, d, cause, _protocol(r) == "classic"))
    return svg_timeline(bars, colours, start_ms=start_ms, end_ms=end_ms)


# ------------------------------------------------------------------------------ words
def explain_group(status: str, partitions: pd.DataFrame) -> str:
    """The group's status in one or two sentences, naming the partitions behind it."""
    if partitions.empty:
        return "No committed offsets in range, so no lag could be evaluated."
    counts = partitions["status"].value_counts().to_dict()
    total = len(partitions)
    if status == "OK":
        return f"Healthy: all {total} partitions are keeping up."
    parts = []
    for s in ("STOP", "STALL", "REWIND", "WARN"):
        n = int(counts.get(s, 0))
        if not n:
            continue
        rows = partitions[partitions["status"] == s]
        names = ", ".join(f"{t}-{p}" for t, p in zip(rows["topic"], rows["partition"], strict=True))
        if len(rows) > 6:
            names = ", ".join(
                f"{t}-{p}" for t, p in zip(rows["topic"][:6], rows["partition"][:6], strict=True)
            )
            names += ", …"
        what = PARTITION_STATUS_TEXT[s].split(":")[0]
        parts.append(f"{n} of {total} partitions {what} ({s}: {names})")
    sentence = "; ".join(parts) + "."
    if counts.get("STOP", 0) == total:
        last = partitions["last_commit_time"].max() if "last_commit_time" in partitions else None
        when = f" since {_time(last)}" if not _missing(last) else ""
        sentence += (
            f" No partition has been committed{when}: if the group was shut down on purpose this is "
            "expected; otherwise its consumers are down."
        )
    return sentence[0].upper() + sentence[1:]


def partition_moves(ownership: pd.DataFrame) -> pd.DataFrame:
    """Per generation of a group, the partitions whose owner differs from the previous generation's."""
    import pandas as pd

    if ownership.empty:
        return pd.DataFrame(columns=["generation", "topic", "partition", "owner_before", "owner_after"])
    # a group upgraded from classic to the consumer protocol has generations of both, numbered
    # apart: each protocol's are compared among themselves
    protocols = ownership["protocol"].fillna("classic") if "protocol" in ownership else "classic"
    rows = []
    for _, o in ownership.assign(_protocol=protocols).groupby("_protocol", sort=True):
        gens = sorted(int(g) for g in o["generation"].dropna().unique())
        for prev, gen in itertools.pairwise(gens):
            before = {
                (t, int(p)): w
                for t, p, w in o[o["generation"] == prev][["topic", "partition", "owner"]].values
            }
            after = {
                (t, int(p)): w
                for t, p, w in o[o["generation"] == gen][["topic", "partition", "owner"]].values
            }
            for tp in sorted(set(before) | set(after)):
                if before.get(tp) != after.get(tp):
                    rows.append((gen, tp[0], tp[1], before.get(tp), after.get(tp)))
    return pd.DataFrame(rows, columns=["generation", "topic", "partition", "owner_before", "owner_after"])


# ------------------------------------------------------------------------------ page
def render_html(
    frames: Mapping[str, pd.DataFrame],
    *,
    now_ms: int,
    title: str = "Consumer groups",
    data_dir: str | None = None,
) -> str:
    """The report for the given gold tables (keys: :data:`REPORT_TABLES`; ``partition_ownership``
    may be missing)."""
    import pandas as pd

    gs = frames["group_status"]
    ps = frames["partition_status"]
    rb = frames["rebalances"]
    series = frames["group_lag_series"]
    ownership = frames.get("partition_ownership", pd.DataFrame())

    times = [
        _ms(v)
        for v in (
            *(series["time"].agg(["min", "max"]).tolist() if not series.empty else []),
            *(rb["started_at"].agg(["min", "max"]).tolist() if not rb.empty else []),
        )
    ]
    known = [t for t in times if t is not None]
    start_ms, end_ms = (min(known), max([*known, now_ms])) if known else (now_ms, now_ms)
    causes = sorted(rb["cause"].fillna("unknown").unique()) if not rb.empty else []
    colours = {c: _CAUSE_PALETTE[i % len(_CAUSE_PALETTE)] for i, c in enumerate(causes)}

    groups = sorted(
        set(gs["group_id"]) | (set(rb["group_id"]) if not rb.empty else set()),
        key=lambda g: (
            {"ERR": 0, "WARN": 1, "OK": 2}.get(_group_field(gs, g, "status", "OK"), 3),
            str(g),
        ),
    )
    heading = f"{title}{' in ' + data_dir if data_dir else ''}"
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{_esc(heading)}</title><style>{asset('ui.css')}</style></head><body>",
        f"<header><h1>{_esc(heading)}</h1>",
        f"<p>Data from {_time(start_ms)} to {_time(end_ms)}; health evaluated at {_time(now_ms)} "
        "with Burrow's rules.</p><p id='zone'>Times are in UTC.</p></header><main>",
        "<nav id='toc' aria-label='Contents'><b>Contents</b>",
        "<a href='#summary'>Summary</a>",
        "<a href='#protocols'>Protocols side by side</a>" if has_both_protocols(rb) else "",
        "<a href='#legend'>Status legend</a>",
        *[f"<a href='#{slug(g)}'>{_badge(_group_field(gs, g, 'status', '-'))} {_esc(g)}</a>" for g in groups],
        "</nav><div id='content'>",
        _summary(gs, ps, rb, groups),
        _protocols(rb),
        _legend(colours),
    ]
    for i, g in enumerate(groups):
        parts.append(
            _group_section(
                g,
                gs,
                ps,
                rb,
                series,
                ownership,
                colours,
                start_ms=start_ms,
                end_ms=end_ms,
                prev=groups[i - 1] if i > 0 else None,
                nxt=groups[i + 1] if i + 1 < len(groups) else None,
            )
        )
    parts += ["</div></main>", f"<script>{asset('ui.js')}</script>", "</body></html>"]
    return "\n".join(parts)


def _group_field(gs: pd.DataFrame, group: str, column: str, default: Any) -> Any:
    if gs.empty or column not in gs:
        return default
    rows = gs[gs["group_id"] == group]
    if rows.empty or _missing(rows.iloc[0][column]):
        return default
    return rows.iloc[0][column]


def _summary(gs: pd.DataFrame, ps: pd.DataFrame, rb: pd.DataFrame, groups: Sequence[str]) -> str:
    out = ["<section id='summary'><h2>Summary</h2>"]
    if not groups:
        out.append(f"<p class='empty'>{NO_GROUPS}</p></section>")
        return "".join(out)
    counts = gs["status"].value_counts().to_dict() if not gs.empty else {}
    out.append("<div class='cards'>")
    out.append(f"<div class='card'><b>{len(groups)}</b>groups</div>")
    for s in ("ERR", "WARN", "OK"):
        out.append(
            f"<div class='card' style='border-color:{_COLOURS[s]}'><b>{int(counts.get(s, 0))}</b>"
            f"{_badge(s)} groups</div>"
        )
    out.append(f"<div class='card'><b>{len(rb):,}</b>rebalances</div></div>")
    unhealthy = [g for g in groups if _group_field(gs, g, "status", "OK") != "OK"]
    if unhealthy:
        out.append("<h3>Needs attention</h3><ul>")
        for g in unhealthy:
            mine = ps[ps["group_id"] == g] if not ps.empty else ps
            status = str(_group_field(gs, g, "status", "-"))
            out.append(
                f"<li><a href='#{slug(g)}'>{_esc(g)}</a> {_badge(status)} {explain_group(status, mine)}</li>"
            )
        out.append("</ul>")
    else:
        out.append("<p>Every group is keeping up.</p>")
    rows = []
    for g in groups:
        mine_rb = rb[rb["group_id"] == g] if not rb.empty else rb
        status = str(_group_field(gs, g, "status", "-"))
        rows.append(
            [
                Cell(f"<a href='#{slug(g)}'>{_esc(g)}</a>", str(g)),
                Cell(_badge(status), _RANK.get(status, {"ERR": 0}.get(status, 5))),
                _num(_group_field(gs, g, "total_lag", None)),
                _dur(_group_field(gs, g, "max_time_lag_ms", None)),
                _num(_group_field(gs, g, "partition_count", None)),
                _num(len(mine_rb)),
                _dur(_stops(mine_rb)["duration_ms"].max() if not _stops(mine_rb).empty else None),
                _when(mine_rb["started_at"].max() if not mine_rb.empty else None),
            ]
        )
    out.append("<h3>All groups</h3>")
    out.append(
        _table(
            (
                "Group",
                "Status",
                "Lag (records)",
                "Lag (time)",
                "Partitions",
                "Rebalances",
                "Longest stop",
                "Last rebalance",
            ),
            rows,
            filter_label="groups",
        )
    )
    out.append("</section>")
    return "".join(out)


def _protocols(rb: pd.DataFrame) -> str:
    """The classic protocol's rebalances beside the consumer group protocol's (KIP-848), when the
    data holds both (``groupcoord simulate --protocol mixed`` writes twins of each group)."""
    if not has_both_protocols(rb):
        return ""
    comparison = protocol_comparison(rb)
    rows = [
        [
            _text(r["cause"]),
            _text(r["protocol"]),
            _num(r["rebalances"]),
            _num(r["members_stopped"]),
            _num(r["members_reconciling"]),
            _num(r["partitions_moved"]),
            _median(r["median_partitions_moved"]),
            _dur(r["median_reconcile_ms"]),
            _dur(r["max_reconcile_ms"]),
            _dur(r["group_stopped_ms"]),
        ]
        for _, r in comparison.iterrows()
    ]
    return (
        "<section id='protocols'><h2>Protocols side by side</h2>"
        "<p>Classic rebalances (JoinGroup/SyncGroup: every member stops until the group is Stable "
        "again) beside the consumer group protocol's epoch bumps (KIP-848: only members whose "
        "partitions move reconcile, the others keep consuming). Members stopped: members in the "
        "group before and after a classic rebalance; members reconciling: those whose target "
        "assignment changed in an epoch bump. Reconciliation: start to Stable.</p>"
        + _table(
            (
                "Cause",
                "Protocol",
                "Rebalances",
                "Members stopped",
                "Members reconciling",
                "Partitions moved",
                "Moved (median)",
                "Reconciliation (median)",
                "Reconciliation (max)",
                "Group stopped",
            ),
            rows,
            filter_label="protocols side by side",
        )
        + "</section>"
    )


def _legend(colours: Mapping[str, str]) -> str:
    out = ["<section id='legend'><h2>Status legend</h2><h3>Group status</h3><dl class='legend'>"]
    for s, text in GROUP_STATUS_TEXT.items():
        out.append(f"<dt>{_badge(s)}</dt><dd>{_esc(text)}</dd>")
    out.append("</dl><h3>Partition status (from the group's last commits)</h3><dl class='legend'>")
    for s, text in PARTITION_STATUS_TEXT.items():
        out.append(f"<dt>{_badge(s)}</dt><dd>{_esc(text)}</dd>")
    out.append(
        "</dl><p class='note'>Lag (records): log-end offset minus the committed offset. Lag (time): how "
        "long the oldest unconsumed record has waited. “Window full”: the partition has as many "
        "recent commits as the evaluation uses. A rebalance stops the whole group from its start "
        "(PreparingRebalance) until it is Stable again; that time is its duration.</p>"
    )
    if colours:
        out.append("<h3>Rebalance causes</h3><p>")
        out.extend(
            f"<span class='badge' style='background:{c}'>{_esc(k)}</span> " for k, c in colours.items()
        )
        out.append("</p>")
    out.append("</section>")
    return "".join(out)


def _group_section(
    g: str,
    gs: pd.DataFrame,
    ps: pd.DataFrame,
    rb: pd.DataFrame,
    series: pd.DataFrame,
    ownership: pd.DataFrame,
    colours: Mapping[str, str],
    *,
    start_ms: int,
    end_ms: int,
    prev: str | None,
    nxt: str | None,
) -> str:
    status = str(_group_field(gs, g, "status", "-"))
    mine_ps = ps[ps["group_id"] == g] if not ps.empty else ps
    mine_rb = rb[rb["group_id"] == g].sort_values("started_at") if not rb.empty else rb
    mine_series = series[series["group_id"] == g].sort_values("time") if not series.empty else series
    nav = ["<span class='groupnav'>"]
    if prev is not None:
        nav.append(f"<a href='#{slug(prev)}'>← {_esc(prev)}</a>")
    nav.append("<a href='#summary'>↑ summary</a>")
    if nxt is not None:
        nav.append(f"<a href='#{slug(nxt)}'>{_esc(nxt)} →</a>")
    nav.append("</span>")
    out = [
        f"<section id='{slug(g)}' class='group'>",
        "".join(nav),
        f"<h2>{_esc(g)} {_badge(status)}</h2>",
        f"<p class='why'>{explain_group(status, mine_ps)}</p>",
    ]
    if status in GROUP_STATUS_TEXT:
        out.append(f"<p class='note'>{_esc(status)}: {_esc(GROUP_STATUS_TEXT[status])}</p>")
    out.append("<h3>Lag over time</h3>")
    if mine_series.empty:
        out.append("<p class='note'>No offset commits in range.</p>")
    else:
        xs = [_ms(t) or 0 for t in mine_series["time"]]
        out.append(
            svg_lines(
                [("offset lag", xs, list(mine_series["total_lag"]))],
                title="lag (records, all partitions)",
                y_format=lambda v: f"{v:,.0f}",
            )
        )
        out.append(
            svg_lines(
                [("time lag", xs, list(mine_series["max_time_lag_ms"]))],
                title="lag (time, worst partition)",
                y_format=human_duration,
            )
        )
    out.append("<h3>Rebalances</h3>")
    if mine_rb.empty:
        out.append("<p class='note'>No rebalances in range.</p>")
    else:
        stops = _stops(mine_rb)
        if not stops.empty:
            total_stop = stops["duration_ms"].fillna(0).sum()
            out.append(
                f"<p>{len(stops)} rebalances; the group was stopped for {human_duration(total_stop)} in "
                f"all, longest {human_duration(stops['duration_ms'].max())}.</p>"
            )
        bumps = mine_rb[~mine_rb.index.isin(stops.index)]
        if not bumps.empty:
            took = bumps["duration_ms"].dropna()
            longest = f", the longest took {human_duration(took.max())}" if not took.empty else ""
            out.append(
                f"<p>{len(bumps)} epoch bumps of the consumer group protocol (KIP-848): members "
                f"reconcile incrementally, and none stops for another's rebalance{longest}.</p>"
            )
        out.append(_svg_timeline(mine_rb, colours, start_ms=start_ms, end_ms=end_ms))
        rows = [
            [
                _when(r["started_at"]),
                Cell(
                    f"<span class='badge' style='background:{colours.get(_cause(r), '#777')}'>"
                    f"{_esc(_cause(r))}</span>",
                    _cause(r),
                ),
                _text(r.get("trigger_client_reason") or r.get("trigger_reason")),
                _text(r.get("trigger_client_id")),
                _text(_protocol(r)),
                _dur(r.get("duration_ms")),
                _dur(r.get("duration_ms")) if _protocol(r) == "classic" else _text(_no_stop(r)),
                _text(f"{human_count(r.get('members_before'))} → {human_count(r.get('members_after'))}"),
                _num(r.get("partitions_moved")),
                _num(r.get("generation")),
                _text(r.get("outcome")),
            ]
            for _, r in mine_rb.iloc[::-1].iterrows()
        ]
        out.append(
            _table(
                (
                    "Started",
                    "Cause",
                    "Reason given",
                    "Triggered by",
                    "Protocol",
                    "Took",
                    "Stopped for",
                    "Members",
                    "Partitions moved",
                    "Generation / epoch",
                    "Outcome",
                ),
                rows,
                filter_label=f"rebalances of {g}",
            )
        )
    out.append("<h3>Partitions</h3>")
    if mine_ps.empty:
        out.append("<p class='note'>No committed offsets in range.</p>")
    else:
        ordered = mine_ps.assign(_r=mine_ps["status"].map(_RANK)).sort_values(
            ["_r", "current_lag"], ascending=[True, False]
        )
        rows = [
            [
                _text(r["topic"]),
                _num(r["partition"]),
                Cell(_badge(str(r["status"])), _RANK.get(str(r["status"]), 5)),
                _num(r.get("current_lag")),
                _dur(r.get("time_lag_ms")),
                _num(r.get("last_committed_offset")),
                _when(r.get("last_commit_time")),
                Cell(
                    "yes" if not _missing(r.get("complete")) and float(r["complete"]) >= 1.0 else "no",
                    None,
                ),
            ]
            for _, r in ordered.iterrows()
        ]
        out.append(
            _table(
                (
                    "Topic",
                    "Partition",
                    "Status",
                    "Lag (records)",
                    "Lag (time)",
                    "Committed offset",
                    "Last commit",
                    "Window full",
                ),
                rows,
                filter_label=f"partitions of {g}",
            )
        )
    out.append("<h3>Partition movements</h3>")
    mine_own = ownership[ownership["group_id"] == g] if not ownership.empty else ownership
    moves = partition_moves(mine_own)
    if moves.empty:
        out.append("<p class='note'>No partition changed owner between generations in range.</p>")
    else:
        rows = [
            [
                _num(r["generation"]),
                _text(r["topic"]),
                _num(r["partition"]),
                _text(r["owner_before"] if not _missing(r["owner_before"]) else "(unassigned)"),
                _text(r["owner_after"] if not _missing(r["owner_after"]) else "(unassigned)"),
            ]
            for _, r in moves.iloc[::-1].iterrows()
        ]
        out.append(
            _table(
                ("Generation", "Topic", "Partition", "Owner before", "Owner after"),
                rows,
                filter_label=f"movements of {g}",
            )
        )
    out.append("</section>")
    return "".join(out)


def _protocol(r: Any) -> str:
    """A rebalance's protocol: ``classic``, or ``consumer`` for a KIP-848 group's epoch bump (tables
    written before the column existed hold classic rebalances only)."""
    v = r.get("protocol")
    return "classic" if _missing(v) else str(v)


def _no_stop(r: Any) -> str:
    """The "Stopped for" cell of a consumer group's epoch bump: nobody; how many members had to move
    partitions, when the target assignments say."""
    affected, after = r.get("members_affected"), r.get("members_after")
    if _missing(affected) or _missing(after):
        return "none (incremental)"
    return f"none ({int(affected)} member(s) moved partitions; {int(after)} in the group)"


def _stops(rebalances: pd.DataFrame) -> pd.DataFrame:
    """The rebalances that stopped the whole group (the classic protocol's)."""
    if rebalances.empty or "protocol" not in rebalances:
        return rebalances
    return rebalances[rebalances["protocol"].fillna("classic") == "classic"]


def _cause(r: Any) -> str:
    c = r.get("cause")
    return "unknown" if _missing(c) else str(c)


def write_report(spark: SparkSession, out: Path, *, now_ms: int, data_dir: Path | None = None) -> Path:
    frames = {name: spark.read.parquet(str(out / "tables" / name)).toPandas() for name in REPORT_TABLES}
    target = out / "report.html"
    tmp = out / ".report.html.tmp"
    tmp.write_text(
        render_html(frames, now_ms=now_ms, data_dir=None if data_dir is None else str(data_dir)),
        encoding="utf-8",
    )
    tmp.replace(target)
    return target
