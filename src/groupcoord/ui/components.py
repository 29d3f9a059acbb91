"""The pieces groupcoord's pages are made of, shared by the pipeline's report (``OUT/report.html``,
after the fact) and the live console (``console.listen``), so both read the same.

Everything here returns HTML text and escapes every value it is given: a group id, member id,
client id or topic name comes from a client and must show as the characters it is. Colours,
sizes and numbers are made here too, never taken from data. The page's behaviour (local times,
sorting, filtering) is ``ui.js`` and its look ``ui.css``, package data read by :func:`asset`.

Pieces: :func:`badge` (a status or cause in colour), :func:`time_html` (a UTC time the script
shows in local time), :class:`Cell` / :func:`table` / :func:`table_row` (sortable, filterable
tables), :func:`svg_lines` (a line chart over time) and :func:`svg_timeline` (rebalances on a time
axis, coloured by cause), with :func:`human_duration` and :func:`human_count` for numbers.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any, NamedTuple

__all__ = [
    "CAUSE_PALETTE",
    "STATUS_COLOURS",
    "Bar",
    "Cell",
    "asset",
    "badge",
    "cause_colours",
    "esc",
    "human_count",
    "human_duration",
    "missing",
    "slug",
    "svg_lines",
    "svg_timeline",
    "table",
    "table_row",
    "time_html",
    "utc_text",
]

#: Statuses and states, each with its colour (Burrow's statuses of the report; the group states).
STATUS_COLOURS = {
    "OK": "#2e7d32",
    "WARN": "#b26a00",
    "ERR": "#c62828",
    "STOP": "#c62828",
    "STALL": "#ad1457",
    "REWIND": "#6a1b9a",
    "Stable": "#2e7d32",
    "PreparingRebalance": "#b26a00",
    "CompletingRebalance": "#b26a00",
    "Empty": "#546e7a",
    "Dead": "#c62828",
    "Assigning": "#b26a00",
    "Reconciling": "#b26a00",
}
#: colours of rebalance causes and chart lines, in order of first use
CAUSE_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


@cache
def asset(name: str) -> str:
    """The text of ``ui.css`` or ``ui.js`` (package data: they ship in the wheel)."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


# ------------------------------------------------------------------------------ values
def esc(v: object) -> str:
    return html.escape(str(v))


def missing(v: Any) -> bool:
    """None or NaN / NaT (what pandas gives for an empty cell)."""
    if v is None:
        return True
    try:
        return bool(v != v)
    except (TypeError, ValueError):
        return False


def human_duration(ms: Any) -> str:
    """``850 ms``, ``12.3 s``, ``4 min 05 s``, ``2 h 03 min``, ``3 d 02 h``; empty when unknown."""
    if missing(ms):
        return ""
    v = float(ms)
    if v < 1000:
        return f"{v:.0f} ms"
    s = v / 1000
    if s < 60:
        return f"{s:.1f} s"
    m, s = divmod(int(s), 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h} h {m:02d} min"
    d, h = divmod(h, 24)
    return f"{d} d {h:02d} h"


def human_count(n: Any) -> str:
    if missing(n):
        return ""
    return f"{int(n):,}"


