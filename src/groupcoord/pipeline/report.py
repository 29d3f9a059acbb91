"""``OUT/report.html``: one self-contained file, plots as base64 PNGs (matplotlib, Agg backend).

The report reads the (small) gold tables back from ``OUT/tables`` into pandas; :func:`render_html`
is Spark-free and takes those frames directly, so it is testable on its own.
"""

from __future__ import annotations

import base64
import html
import io
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

REPORT_TABLES = ("group_status", "partition_status", "rebalances", "rebalance_summary", "group_lag_series")
MAX_TABLE_ROWS = 200
MAX_TIMELINE_GROUPS = 30
NO_GROUPS = (
    "No groups yet: the data directory holds no consumer-group records (no group has joined or "
    "committed offsets)."
)
_STATUS_COLOURS = {
    "OK": "#d9f2d9",
    "WARN": "#fff2b3",
    "ERR": "#f4b6b6",
    "STOP": "#f4b6b6",
    "STALL": "#f4b6b6",
    "REWIND": "#f4b6b6",
}


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _empty_figure(title: str, message: str) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 1.8))
    ax.set_title(title)
    ax.text(0.5, 0.5, message, ha="center", va="center")
    ax.set_axis_off()
    return fig


def plot_lag(series: pd.DataFrame) -> Any:
    import matplotlib.pyplot as plt

    if series.empty:
        return _empty_figure("Consumer lag over time", "no offset commits in range")
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    top = series.groupby("group_id")["total_lag"].max().sort_values(ascending=False).index[:12]
    for group in top:
        g = series[series["group_id"] == group].sort_values("time")
        ax1.plot(g["time"], g["total_lag"], label=str(group), linewidth=1.2)
        ax2.plot(g["time"], g["max_time_lag_ms"] / 1000.0, label=str(group), linewidth=1.2)
    ax1.set_ylabel("offset lag (records)")
    ax1.set_title("Consumer lag over time (top groups by lag)")
    ax2.set_ylabel("time lag (s)")
    ax1.legend(loc="upper left", fontsize="small", bbox_to_anchor=(1.0, 1.0))
    fig.autofmt_xdate()
    return fig


def _cause_colours(causes: list[str]) -> dict[str, Any]:
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab10")
    return {c: cmap(i % 10) for i, c in enumerate(sorted(causes))}


def plot_timeline(rebalances: pd.DataFrame) -> Any:
    import matplotlib.dates as mdates
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    if rebalances.empty:
        return _empty_figure("Rebalance timeline", "no rebalances in range")
    r = rebalances.copy()
    r["cause"] = r["cause"].fillna("unknown")
    counts = r["group_id"].value_counts()
    groups = sorted(counts.sort_values(ascending=False, kind="stable").index[:MAX_TIMELINE_GROUPS])
    r = r[r["group_id"].isin(groups)]
    colours = _cause_colours(list(r["cause"].unique()))
    fig, ax = plt.subplots(figsize=(10, 1.0 + 0.45 * len(groups)))
    for i, group in enumerate(groups):
        g = r[r["group_id"] == group]
        for _, row in g.iterrows():
            start = float(mdates.date2num(row["started_at"]))  # type: ignore[no-untyped-call]
            duration = row["duration_ms"] if row["duration_ms"] == row["duration_ms"] else 0
            width = max(float(duration) / 86_400_000.0, 0)
            ax.barh(
                i,
                width,
                left=start,
                height=0.6,
                color=colours[row["cause"]],
                edgecolor="black",
                linewidth=0.4,
            )
            ax.plot([start], [i], marker="|", color=colours[row["cause"]], markersize=12)
    ax.set_yticks(range(len(groups)))
    ax.set_yticklabels(groups)
    ax.xaxis_date()
    more = len(counts) - len(groups)
    suffix = f"; {more} more groups not shown" if more > 0 else ""
    ax.set_title(f"Rebalance timeline (bar = start to Stable, colour = cause{suffix})")
    ax.legend(
        handles=[Patch(color=c, label=k) for k, c in colours.items()],
        fontsize="small",
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
    )
    fig.autofmt_xdate()
    return fig


