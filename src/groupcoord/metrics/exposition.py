"""The scrape-time metrics as text: Prometheus' text format 0.0.4 and OpenMetrics 1.0.

A scrape's snapshot becomes a list of :class:`Family` (a name, its help, gauge or counter, label
names and the samples). They are written here straight to text instead of through
``prometheus_client``'s generic ``Metric`` objects and ``generate_latest``. That path builds a
sample object with a label dict per series and formats it field by field, about 12 µs per series.
A broker with 100,000 committed offsets exposes some 500,000 series, so a scrape cost about 6 s of
CPU on the HTTP thread, which shares the interpreter with the event loop. Here, each family gets
one line template, label values are escaped only when they hold a character that needs it, and a
series costs a few µs.

The output is the same, byte for byte, as ``prometheus_client``'s for the same families, in
both formats: label names sorted, label values escaped (backslash, newline, double quote), values
as Go prints floats, counters' ``_total`` sample names (and, in the 0.0.4 format, ``_total``
family names). :func:`as_prometheus_metric` builds the same family the ``prometheus_client`` way:
the reference that ``tests/metrics/test_exposition.py`` compares against byte for byte, and
``bench/metrics_bench.py`` times against.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.utils import floatToGoString

__all__ = ["Family", "as_prometheus_metric", "render"]


class Family(NamedTuple):
    """One metric family of a scrape."""

    name: str
    doc: str
    #: "gauge" or "counter" (a counter's samples are named ``<name>_total``)
    kind: str
    labels: tuple[str, ...]
    #: (label values in the order of :attr:`labels`, value)
    samples: Sequence[tuple[Sequence[str], float]]


def _escape(value: str) -> str:
    if "\\" in value or "\n" in value or '"' in value:
        return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
    return value


def _value(v: float) -> str:
    # floatToGoString's result for the integers that most series hold, without its float
    # round trip: Python and Go agree on integers below a million; above, Go uses an exponent.
    if type(v) is int and -1_000_000 < v < 1_000_000:
        return f"{v}.0"
    text: str = floatToGoString(v)  # type: ignore[no-untyped-call]
    return text


def render(families: Iterable[Family], *, openmetrics: bool) -> str:
    """The families as text, in the 0.0.4 format or (``openmetrics``) as OpenMetrics without
    the closing ``# EOF`` line (the caller adds it after the other metrics)."""
    out: list[str] = []
    for f in families:
        sample_name = f"{f.name}_total" if f.kind == "counter" else f.name
        if openmetrics:
            family_name = f.name
            doc = f.doc.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")
        else:
            family_name = sample_name
            doc = f.doc.replace("\\", r"\\").replace("\n", r"\n")
        out.append(f"# HELP {family_name} {doc}\n# TYPE {family_name} {f.kind}\n")
        if not f.labels:
            out.extend(f"{sample_name} {_value(v)}\n" for _, v in f.samples)
            continue
        order = sorted(range(len(f.labels)), key=f.labels.__getitem__)
        head = sample_name + "{"
        pieces = [f'{f.labels[i]}="' for i in order]
        joins = [pieces[0]] + ['",' + p for p in pieces[1:]]
        if len(order) == 3:
            # (group, topic, partition): the offsets' families, most of a large scrape's series.
            # Written out, this is a third faster than the general line below.
            a, b, c = order
            ja, jb, jc = joins
            out.extend(
                f'{head}{ja}{_escape(vals[a])}{jb}{_escape(vals[b])}{jc}{_escape(vals[c])}"}} {_value(v)}\n'
                for vals, v in f.samples
            )
            continue
        pairs = list(zip(joins, order, strict=True))
        out.extend(
            head + "".join([j + _escape(vals[i]) for j, i in pairs]) + f'"}} {_value(v)}\n'
            for vals, v in f.samples
        )
    return "".join(out)


def as_prometheus_metric(f: Family) -> Metric:
    """The family as ``prometheus_client`` builds one (the reference rendering)."""
    metric: Metric
    if f.kind == "counter":
        metric = CounterMetricFamily(f.name, f.doc, labels=list(f.labels))
    else:
        metric = GaugeMetricFamily(f.name, f.doc, labels=list(f.labels))
    for values, v in f.samples:
        metric.add_metric(list(values), v)  # type: ignore[attr-defined]
    return metric