def utc_text(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def time_html(ms: int | None) -> str:
    """A ``<time>`` in UTC, shown in the reader's zone by ``ui.js``; empty when unknown."""
    if ms is None:
        return ""
    return f"<time data-ms='{int(ms)}'>{utc_text(ms)}</time>"


def badge(status: str, colour: str | None = None) -> str:
    """A status, state or cause in a coloured pill (colour by :data:`STATUS_COLOURS` unless given)."""
    shown = colour or STATUS_COLOURS.get(status, "#546e7a")
    return f"<span class='badge' style='background:{esc(shown)}'>{esc(status)}</span>"


def slug(name: str) -> str:
    """An HTML id for a name (a group id): letters, digits, ``_`` and ``-`` kept, every other
    character written as ``_<hex>``, so two names never share one."""
    return "g-" + re.sub(r"[^A-Za-z0-9_-]", lambda m: f"_{ord(m.group()):x}", name)


def cause_colours(causes: Sequence[str]) -> dict[str, str]:
    """A colour for each cause, in the order given."""
    return {c: CAUSE_PALETTE[i % len(CAUSE_PALETTE)] for i, c in enumerate(causes)}


# ------------------------------------------------------------------------------ tables
class Cell:
    """A table cell: the HTML shown (already escaped) and the value it sorts by."""

    __slots__ = ("css", "html", "num", "sort")

    def __init__(self, shown: str, sort: object = None, *, num: bool = False, css: str = "") -> None:
        self.html = shown
        self.sort = sort
        self.num = num
        self.css = css

    @classmethod
    def text(cls, v: Any, *, css: str = "") -> Cell:
        """Text (escaped), sorted as text; empty for a missing value."""
        return cls("" if missing(v) else esc(v), None, css=css)

    @classmethod
    def count(cls, v: Any) -> Cell:
        return cls(human_count(v), "" if missing(v) else int(v), num=True)

    @classmethod
    def duration(cls, ms: Any) -> Cell:
        return cls(human_duration(ms), "" if missing(ms) else float(ms), num=True)

    @classmethod
    def when(cls, ms: int | None) -> Cell:
        return cls(time_html(ms), "" if ms is None else ms)


def table_row(cells: Sequence[Cell], *, row_id: str | None = None) -> str:
    """One ``<tr>`` (with an ``id`` when given: the console replaces rows by id)."""
    out = ["<tr>" if row_id is None else f"<tr id='{esc(row_id)}'>"]
    for c in cells:
        attrs = "" if c.sort is None else f" data-v='{esc(c.sort)}'"
        classes = " ".join(x for x in ("num" if c.num else "", c.css) if x)
        attrs += f" class='{classes}'" if classes else ""
        out.append(f"<td{attrs}>{c.html}</td>")
    out.append("</tr>")
    return "".join(out)


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Cell]],
    *,
    filter_label: str,
    row_ids: Sequence[str] | None = None,
    table_id: str | None = None,
    max_rows: int | None = None,
    more_note: str = "more rows",
) -> str:
    """A filter box and a sortable table (``ui.js``); at most ``max_rows`` rows, then a note
    saying how many more there are (``"<n> <more_note>."``)."""
    shown = rows if max_rows is None else rows[:max_rows]
    ident = "" if table_id is None else f" id='{esc(table_id)}'"
    out = [
        f"<input class='filter' type='search' placeholder='Filter {esc(filter_label)}…' "
        f"aria-label='Filter {esc(filter_label)}'>",
        f"<table class='data'{ident}><thead><tr>",
        *[f"<th>{esc(h)}</th>" for h in headers],
        "</tr></thead><tbody>",
    ]
    for i, row in enumerate(shown):
        out.append(table_row(row, row_id=None if row_ids is None else row_ids[i]))
    out.append("</tbody></table>")
    if len(rows) > len(shown):
        out.append(f"<p class='note'>{len(rows) - len(shown):,} {esc(more_note)}.</p>")
    return "".join(out)


