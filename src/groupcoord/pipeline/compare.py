"""The two rebalance protocols side by side, from the ``rebalances`` table (pandas, Spark-free).

A data directory that holds classic groups and KIP-848 consumer groups (``groupcoord simulate
--protocol mixed`` writes twins of each group) answers: per protocol and cause, how many
rebalances, how many members stopped, how many partitions moved, how long the group took to
reconcile and how long it stood still. The report shows it (:mod:`groupcoord.pipeline.report`) and
``scripts/gen_protocol_comparison.py`` writes it into ``docs/simulator-protocols.md``.

* **members stopped**: a classic rebalance stops every member that was in the group before it and
  is still in it after (``min(members_before, members_after)``: a joining member was not
  processing yet, a leaving one is gone); a consumer-group epoch bump stops nobody;
* **members reconciling**: members whose partitions changed (a consumer group's
  ``members_affected``; unknown for classic rows, where every member gives its partitions up
  under eager assignors and re-takes them in the same rebalance);
* **reconciliation ms**: the rebalance's duration (classic: PreparingRebalance to Stable; consumer:
  the epoch bump until every member reconciled);
* **group stopped ms**: the sum of the durations of the rebalances that stopped the world.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

#: the columns of :func:`protocol_comparison`, in order
COLUMNS = (
    "cause",
    "protocol",
    "rebalances",
    "members_stopped",
    "members_reconciling",
    "partitions_moved",
    "median_partitions_moved",
    "median_reconcile_ms",
    "max_reconcile_ms",
    "group_stopped_ms",
)
#: headings of :data:`COLUMNS` for people
HEADINGS = (
    "Cause",
    "Protocol",
    "Rebalances",
    "Members stopped",
    "Members reconciling",
    "Partitions moved",
    "Moved (median)",
    "Reconciliation ms (median)",
    "Reconciliation ms (max)",
    "Group stopped ms",
)
#: the ``cause`` of a protocol's row over all its rebalances
ALL = "(all)"


def has_both_protocols(rebalances: pd.DataFrame) -> bool:
    """Whether the table holds classic rebalances and consumer-group epoch bumps."""
    if rebalances.empty or "protocol" not in rebalances:
        return False
    return {"classic", "consumer"} <= set(rebalances["protocol"].dropna())


def protocol_comparison(rebalances: pd.DataFrame) -> pd.DataFrame:
    """One row per (cause, protocol) and one per protocol over all causes (``cause`` =
    :data:`ALL`, first), in :data:`COLUMNS`. Rebalances that did not finish (``incomplete``) are
    counted but give no times."""
    import pandas as pd

    if rebalances.empty or "protocol" not in rebalances:
        return pd.DataFrame(columns=list(COLUMNS))
    rb = rebalances.assign(
        protocol=rebalances["protocol"].fillna("classic"),
        cause=rebalances["cause"].fillna("unknown"),
        stop_the_world=rebalances["stop_the_world"].fillna(True).astype(bool),
    )
    rows: list[dict[str, Any]] = []
    for protocol in sorted(rb["protocol"].unique()):
        mine = rb[rb["protocol"] == protocol]
        rows.append(_row(ALL, protocol, mine))
    for (cause, protocol), mine in sorted(rb.groupby(["cause", "protocol"]), key=lambda kv: kv[0]):
        rows.append(_row(str(cause), str(protocol), mine))
    return pd.DataFrame(rows, columns=list(COLUMNS))


def _row(cause: str, protocol: str, rb: pd.DataFrame) -> dict[str, Any]:
    stops = rb[rb["stop_the_world"]]
    stopped_members = stops[["members_before", "members_after"]].fillna(0).min(axis=1).sum()
    done = rb[rb["outcome"] != "incomplete"]["duration_ms"].dropna()
    moved = rb["partitions_moved"].dropna()
    affected = rb["members_affected"].dropna() if "members_affected" in rb else rb.iloc[0:0]["cause"]
    return {
        "cause": cause,
        "protocol": protocol,
        "rebalances": len(rb),
        "members_stopped": int(stopped_members),
        "members_reconciling": int(affected.sum()) if len(affected) else None,
        "partitions_moved": int(moved.sum()),
        "median_partitions_moved": float(moved.median()) if len(moved) else None,
        "median_reconcile_ms": float(done.median()) if len(done) else None,
        "max_reconcile_ms": int(done.max()) if len(done) else None,
        "group_stopped_ms": int(stops["duration_ms"].fillna(0).sum()),
    }


def markdown_table(comparison: pd.DataFrame) -> str:
    """:func:`protocol_comparison` as a Markdown table (numbers right-aligned; none: ``-``)."""
    lines = ["| " + " | ".join(HEADINGS) + " |", "|---|---|" + "---:|" * (len(HEADINGS) - 2)]
    for _, r in comparison.iterrows():
        lines.append("| " + " | ".join(_text(r[c]) for c in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


def _text(v: Any) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return "-"
    if isinstance(v, float) and v.is_integer():
        return f"{int(v)}"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)