def plot_durations(rebalances: pd.DataFrame) -> Any:
    import matplotlib.pyplot as plt

    d = rebalances["duration_ms"].dropna() if not rebalances.empty else rebalances
    if len(d) == 0:
        return _empty_figure("Rebalance durations", "no completed rebalances")
    fig, ax = plt.subplots(figsize=(9, 3.5))
    ax.hist(d.astype(float) / 1000.0, bins=min(40, max(5, len(d) // 2)), color="#4c72b0", edgecolor="white")
    ax.set_xlabel("duration (s): PreparingRebalance to Stable")
    ax.set_ylabel("rebalances")
    ax.set_title("Distribution of rebalance durations")
    return fig


def plot_moved(rebalances: pd.DataFrame) -> Any:
    import matplotlib.pyplot as plt

    if rebalances.empty:
        return _empty_figure("Partitions moved per rebalance", "no rebalances in range")
    r = rebalances.sort_values("started_at").reset_index(drop=True)
    r["cause"] = r["cause"].fillna("unknown")
    colours = _cause_colours(list(r["cause"].unique()))
    fig, ax = plt.subplots(figsize=(10, 3.5))
    ax.bar(range(len(r)), r["partitions_moved"].fillna(0), color=[colours[c] for c in r["cause"]])
    ax.set_xlabel("rebalance (in start order, all groups)")
    ax.set_ylabel("partitions moved")
    ax.set_title("Partitions that changed owner per rebalance")
    return fig


def _table(df: pd.DataFrame, *, status_column: str | None = None) -> str:
    shown = df.head(MAX_TABLE_ROWS)
    cols = list(shown.columns)
    out = ["<table><thead><tr>", *[f"<th>{html.escape(str(c))}</th>" for c in cols], "</tr></thead><tbody>"]
    for _, row in shown.iterrows():
        style = ""
        if status_column is not None:
            colour = _STATUS_COLOURS.get(str(row[status_column]))
            if colour:
                style = f' style="background:{colour}"'
        out.append(f"<tr{style}>")
        out.extend(f"<td>{html.escape(_fmt(row[c]))}</td>" for c in cols)
        out.append("</tr>")
    out.append("</tbody></table>")
    if len(df) > MAX_TABLE_ROWS:
        out.append(f"<p>{len(df) - MAX_TABLE_ROWS} more rows in the Parquet table.</p>")
    return "".join(out)


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return "" if v != v else f"{v:.6g}"
    if isinstance(v, dict):
        return ", ".join(f"{k}: {n}" for k, n in sorted(v.items()))
    if isinstance(v, list | tuple):
        return ", ".join(f"{k}: {n}" for k, n in v) if v and isinstance(v[0], tuple) else str(v)
    return str(v)


def render_html(frames: Mapping[str, pd.DataFrame], *, now_ms: int, title: str = "groupcoord analyze") -> str:
    """The report for the given gold tables (keys: :data:`REPORT_TABLES`)."""
    import matplotlib

    matplotlib.use("Agg")
    gs = frames["group_status"]
    ps = frames["partition_status"]
    rb = frames["rebalances"]
    rs = frames["rebalance_summary"]
    series = frames["group_lag_series"]
    figures = [
        ("Lag over time", plot_lag(series)),
        ("Rebalance timeline", plot_timeline(rb)),
        ("Rebalance durations", plot_durations(rb)),
        ("Partitions moved", plot_moved(rb)),
    ]
    evaluated = datetime.fromtimestamp(now_ms / 1000, UTC).isoformat()
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title>",
        "<style>body{font-family:sans-serif;margin:2em;}table{border-collapse:collapse;font-size:12px;}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left;}h2{margin-top:1.5em;}</style>",
        "</head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f"<p>Status evaluated at {html.escape(evaluated)} (Burrow's rules). {len(gs)} groups, "
        f"{len(ps)} group-partitions, {len(rb)} rebalances.</p>",
        "<h2>Group status</h2>",
        _table(gs, status_column="status"),
    ]
    if gs.empty:
        parts.insert(-2, f"<p class='empty'>{NO_GROUPS}</p>")
    for name, fig in figures:
        parts.append(f"<h2>{html.escape(name)}</h2>")
        parts.append(f"<img alt='{html.escape(name)}' src='data:image/png;base64,{_png(fig)}'/>")
    worst = ps.copy()
    if not worst.empty:
        rank = {"REWIND": 0, "STALL": 1, "STOP": 2, "WARN": 3, "OK": 4}
        worst["_r"] = worst["status"].map(rank)
        worst = worst.sort_values(["_r", "current_lag"], ascending=[True, False]).drop(
            columns=["_r", "window"]
        )
    parts += [
        "<h2>Partition status (worst first)</h2>",
        _table(worst, status_column="status"),
        "<h2>Rebalance summary</h2>",
        _table(rs),
        "<h2>Rebalances</h2>",
        _table(rb.sort_values("started_at", ascending=False) if not rb.empty else rb),
        "</body></html>",
    ]
    return "\n".join(parts)


def write_report(spark: SparkSession, out: Path, *, now_ms: int) -> Path:
    frames = {name: spark.read.parquet(str(out / "tables" / name)).toPandas() for name in REPORT_TABLES}
    target = out / "report.html"
    tmp = out / ".report.html.tmp"
    tmp.write_text(render_html(frames, now_ms=now_ms), encoding="utf-8")
    tmp.replace(target)
    return target
