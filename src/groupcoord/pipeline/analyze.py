"""``groupcoord analyze``: read a data directory, write the tables as Parquet and the HTML report.

The raw ``__consumer_offsets`` records are decoded once (Python, in the data source) into Parquet;
everything after that is JVM-side SQL over Parquet. The data directory must be readable at the same
path by every executor (local mode trivially; on a cluster: a shared file system).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from groupcoord.constants import GROUP_EVENTS_TOPIC, OFFSETS_TOPIC
from groupcoord.pipeline import decoders, health
from groupcoord.pipeline import lag as lag_tables
from groupcoord.pipeline import rebalances as rebalance_tables
from groupcoord.pipeline.frames import within
from groupcoord.pipeline.segments import DEFAULT_SPLIT_BYTES, list_partitions, topic_names_by_id

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)

TABLES = (
    "offset_commits",
    "group_generations",
    "partition_ownership",
    "partition_movement",
    "group_events",
    "rebalances",
    "lag",
    "partition_status",
    "group_status",
    "rebalance_summary",
    "group_lag_series",
)


@dataclass(frozen=True, kw_only=True, slots=True)
class AnalyzeOptions:
    since_ms: int | None = None
    until_ms: int | None = None
    burrow: health.BurrowConfig = field(default_factory=health.BurrowConfig)
    storms: rebalance_tables.StormConfig = field(default_factory=rebalance_tables.StormConfig)
    split_bytes: int = DEFAULT_SPLIT_BYTES
    #: small segments are packed into input partitions of up to this many bytes (0: one per segment)
    pack_bytes: int = 32 * 1024 * 1024
    report: bool = True
    #: run the lag and the rebalance halves of the pipeline as concurrent Spark jobs (measured slower
    #: on 2 cores: both halves are CPU-bound; may help on more cores)
    concurrent: bool = False
    #: write ``offset_commits`` and ``lag`` from the decoding tasks with pyarrow in one pass and give
    #: ``partition_status`` only each group-partition's last commits (``commitpass``); False: the
    #: general path (Spark writes both tables; the lag as an Arrow UDF over ``offset_commits``)
    direct_tables: bool = True


@dataclass(frozen=True, kw_only=True, slots=True)
class AnalyzeResult:
    out: Path
    now_ms: int
    row_counts: dict[str, int]
    stage_seconds: dict[str, float]
    report: Path | None
    #: CPU seconds (user + system) of the driver, the JVM and the Python workers per stage
    stage_cpu_seconds: dict[str, float] = field(default_factory=dict)


Progress = Callable[[int, int, str, float], None]
T = TypeVar("T")


class _Stages:
    """Per-stage wall time (since the same thread's previous stage) and, while stages run one at a
    time, CPU time of the whole process tree."""

    def __init__(self, total: int, progress: Progress | None) -> None:
        self.total = total
        self.done = 0
        self.progress = progress
        self.seconds: dict[str, float] = {}
        self.cpu_seconds: dict[str, float] = {}
        self._lock = threading.Lock()
        self._local = threading.local()
        self._start = time.perf_counter()
        self._cpu = self._cpu0 = process_tree_cpu_seconds()

    def _since(self) -> float:
        t: float = getattr(self._local, "t", self._start)
        return t

    def begin_branch(self, started: float) -> None:
        """Time this thread's next stage from ``started`` (a branch running in a new thread)."""
        self._local.t = started

    def total_cpu(self) -> float:
        return round(process_tree_cpu_seconds() - self._cpu0, 3)

    def step(self, name: str) -> None:
        now = time.perf_counter()
        elapsed = now - self._since()
        self._local.t = now
        cpu = process_tree_cpu_seconds()
        with self._lock:
            self.cpu_seconds[name] = round(cpu - self._cpu, 3)
            self._cpu = cpu
            self.done += 1
            self.seconds[name] = round(elapsed, 3)
            done = self.done
        log.info("analyze stage %d/%d %s %.2fs", done, self.total, name, elapsed)
        if self.progress is not None:
            self.progress(done, self.total, name, elapsed)


def process_tree_cpu_seconds() -> float:
    """User + system CPU seconds of this process and all its live descendants (the Spark JVM and its
    Python workers in local mode), from /proc; 0.0 where /proc is not available."""
    import os

    try:
        tick = os.sysconf("SC_CLK_TCK")
        stats: dict[int, tuple[int, float]] = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open(f"/proc/{entry}/stat") as f:
                    raw = f.read()
            except OSError:
                continue
            fields = raw[raw.rindex(")") + 2 :].split()
            stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    except (OSError, ValueError):
        return 0.0
    children: dict[int, list[int]] = {}
    for pid, (ppid, _cpu) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total = 0.0
    todo = [os.getpid()]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
        todo.extend(children.get(pid, ()))
    return total


def data_topics(data_dir: Path) -> list[str]:
    """Topics in the data directory other than the broker's internal ones."""
    return sorted({t for t, _p, _d in list_partitions(data_dir) if not t.startswith("__")})


def run_analysis(
    spark: SparkSession,
    data_dir: Path,
    out: Path,
    options: AnalyzeOptions | None = None,
    *,
    progress: Progress | None = None,
) -> AnalyzeResult:
    from pyspark.sql import functions as F

    opts = options or AnalyzeOptions()
    data_dir = data_dir.resolve()
    out = out.resolve()
    tdir = out / "tables"
    tdir.mkdir(parents=True, exist_ok=True)
    stages = _Stages((14 if opts.report else 13) - (1 if opts.direct_tables else 0), progress)
    counts: dict[str, int] = {}
    path = str(data_dir)
    split = str(opts.split_bytes)
    pack = str(opts.pack_bytes)

    def save(name: str, df: DataFrame) -> DataFrame:
        target = str(tdir / name)
        writer = df.write.mode("overwrite")
        if name.startswith("_"):
            # bronze work tables are written once and read a few times: skip compression (measured
            # ~35% faster to write than snappy on 2 cores)
            writer = writer.option("compression", "none")
        writer.parquet(target)
        # read back with the schema just written: inferring it would run one more Spark job (a
        # footer read) per table
        back = spark.read.schema(df.schema).parquet(target)
        counts[name] = _parquet_rows(Path(target))
        stages.step(name)
        return back

    # the commits pass notes, per sound split, which batches hold other records; the pass for the
    # others then decodes only those (when the bytes are unchanged; otherwise it reads everything)
    memo_dir = tdir / "_decode_memo"
    shutil.rmtree(memo_dir, ignore_errors=True)

    def offsets_source(rows: str, columns: tuple[str, ...] | None = None) -> DataFrame:
        reader = spark.read.format("consumer-offsets")
        if columns is not None:
            types = dict(decoders.OFFSETS_COLUMNS)
            reader = reader.schema(decoders.ddl((c, types[c]) for c in columns))
        return (
            reader.option("topics", OFFSETS_TOPIC)
            .option("splitBytes", split)
            .option("packBytes", pack)
            .option("rows", rows)
            .option("memo", str(memo_dir))
            .load(path)
        )

    topics = data_topics(data_dir)
    batches_df = (
        spark.read.format("kafka-log-batches")
        .option("topics", ",".join(topics) if topics else "__none__")
        .option("splitBytes", split)
        .option("packBytes", pack)
        .load(path)
    )
    if opts.until_ms is not None:
        batches_df = batches_df.where(F.unix_millis("max_timestamp") < F.lit(opts.until_ms))
    batches = save("_log_batches", batches_df)
    ev_raw = (
        spark.read.format("kafka-log")
        .option("topics", GROUP_EVENTS_TOPIC)
        .option("splitBytes", split)
        .option("packBytes", pack)
        .load(path)
    )
    events = save(
        "group_events", within(rebalance_tables.group_events(ev_raw), "time", opts.since_ms, opts.until_ms)
    )

    def commit_pass() -> tuple[DataFrame, DataFrame, DataFrame]:
        """offset_commits and lag written by the decoding tasks (pyarrow), and the last commits of
        each group-partition per task as ``_lag_tails`` (what partition_status needs)."""
        from groupcoord.pipeline import commitpass

        for name in ("offset_commits", "lag"):
            shutil.rmtree(tdir / name, ignore_errors=True)
            (tdir / name).mkdir(parents=True)
        reader = (
            spark.read.format("commit-tables")
            .option("tablesDir", str(tdir))
            .option("logBatches", str(tdir / "_log_batches"))
            .option("intervals", str(opts.burrow.intervals))
            .option("splitBytes", split)
            .option("packBytes", pack)
            .option("memo", str(memo_dir))
            .option("compression", _pyarrow_codec(spark.conf.get("spark.sql.parquet.compression.codec")))
        )
        if opts.since_ms is not None:
            reader = reader.option("sinceMs", str(opts.since_ms))
        if opts.until_ms is not None:
            reader = reader.option("untilMs", str(opts.until_ms))
        tails_df = reader.load(path)
        target = tdir / "_lag_tails"
        tails_df.write.mode("overwrite").option("compression", "none").parquet(str(target))
        tails = spark.read.schema(tails_df.schema).parquet(str(target))
        counts["_lag_tails"] = _parquet_rows(target)
        frames = []
        for name, struct in (
            ("offset_commits", commitpass.commits_struct()),
            ("lag", commitpass.struct_type(commitpass.TAIL_COLUMNS)),
        ):
            d = tdir / name
            for leftover in d.glob(".*.tmp"):  # an attempt that died before renaming its file
                leftover.unlink(missing_ok=True)
            (d / "_SUCCESS").touch()
            counts[name] = _parquet_rows(d)
            frames.append(spark.read.schema(struct).parquet(str(d)))
        stages.step("offset_commits+lag")
        return frames[0], frames[1], tails

    def lag_branch() -> int:
        # The offset commits (the bulk of __consumer_offsets) go straight to their table; the bronze
        # table keeps every other record (group metadata, tombstones, unknown/undecodable, corrupt
        # markers). Decoding twice (vectorised) is cheaper than writing and re-reading all records.
        # With rows=commits the source has already applied offset_commits' filter, so only the
        # table's own columns cross from Python to the JVM (tests/pipeline/test_vectorized.py shows the
        # result equals rebalances.offset_commits over the full decode).
        if opts.direct_tables:
            commits, lag, recent = commit_pass()
        else:
            commits = save(
                "offset_commits",
                within(
                    offsets_source("commits", rebalance_tables.OFFSET_COMMITS_COLUMNS),
                    "commit_time",
                    opts.since_ms,
                    opts.until_ms,
                ),
            )
            lag = recent = save("lag", lag_tables.lag(commits, batches))
        now_ms = opts.until_ms if opts.until_ms is not None else _latest_ms(tdir, commits, batches, events)
        # with direct tables `recent` holds only each group-partition's last commits per task, a
        # superset of every last-`intervals` window: the same statuses (tests/pipeline/test_commit_pass.py)
        pstatus = save(
            "partition_status", health.partition_status(recent, batches, now_ms=now_ms, config=opts.burrow)
        )
        save("group_status", health.group_status(pstatus))
        save("group_lag_series", lag_tables.group_lag_series(lag, _bucket_ms(tdir, lag)))
        return now_ms

    def rebalance_branch() -> None:
        offsets = save("_offsets_records", offsets_source("others"))
        shutil.rmtree(memo_dir, ignore_errors=True)
        gm = offsets
        if opts.until_ms is not None:
            gm = gm.where(F.unix_millis("record_time") < F.lit(opts.until_ms))
        generations = save("group_generations", rebalance_tables.group_generations(gm))
        # consumer groups' records name topics by id: the data directory's topic registry names them
        names = topic_names_by_id(data_dir)
        topic_names = spark.createDataFrame(sorted(names.items()), "topic_id string, topic string")
        cg_generations, cg_ownership = rebalance_tables.consumer_target_ownership(gm, topic_names)
        ownership = save(
            "partition_ownership",
            rebalance_tables.all_ownership(rebalance_tables.partition_ownership(generations), cg_ownership),
        )
        movement = save(
            "partition_movement", rebalance_tables.all_movement(generations, cg_generations, ownership)
        )
        rebalances = save(
            "rebalances", rebalance_tables.all_rebalances(events, generations, movement, ownership)
        )
        save("rebalance_summary", rebalance_tables.rebalance_summary(rebalances, opts.storms))

    if opts.concurrent:
        # The two branches share no tables; running them as concurrent Spark jobs lets the small,
        # latency-bound rebalance stages fill the cores the big lag stages leave idle. (Per-stage
        # CPU seconds then overlap: each stage is charged what the process tree used since the
        # previous stage of either branch finished.)
        forked = time.perf_counter()

        def branch(fn: Callable[[], T]) -> Callable[[], T]:
            def run() -> T:
                stages.begin_branch(forked)
                return fn()

            return run

        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="analyze") as pool:
            rebalance_done = pool.submit(branch(rebalance_branch))
            lag_done = pool.submit(branch(lag_branch))
            now_ms = lag_done.result()
            rebalance_done.result()
        stages.begin_branch(time.perf_counter())
    else:
        now_ms = lag_branch()
        rebalance_branch()

    shutil.rmtree(memo_dir, ignore_errors=True)
    report_path: Path | None = None
    if opts.report:
        from groupcoord.pipeline.report import write_report

        report_path = write_report(spark, out, now_ms=now_ms, data_dir=data_dir)
        stages.step("report")
    return AnalyzeResult(
        out=out,
        now_ms=now_ms,
        row_counts=counts,
        stage_seconds=stages.seconds,
        report=report_path,
        stage_cpu_seconds={**stages.cpu_seconds, "total": stages.total_cpu()},
    )


