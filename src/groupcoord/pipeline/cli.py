"""``groupcoord analyze`` and ``groupcoord simulate``.

``register(subparsers)`` adds both subcommands to the main ``groupcoord`` parser; ``main(argv)`` runs
them standalone (``python -m groupcoord.pipeline.cli analyze ...``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from groupcoord import clock

log = logging.getLogger(__name__)


def parse_time_ms(text: str) -> int:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC unless it names a zone)."""
    try:
        return clock.parse_time_ms(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


class ProgressDisplay:
    """Progress on stderr from the first second: a spinner while the JVM starts, then a bar over the
    pipeline's stages (``rich``; a plain one-line fallback when it is missing)."""

    def __init__(self, *, quiet: bool) -> None:
        self.quiet = quiet
        self._progress: Any = None
        self._task: Any = None
        self._started = time.perf_counter()

    def __enter__(self) -> ProgressDisplay:
        if self.quiet:
            return self
        try:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )
        except ImportError:
            print("analyze: starting Spark (the JVM takes a few seconds)...", file=sys.stderr, flush=True)
            return self
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("analyze {task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._progress.start()
        self._task = self._progress.add_task("starting Spark (JVM)", total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def session_ready(self, seconds: float) -> None:
        if self._progress is not None:
            self._progress.update(self._task, description=f"Spark started ({seconds:.1f}s)")
        elif not self.quiet:
            print(f"analyze: Spark started ({seconds:.1f}s)", file=sys.stderr, flush=True)

    def stage(self, done: int, total: int, name: str, seconds: float) -> None:
        if self._progress is not None:
            self._progress.update(
                self._task, total=total, completed=done, description=f"{name} ({seconds:.1f}s)"
            )
        elif not self.quiet:
            print(f"analyze {done}/{total} {name} ({seconds:.1f}s)", file=sys.stderr, flush=True)


def check_data_dir(data_dir: Path) -> str | None:
    """Why ``data_dir`` cannot be analysed (one line), or None."""
    if data_dir.is_file():
        return f"{data_dir} is a file, not a data directory (give the broker's log.dirs directory)"
    if not data_dir.exists():
        return f"data directory {data_dir} does not exist"
    if not data_dir.is_dir():
        return f"{data_dir} is not a directory"
    return None


def spark_extra_missing() -> str | None:
    """The one-line fix when the ``spark`` extra (pyspark, pyarrow, pandas) is not installed."""
    import importlib.util

    missing = [m for m in ("pyspark", "pyarrow", "pandas") if importlib.util.find_spec(m) is None]
    if not missing:
        return None
    return (
        f"{', '.join(missing)} not installed: analyze needs the spark extra, pip install 'groupcoord[spark]'"
    )


def _conf_pair(raw: str) -> tuple[str, str]:
    key, sep, value = raw.partition("=")
    if not sep or not key.strip():
        raise SystemExit(f"groupcoord analyze: --conf wants KEY=VALUE, got {raw!r}")
    return key.strip(), value


def _preload(report: bool) -> None:
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401

        import groupcoord.pipeline.health
        import groupcoord.pipeline.lagmap
        import groupcoord.pipeline.rebalances

        if report:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot

            import groupcoord.pipeline.report  # noqa: F401
    except Exception:  # an optimisation only: the real imports report any problem
        log.debug("preloading modules failed", exc_info=True)


def _analyze(args: argparse.Namespace) -> int:
    data_dir = Path(args.data_dir)
    problem = check_data_dir(data_dir)
    if problem is not None:
        print(f"groupcoord analyze: {problem}", file=sys.stderr)
        return 2
    if args.since is not None and args.until is not None and args.since >= args.until:
        print("groupcoord analyze: --since must be before --until", file=sys.stderr)
        return 2
    missing = spark_extra_missing()
    if missing is not None:
        print(f"groupcoord analyze: {missing}", file=sys.stderr)
        return 3
    started = time.perf_counter()
    # the JVM starts in its own process (seconds, mostly one core): meanwhile import what the driver
    # needs later (pandas, pyarrow, the tables, matplotlib for the report: ~1 s of imports)
    threading.Thread(target=_preload, args=(not args.no_report,), name="analyze-preload", daemon=True).start()
    with ProgressDisplay(quiet=args.quiet) as display:
        return _run(args, data_dir, started, display)


def _run(args: argparse.Namespace, data_dir: Path, started: float, display: ProgressDisplay) -> int:
    from groupcoord.pipeline.analyze import AnalyzeOptions, run_analysis
    from groupcoord.pipeline.health import BurrowConfig
    from groupcoord.pipeline.rebalances import StormConfig
    from groupcoord.pipeline.session import JavaNotFoundError, build_session

    try:
        spark = build_session(
            master=args.master,
            remote=args.remote,
            shuffle_partitions=args.shuffle_partitions,
            driver_memory=args.driver_memory,
            extra_conf=dict(_conf_pair(c) for c in args.conf),
        )
    except JavaNotFoundError as exc:
        print(f"groupcoord analyze: {exc}", file=sys.stderr)
        return 3
    session_seconds = time.perf_counter() - started
    display.session_ready(session_seconds)
    if args.remote:
        _ship_package(spark)
    options = AnalyzeOptions(
        since_ms=args.since,
        until_ms=args.until,
        burrow=BurrowConfig(intervals=args.intervals, allowed_lag=args.allowed_lag),
        storms=StormConfig(count=args.storm_count, minutes=args.storm_minutes),
        report=not args.no_report,
        concurrent=args.concurrent,
        direct_tables=not args.spark_writes,
    )
    try:
        result = run_analysis(
            spark, data_dir, Path(args.out), options, progress=None if args.quiet else display.stage
        )
    finally:
        if args.stop_session:
            spark.stop()
    total = time.perf_counter() - started
    if args.stats_json:
        stats = {
            "session_seconds": round(session_seconds, 2),
            "total_seconds": round(total, 2),
            "stage_seconds": result.stage_seconds,
            "stage_cpu_seconds": result.stage_cpu_seconds,
            "row_counts": result.row_counts,
            "now_ms": result.now_ms,
        }
        Path(args.stats_json).write_text(json.dumps(stats, indent=1))
    print(
        f"analyze: {result.row_counts.get('offset_commits', 0)} offset commits, "
        f"{result.row_counts.get('rebalances', 0)} rebalances, "
        f"{result.row_counts.get('partition_status', 0)} group-partitions; "
        f"tables in {result.out / 'tables'}"
        + (f", report {result.report}" if result.report else "")
        + f" ({total:.1f}s)",
        flush=True,
    )
    return 0


def _ship_package(spark: Any) -> None:
    """Spark Connect runs the data sources server-side: send our package along as an artifact."""
    import shutil
    import tempfile

    import groupcoord

    pkg = Path(groupcoord.__file__).parent
    tmp = Path(tempfile.mkdtemp(prefix="groupcoord-artifact-"))
    archive = shutil.make_archive(str(tmp / "groupcoord"), "zip", root_dir=pkg.parent, base_dir=pkg.name)
    spark.addArtifacts(archive, pyfile=True)


def _simulate(args: argparse.Namespace) -> int:
    from groupcoord.pipeline.simulate import SimulationConfig, simulate

    config = SimulationConfig(
        groups=args.groups,
        members=args.members,
        minutes=args.minutes,
        seed=args.seed,
        partitions=args.partitions,
        offsets_partitions=args.offsets_partitions,
        produce_rate=args.produce_rate,
        commit_interval_ms=args.commit_interval_ms,
        assignor=args.assignor,
        protocol=args.protocol,
        remote_assignor=args.remote_assignor,
    )
    started = time.perf_counter()
    truth = simulate(Path(args.out), config)
    print(
        f"simulate: {len(truth.rebalances)} rebalances injected, {truth.commits} offset commits, "
        f"{truth.produced} records produced; ground truth in {truth.path} "
        f"({time.perf_counter() - started:.1f}s)",
        flush=True,
    )
    if truth.episodes:
        from groupcoord.pipeline.simledger import summary_table

        print("what each disruption cost (virtual time, from the member cores):")
        print(summary_table(truth.episodes), flush=True)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    a = subparsers.add_parser(
        "analyze", help="rebalance history, consumer lag and group health from a data directory (Spark)"
    )
    a.add_argument("--data-dir", required=True, metavar="DIR", help="broker data directory (Kafka layout)")
    a.add_argument(
        "--out", required=True, metavar="OUT", help="output: OUT/tables/*.parquet, OUT/report.html"
    )
    where = a.add_mutually_exclusive_group()
    where.add_argument(
        "--master", default=None, help="Spark master (default local[*]; e.g. spark://host:7077)"
    )
    where.add_argument("--remote", default=None, help="Spark Connect URL (sc://host:15002)")
    a.add_argument("--since", type=parse_time_ms, default=None, help="ISO-8601 or epoch ms (inclusive)")
    a.add_argument(
        "--until", type=parse_time_ms, default=None, help="ISO-8601 or epoch ms (exclusive); status 'now'"
    )
    a.add_argument("--intervals", type=int, default=10, help="Burrow window: last N commits (default 10)")
    a.add_argument("--allowed-lag", type=int, default=0, help="Burrow allowed lag (default 0)")
    a.add_argument("--storm-count", type=int, default=3, help="storm: at least N rebalances (default 3)")
    a.add_argument("--storm-minutes", type=float, default=10.0, help="storm: within M minutes (default 10)")
    a.add_argument("--shuffle-partitions", type=int, default=None)
    a.add_argument("--driver-memory", default="2g")
    a.add_argument("--no-report", action="store_true", help="write the tables only")
    a.add_argument(
        "--concurrent",
        action="store_true",
        help="run the lag and the rebalance halves as concurrent Spark jobs (default: one stage at a time)",
    )
    a.add_argument(
        "--spark-writes",
        action="store_true",
        help="offset_commits and lag written by Spark's writer, the lag as an Arrow UDF (the general "
        "path; default: both written by the decoding tasks in one pass)",
    )
    a.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="extra Spark setting (repeatable)"
    )
    a.add_argument("--quiet", action="store_true", help="no progress display")
    a.add_argument("--stats-json", metavar="FILE", help="write stage timings and row counts as JSON")
    a.set_defaults(func=_analyze, stop_session=True)

    s = subparsers.add_parser("simulate", help="write a data directory from simulated groups in virtual time")
    s.add_argument("--out", required=True, metavar="DIR")
    s.add_argument("--groups", type=int, default=3)
    s.add_argument("--members", type=int, default=4)
    s.add_argument("--minutes", type=float, default=30.0)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--partitions", type=int, default=6, help="partitions per topic (one topic per group)")
    s.add_argument("--offsets-partitions", type=int, default=50, help="__consumer_offsets partitions")
    s.add_argument("--produce-rate", type=float, default=50.0, help="records/s per partition")
    s.add_argument("--commit-interval-ms", type=int, default=5_000, help="consumers' auto-commit interval")
    s.add_argument(
        "--assignor",
        choices=("range", "roundrobin", "cooperative-sticky"),
        default="range",
        help="the classic consumers' partition.assignment.strategy (cooperative-sticky: KIP-429 rebalances)",
    )
    s.add_argument(
        "--protocol",
        choices=("classic", "consumer", "mixed"),
        default="classic",
        help="group.protocol of the groups; mixed: each group twice (group-N-classic, group-N-consumer), "
        "same workload and disruption plan",
    )
    s.add_argument(
        "--remote-assignor",
        choices=("uniform", "range"),
        default="uniform",
        help="group.remote.assignor of the consumer-protocol members (KIP-848's server-side assignors)",
    )
    s.set_defaults(func=_simulate)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="groupcoord", description="groupcoord analytics")
    subparsers = parser.add_subparsers(dest="command", required=True)
    register(subparsers)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
