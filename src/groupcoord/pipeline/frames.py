"""Column helpers the pipeline's tables share (timestamps as epoch milliseconds, time ranges)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

__all__ = ["ms", "within"]


def ms(c: Column | str) -> Column:
    """A timestamp column as epoch milliseconds."""
    return F.unix_millis(F.col(c) if isinstance(c, str) else c)


def within(df: DataFrame, column: str, since_ms: int | None, until_ms: int | None) -> DataFrame:
    """Rows whose ``column`` (a timestamp) lies in [since, until)."""
    if since_ms is not None:
        df = df.where(ms(column) >= F.lit(since_ms))
    if until_ms is not None:
        df = df.where(ms(column) < F.lit(until_ms))
    return df