def _pyarrow_codec(spark_codec: str | None) -> str:
    """Spark's Parquet codec setting as pyarrow's name (Hadoop-framed ``lz4`` and codecs pyarrow
    does not write fall back to Spark's default, snappy)."""
    codec = (spark_codec or "snappy").lower()
    names = {"none": "none", "uncompressed": "none", "snappy": "snappy", "gzip": "gzip", "zstd": "zstd"}
    return names.get(codec, "lz4" if codec == "lz4_raw" else "snappy")


def _parquet_rows(directory: Path) -> int:
    """Rows in a Parquet directory written by Spark, from the files' footers (no Spark job)."""
    import pyarrow.parquet as pq

    return sum(pq.read_metadata(f).num_rows for f in sorted(directory.glob("*.parquet")))


def parquet_ms_range(directory: Path, column: str) -> tuple[int, int] | None:
    """(min, max) of a timestamp column in epoch milliseconds (floored, as ``unix_millis``) from the
    Parquet footers' statistics of a directory Spark wrote, without a Spark job; ``None`` when
    they cannot tell (no rows, no statistics, not INT64 microseconds) — ask Spark then."""
    import json

    import pyarrow.parquet as pq

    lo: int | None = None
    hi: int | None = None
    for f in sorted(directory.glob("*.parquet")):
        md = pq.read_metadata(f)
        names = [md.schema.column(i).path for i in range(md.num_columns)]
        if column not in names:
            return None
        i = names.index(column)
        logical = json.loads(md.schema.column(i).logical_type.to_json())
        if (
            md.schema.column(i).physical_type != "INT64"
            or logical.get("Type") != "Timestamp"
            or logical.get("timeUnit") != "microseconds"
        ):
            return None
        for g in range(md.num_row_groups):
            chunk = md.row_group(g).column(i)
            stats = chunk.statistics
            if chunk.num_values == 0:
                continue
            if stats is None or not stats.has_min_max:
                if stats is not None and stats.null_count == chunk.num_values:
                    continue  # all null: nothing to add
                return None
            a, b = int(stats.min_raw), int(stats.max_raw)
            lo = a if lo is None else min(lo, a)
            hi = b if hi is None else max(hi, b)
    if lo is None or hi is None:
        return None
    return lo // 1000, hi // 1000


