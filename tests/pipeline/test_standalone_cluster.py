"""``analyze --master spark://127.0.0.1:PORT`` on a standalone master + worker started from the
installed pyspark produces the same tables as local mode."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline.analyze import TABLES
from groupcoord.pipeline.session import prepare_environment

from .scenario import END, T0

pytestmark = pytest.mark.spark


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _wait(predicate: Any, what: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except OSError:
            pass
        time.sleep(0.5)
    raise TimeoutError(f"timed out waiting for {what}")


def _alive_workers(ui_port: int) -> int:
    """The master's count of registered workers; 0 while its web UI is still starting (it can
    answer /json/ with an empty body before the page is ready: seen once under load)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{ui_port}/json/", timeout=5) as resp:
        body = resp.read()
    try:
        return int(json.loads(body).get("aliveworkers", 0))
    except ValueError:  # an empty or partial answer: not ready yet
        return 0


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    prepare_environment()
    root = tmp_path_factory.mktemp("standalone")
    env = dict(os.environ)
    import pyspark

    env["SPARK_HOME"] = str(Path(pyspark.__file__).parent)
    env["SPARK_LOG_DIR"] = str(root / "logs")
    env["SPARK_WORKER_DIR"] = str(root / "work")
    # The master and the worker only schedule: C1 only, a small heap and the serial collector
    # start them in about half the time on a loaded 2-core machine (worker registration
    # 34 s -> 13 s at load 10, measured).
    env["SPARK_DAEMON_JAVA_OPTS"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    env["SPARK_DAEMON_MEMORY"] = "256m"
    port, ui, wui = _free_port(), _free_port(), _free_port()
    procs: list[subprocess.Popen[bytes]] = []
    logs = []
    try:
        mlog = open(root / "master.log", "wb")  # noqa: SIM115 - closed in teardown
        logs.append(mlog)
        procs.append(
            subprocess.Popen(
                [
                    str(_spark_class()),
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--webui-port",
                    str(ui),
                ],
                env=env,
                stdout=mlog,
                stderr=subprocess.STDOUT,
            )
        )
        _wait(lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close() is None, "master")
        wlog = open(root / "worker.log", "wb")  # noqa: SIM115 - closed in teardown
        logs.append(wlog)
        procs.append(
            subprocess.Popen(
                [
                    str(_spark_class()),
                    "org.apache.spark.deploy.worker.Worker",
                    f"spark://127.0.0.1:{port}",
                    "--host",
                    "127.0.0.1",
                    "--webui-port",
                    str(wui),
                    "--cores",
                    "2",
                    "--memory",
                    "1g",
                    "--work-dir",
                    str(root / "work"),
                ],
                env=env,
                stdout=wlog,
                stderr=subprocess.STDOUT,
            )
        )
        _wait(lambda: _alive_workers(ui) == 1, "worker registration")
        yield f"spark://127.0.0.1:{port}"
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=30)
        for f in logs:
            f.close()


def _rows(spark: Any, path: Path) -> list[tuple[Any, ...]]:
    df = spark.read.parquet(str(path))
    cols = [c for c in df.columns if c != "window"]  # arrays of structs compare fine but read poorly
    return sorted((tuple(r) for r in df.select(*cols).collect()), key=repr)


def test_cluster_run_produces_the_same_tables_as_local_mode(
    spark: Any, scripted: Any, standalone: str, tmp_path: Path
) -> None:
    written, local = scripted
    cmd = [
        sys.executable,
        "-m",
        "groupcoord.pipeline.cli",
        "analyze",
        "--data-dir",
        str(written.data_dir),
        "--out",
        str(tmp_path / "cluster"),
        "--master",
        standalone,
        "--until",
        str(T0 + END),
        "--intervals",
        "3",
        "--storm-count",
        "3",
        "--storm-minutes",
        "1",
        "--quiet",
        "--shuffle-partitions",
        "2",
        # The executor gets the driver's JVM flags (pipeline/session.py says why: short jobs whose
        # bulk work is in Python), and both a heap sized for a 13-commit scenario; the analyze
        # run costs about a third less on a loaded machine (230 s -> 166 s at load 10, measured).
        "--driver-memory",
        "512m",
        "--conf",
        "spark.executor.memory=512m",
        "--conf",
        "spark.executor.extraJavaOptions=-XX:+UseParallelGC -XX:TieredStopAtLevel=1",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "analyze: 13 offset commits, 4 rebalances, 3 group-partitions" in done.stdout
    for table in TABLES:
        local_rows = _rows(spark, local.out / "tables" / table)
        cluster_rows = _rows(spark, tmp_path / "cluster" / "tables" / table)
        assert cluster_rows == local_rows, table
    assert len(_rows(spark, tmp_path / "cluster" / "tables" / "rebalances")) == 4
    assert (tmp_path / "cluster" / "report.html").stat().st_size > 10_000
