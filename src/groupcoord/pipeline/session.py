"""Building a quiet SparkSession: Java detection, loopback binding, no UI, small shuffles."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

MIN_JAVA = 17
_JVM_ROOT = Path("/usr/lib/jvm")

_QUIET_LOG4J = """\
rootLogger.level = error
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n%ex
logger.spark.name = org.apache.spark
logger.spark.level = error
logger.hadoop.name = org.apache.hadoop
logger.hadoop.level = error
"""


class JavaNotFoundError(RuntimeError):
    """No Java 17+ runtime could be found; the message says how to fix it."""


@dataclass(frozen=True, kw_only=True, slots=True)
class JavaInfo:
    home: Path
    version: int


def _java_version(java: Path) -> int | None:
    try:
        out = subprocess.run(
            [str(java), "-version"], capture_output=True, text=True, timeout=30, check=False
        ).stderr
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        if "version" in line and '"' in line:
            raw = line.split('"')[1]
            head = raw.split(".")[0] if not raw.startswith("1.") else raw.split(".")[1]
            try:
                return int(head.split("-")[0].split("+")[0])
            except ValueError:
                return None
    return None


def _candidates() -> list[Path]:
    homes: list[Path] = []
    env = os.environ.get("JAVA_HOME")
    if env:
        homes.append(Path(env))
    on_path = shutil.which("java")
    if on_path:
        homes.append(Path(on_path).resolve().parent.parent)
    if _JVM_ROOT.is_dir():
        # Prefer an exact 17 (the version Spark 4 is tested with), then any newer one.
        found = sorted(p for p in _JVM_ROOT.iterdir() if (p / "bin" / "java").exists())
        homes.extend(p for p in found if "17" in p.name)
        homes.extend(p for p in found if "17" not in p.name)
    unique: list[Path] = []
    for h in homes:
        if h not in unique:
            unique.append(h)
    return unique


def find_java() -> JavaInfo:
    """JAVA_HOME if it holds Java 17+, else the system's ``java``, else a JDK under /usr/lib/jvm."""
    tried: list[str] = []
    for home in _candidates():
        java = home / "bin" / "java"
        if not java.exists():
            tried.append(f"{home} (no bin/java)")
            continue
        version = _java_version(java)
        if version is None or version < MIN_JAVA:
            tried.append(f"{home} (version {version})")
            continue
        return JavaInfo(home=home, version=version)
    raise JavaNotFoundError(
        "Spark 4 needs a Java 17 (or newer) runtime and none was found"
        + (f"; tried: {', '.join(tried)}" if tried else "")
        + ". Install one (e.g. `apt-get install openjdk-17-jre-headless`) or set JAVA_HOME to it."
    )


def quiet_conf_dir(base: Path | None = None) -> Path:
    """A SPARK_CONF_DIR holding a log4j2.properties that keeps Spark's JVM at ERROR level."""
    root = base or Path(os.environ.get("TMPDIR", "/tmp")) / f"groupcoord-spark-conf-{os.getuid()}"
    root.mkdir(parents=True, exist_ok=True)
    target = root / "log4j2.properties"
    if not target.exists() or target.read_text() != _QUIET_LOG4J:
        tmp = root / f".log4j2.{os.getpid()}.tmp"
        tmp.write_text(_QUIET_LOG4J)
        tmp.replace(target)
    return root


def prepare_environment() -> JavaInfo:
    """Set the environment variables Spark's launcher reads (Java, loopback, venv Python, quiet logs)."""
    java = find_java()
    os.environ["JAVA_HOME"] = str(java.home)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_CONF_DIR", str(quiet_conf_dir()))
    return java


def build_session(
    *,
    master: str | None = None,
    remote: str | None = None,
    app_name: str = "groupcoord-analyze",
    shuffle_partitions: int | None = None,
    adaptive: bool = True,
    driver_memory: str = "1g",
    extra_conf: dict[str, str] | None = None,
) -> SparkSession:
    """A SparkSession for the pipeline. ``remote`` (sc://...) uses Spark Connect; otherwise ``master``
    (default ``local[*]``) with the UI off, the driver on 127.0.0.1 and logs at ERROR."""
    from pyspark.sql import SparkSession

    if remote:
        builder = SparkSession.builder.remote(remote).appName(app_name)
        session = builder.getOrCreate()
        _register_sources(session)
        return session
    prepare_environment()
    cores = os.cpu_count() or 2
    parts = shuffle_partitions or max(2, 2 * cores)
    builder = (
        SparkSession.builder.master(master or "local[*]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(parts))
        .config("spark.default.parallelism", str(parts))
        .config("spark.sql.adaptive.enabled", "true" if adaptive else "false")
        .config("spark.driver.memory", driver_memory)
        # the throughput collector: ~7-10% less CPU than G1 for this batch workload (measured with
        # bench/analyze_bench.py --commits 2000000, interleaved A/B runs); and only the C1 JIT: the
        # driver runs a few dozen short jobs whose bulk work is in Python and pyarrow, and C2's
        # compilations cost more than they save (10M commits: 44 against 57-60 CPU s, 35.5-36.8
        # against 39.3-41.9 s, interleaved; docs/benchmarks.md "Pipeline, session 3")
        .config("spark.driver.extraJavaOptions", "-XX:+UseParallelGC -XX:TieredStopAtLevel=1")
        # standard INT64 microsecond timestamps instead of the legacy INT96 (same values; ~15% less
        # CPU to write the 10M-row tables)
        .config("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
        .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable)
        .config("spark.pyspark.python", sys.executable)
    )
    for key, value in (extra_conf or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    _register_sources(session)
    log.info("spark session started master=%s version=%s", session.sparkContext.master, session.version)
    return session


def _register_sources(session: SparkSession) -> None:
    """Register the data sources with a session (registration is per session)."""
    from groupcoord.pipeline.commitpass import CommitTablesDataSource
    from groupcoord.pipeline.source import SOURCES

    for cls in SOURCES:
        session.dataSource.register(cls)
    session.dataSource.register(CommitTablesDataSource)