def _latest_ms(tdir: Path, commits: DataFrame, batches: DataFrame, events: DataFrame) -> int:
    from pyspark.sql import functions as F

    values: list[int] = []
    for name, df, column in (
        ("offset_commits", commits, "commit_time"),
        ("_log_batches", batches, "max_timestamp"),
        ("group_events", events, "time"),
    ):
        known = parquet_ms_range(tdir / name, column)
        if known is not None:
            values.append(known[1])
            continue
        row = df.agg(F.max(F.unix_millis(column))).first()
        if row is not None and row[0] is not None:
            values.append(int(row[0]))
    return max(values) if values else int(time.time() * 1000)


def _bucket_ms(tdir: Path, lag: DataFrame) -> int:
    """A time bucket giving at most ~300 points per group in the lag-over-time series."""
    from pyspark.sql import functions as F

    known = parquet_ms_range(tdir / "lag", "time")
    if known is not None:
        span = known[1] - known[0]
    else:
        row = lag.agg(F.min(F.unix_millis("time")), F.max(F.unix_millis("time"))).first()
        if row is None or row[0] is None:
            return 60_000
        span = int(row[1]) - int(row[0])
    for step in (1_000, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000, 3_600_000, 21_600_000, 86_400_000):
        if span / step <= 300:
            return step
    return 86_400_000
