"""The one-pass commit tables (``commitpass``) give exactly the rows of the general path.

The general path has Spark write ``offset_commits``, compute ``lag`` with an Arrow UDF over it and
evaluate ``partition_status`` over all of ``lag``; the direct path writes both tables from the
decoding tasks with pyarrow and evaluates ``partition_status`` over each task's last commits per
group-partition. Both are run over the same directories and every table is compared row for row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads
import pytest

from groupcoord.pipeline.analyze import TABLES, AnalyzeOptions, AnalyzeResult, _pyarrow_codec, run_analysis
from groupcoord.pipeline.commitpass import last_n_per_key
from groupcoord.pipeline.health import BurrowConfig
from groupcoord.pipeline.rebalances import StormConfig
from groupcoord.pipeline.simulate import EPOCH_MS, SimulationConfig, simulate

from .scenario import END, T0, Written


def _rows(out: Path, table: str) -> tuple[pa.Schema, list[str]]:
    t = pads.dataset(str(out / "tables" / table), format="parquet").to_table()
    return t.schema.remove_metadata(), sorted(repr(r) for r in t.to_pylist())


def _assert_same_tables(direct: AnalyzeResult, general: AnalyzeResult) -> None:
    assert direct.row_counts["offset_commits"] > 0
    for table in TABLES:
        d_schema, d_rows = _rows(direct.out, table)
        g_schema, g_rows = _rows(general.out, table)
        assert d_schema == g_schema, table
        assert len(d_rows) == direct.row_counts[table] == general.row_counts[table], table
        assert d_rows == g_rows, table
    assert direct.now_ms == general.now_ms


def test_last_n_per_key_keeps_each_keys_largest_log_offsets_and_their_ties() -> None:
    t = pa.table(
        {
            "group_id": ["g", "g", "g", "g", "g", "h", None, None, "g"],
            "topic": ["t", "t", "t", "t", "t", "t", "t", "t", "u"],
            "partition": pa.array([0, 0, 0, 0, 0, 0, 0, 0, None], pa.int32()),
            "log_offset": pa.array([5, 9, 7, 7, 1, 3, 2, 8, None], pa.int64()),
            "tag": ["a", "b", "c", "d", "e", "f", "g", "h", "i"],
        }
    )
    kept = last_n_per_key(t, 2).column("tag").to_pylist()
    # (g,t,0): 9 and the two tied 7s, in input order; (h,t,0): its one row; (null,t,0): both rows;
    # (g,u,null) with a null log_offset: its only row
    assert kept == ["b", "c", "d", "f", "g", "h", "i"]
    assert last_n_per_key(t, 1).column("tag").to_pylist() == ["b", "f", "h", "i"]
    assert last_n_per_key(t, 0).num_rows == 0
    assert last_n_per_key(t.slice(0, 0), 3).num_rows == 0


@pytest.mark.spark
def test_direct_tables_equal_the_general_path_over_many_splits_with_a_time_range(
    spark: Any, tmp_path: Path
) -> None:
    config = SimulationConfig(
        groups=3, members=3, minutes=6, seed=5, partitions=4, offsets_partitions=3, commit_interval_ms=1_000
    )
    simulate(tmp_path / "data", config)

    # 64 KiB splits, one task each: each __consumer_offsets partition (113-151 KB here) is read by 2-3
    # tasks, so a group-partition's last-commits rows from several tasks are combined; the time range
    # cuts commits at both ends. (32 KiB splits tested the same with twice the tasks and 14 s more.)
    def options(direct: bool) -> AnalyzeOptions:
        return AnalyzeOptions(
            since_ms=EPOCH_MS + 40_000,
            until_ms=EPOCH_MS + 5 * 60_000,
            burrow=BurrowConfig(intervals=4, allowed_lag=0),
            split_bytes=64 * 1024,
            pack_bytes=0,
            report=False,
            direct_tables=direct,
        )

    direct = run_analysis(spark, tmp_path / "data", tmp_path / "direct", options(True))
    general = run_analysis(spark, tmp_path / "data", tmp_path / "general", options(False))
    _assert_same_tables(direct, general)
    # the status was evaluated over far fewer rows than lag has
    assert direct.row_counts["_lag_tails"] < direct.row_counts["lag"] // 5
    assert "_lag_tails" not in general.row_counts


@pytest.mark.spark
def test_direct_tables_equal_the_general_path_on_the_scripted_scenario(
    spark: Any, scripted: tuple[Written, AnalyzeResult], tmp_path: Path
) -> None:
    written, direct = scripted
    general = run_analysis(
        spark,
        written.data_dir,
        tmp_path / "general",
        AnalyzeOptions(
            until_ms=T0 + END,
            burrow=BurrowConfig(intervals=3, allowed_lag=0),
            storms=StormConfig(count=3, minutes=1),
            direct_tables=False,
        ),
    )
    _assert_same_tables(direct, general)


def test_commit_pass_files_use_the_sessions_parquet_codec_as_pyarrow_names_it() -> None:
    assert _pyarrow_codec(None) == "snappy"
    assert _pyarrow_codec("SNAPPY") == "snappy"
    assert _pyarrow_codec("uncompressed") == "none"
    assert _pyarrow_codec("zstd") == "zstd"
    assert _pyarrow_codec("gzip") == "gzip"
    assert _pyarrow_codec("lz4_raw") == "lz4"
    # Hadoop-framed lz4, lzo, brotli: not written by pyarrow the way Spark means them
    assert _pyarrow_codec("lz4") == "snappy"
    assert _pyarrow_codec("brotli") == "snappy"


@pytest.mark.spark
def test_commit_pass_writes_one_renamed_snappy_file_per_task_with_sparks_schema(
    scripted: tuple[Written, AnalyzeResult],
) -> None:
    import json

    import pyarrow.parquet as pq

    _written, result = scripted
    for table in ("offset_commits", "lag"):
        d = result.out / "tables" / table
        names = sorted(p.name for p in d.iterdir())
        parts = [n for n in names if n.endswith(".parquet")]
        assert names == ["_SUCCESS", *parts] and parts == [f"part-{i:05d}.parquet" for i in range(len(parts))]
        md = pq.read_metadata(d / parts[0])
        assert md.row_group(0).column(0).compression == "SNAPPY"
        spark_schema = json.loads(md.metadata[b"org.apache.spark.sql.parquet.row.metadata"])
        assert [f["name"] for f in spark_schema["fields"]] == md.schema.names