# ------------------------------------------------------------------------------ charts (SVG)
def svg_lines(
    series: Sequence[tuple[str, Sequence[int], Sequence[float]]],
    *,
    title: str,
    y_format: Callable[[float], str],
    width: int = 760,
    height: int = 190,
) -> str:
    """A small line chart of (name, x epoch ms, y) series; tick labels are rewritten to local
    time by ``ui.js``."""
    points = [(x, y) for _, xs, ys in series for x, y in zip(xs, ys, strict=True) if not missing(y)]
    if not points:
        return f"<p class='note'>{esc(title)}: no data.</p>"
    left, right, top, bottom = 70, 10, 22, 28
    x0 = min(p[0] for p in points)
    x1 = max(p[0] for p in points)
    y1 = max(max(p[1] for p in points), 1.0)
    xs_span = max(x1 - x0, 1)

    def sx(x: float) -> float:
        return left + (x - x0) / xs_span * (width - left - right)

    def sy(y: float) -> float:
        return height - bottom - y / y1 * (height - top - bottom)

    out = [
        f"<svg role='img' aria-label='{esc(title)}' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}'>",
        f"<text x='{left}' y='14' style='font-weight:600'>{esc(title)}</text>",
        f"<line x1='{left}' y1='{height - bottom}' x2='{width - right}' y2='{height - bottom}' "
        "stroke='#999'/>",
        f"<line x1='{left}' y1='{top}' x2='{left}' y2='{height - bottom}' stroke='#999'/>",
    ]
    for i in range(5):
        y = y1 * i / 4
        out.append(
            f"<text x='{left - 4}' y='{sy(y) + 4:.1f}' text-anchor='end'>{esc(y_format(y))}</text>"
            f"<line x1='{left}' y1='{sy(y):.1f}' x2='{width - right}' y2='{sy(y):.1f}' stroke='#eee'/>"
        )
    for i in range(6):
        x = x0 + xs_span * i / 5
        label = datetime.fromtimestamp(x / 1000, UTC).strftime("%H:%M")
        anchor = "start" if i == 0 else "end" if i == 5 else "middle"
        out.append(
            f"<text data-ms='{int(x)}' x='{sx(x):.1f}' y='{height - bottom + 14}' "
            f"text-anchor='{anchor}'>{label}</text>"
        )
    for i, (name, xs, ys) in enumerate(series):
        colour = CAUSE_PALETTE[i % len(CAUSE_PALETTE)]
        pts = " ".join(
            f"{sx(x):.1f},{sy(float(y)):.1f}" for x, y in zip(xs, ys, strict=True) if not missing(y)
        )
        out.append(f"<polyline fill='none' stroke='{colour}' stroke-width='1.5' points='{pts}'><title>")
        out.append(f"{esc(name)}</title></polyline>")
    out.append("</svg>")
    return "".join(out)


class Bar(NamedTuple):
    """One rebalance on a timeline: when it began, how long it took (None: unknown, drawn as a
    sliver), its cause, and whether the group stood still meanwhile (a classic rebalance) or its
    members reconciled while they kept consuming (a KIP-848 consumer group's epoch bump)."""

    start_ms: int
    duration_ms: float | None
    cause: str
    stopped: bool = True


def svg_timeline(
    bars: Sequence[Bar], colours: Mapping[str, str], *, start_ms: int, end_ms: int, width: int = 760
) -> str:
    """Rebalances of one group on a time axis: a bar from start to Stable, coloured by cause."""
    height, left, right = 64, 70, 10
    span = max(end_ms - start_ms, 1)

    def sx(x: float) -> float:
        return left + (x - start_ms) / span * (width - left - right)

    out = [
        f"<svg role='img' aria-label='rebalance timeline' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}'>",
        "<text x='0' y='30'>rebalances</text>",
        f"<line x1='{left}' y1='40' x2='{width - right}' y2='40' stroke='#999'/>",
    ]
    for i in range(6):
        x = start_ms + span * i / 5
        label = datetime.fromtimestamp(x / 1000, UTC).strftime("%H:%M")
        anchor = "start" if i == 0 else "end" if i == 5 else "middle"
        out.append(f"<text data-ms='{int(x)}' x='{sx(x):.1f}' y='56' text-anchor='{anchor}'>{label}</text>")
    for bar in bars:
        d = 0.0 if bar.duration_ms is None else float(bar.duration_ms)
        w = max(sx(bar.start_ms + d) - sx(bar.start_ms), 2.0)
        out.append(
            f"<rect x='{sx(bar.start_ms):.1f}' y='18' width='{w:.1f}' height='20' "
            f"fill='{esc(colours.get(bar.cause, '#777'))}'>"
            f"<title>{esc(bar.cause)}: {esc(utc_text(bar.start_ms))}, "
            f"{'stopped' if bar.stopped else 'nobody stopped; reconciled in'} "
            f"{esc(human_duration(bar.duration_ms) or 'unknown')}</title></rect>"
        )
    out.append("</svg>")
    return "".join(out)
