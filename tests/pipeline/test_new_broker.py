"""``groupcoord analyze`` on a new broker: an empty data directory and the data directory of a broker
that has just started give empty tables and a report saying so; the command's own mistakes (a file
as the data directory, no spark extra, no Java) are one line each, without a stack trace."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from groupcoord.pipeline.analyze import TABLES, AnalyzeOptions, run_analysis
from groupcoord.pipeline.report import NO_GROUPS


def _assert_empty_result(result: Any) -> None:
    for name in TABLES:
        assert result.row_counts[name] == 0, name
        files = sorted((result.out / "tables" / name).glob("*.parquet"))
        assert sum(pq.read_metadata(f).num_rows for f in files) == 0, name
    assert result.report is not None
    text = Path(result.report).read_text()
    assert NO_GROUPS in text


@pytest.mark.spark
def test_empty_data_dir_gives_empty_tables_and_a_report_saying_no_groups_yet(
    spark: Any, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    result = run_analysis(spark, data, tmp_path / "out", AnalyzeOptions())
    _assert_empty_result(result)


@pytest.mark.spark
def test_data_dir_of_a_just_started_broker_gives_empty_tables(spark: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = subprocess.Popen(
        [sys.executable, "-m", "groupcoord", "serve", "--listen", "127.0.0.1:0", "--data-dir", str(data)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on 127.0.0.1:" in line, line
        deadline = time.monotonic() + 30
        while not data.is_dir():  # the broker creates it while starting; it listens after that
            assert time.monotonic() < deadline, "broker never created its data directory"
            time.sleep(0.05)
        result = run_analysis(spark, data, tmp_path / "out", AnalyzeOptions())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    _assert_empty_result(result)


def _analyze_cli(prelude: str, data_dir: Path, out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    code = (
        f"{prelude}\nimport sys\nfrom groupcoord.cli import main\n"
        f"sys.exit(main(['analyze', '--data-dir', {str(data_dir)!r}, '--out', {str(out)!r}, '--quiet']))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_a_file_given_as_data_dir_is_named_as_a_file_in_one_line(tmp_path: Path) -> None:
    f = tmp_path / "00000000000000000000.log"
    f.write_bytes(b"")
    done = _analyze_cli("", f, tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"groupcoord analyze: {f} is a file, not a data directory (give the broker's log.dirs directory)"
    ]


def test_missing_spark_extra_says_how_to_install_it(tmp_path: Path) -> None:
    # what Python does for a package that is not installed: the import fails
    block = "import sys\nsys.modules['pyspark'] = None"
    (tmp_path / "data").mkdir()
    done = _analyze_cli(block, tmp_path / "data", tmp_path / "out")
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "pip install 'groupcoord[spark]'" in lines[0]


def test_missing_java_is_one_line_saying_what_to_install(tmp_path: Path) -> None:
    hide = (
        "from pathlib import Path\nimport groupcoord.pipeline.session as s\n"
        "s._JVM_ROOT = Path('/nonexistent')"
    )
    (tmp_path / "data").mkdir()
    done = _analyze_cli(
        hide, tmp_path / "data", tmp_path / "out", JAVA_HOME="/nonexistent", PATH="/nonexistent"
    )
    assert done.returncode == 3
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("groupcoord analyze: Spark 4 needs a Java 17 (or newer) runtime")


@pytest.mark.spark
def test_progress_is_shown_on_a_terminal_from_the_jvm_start_to_the_report(tmp_path: Path) -> None:
    """On a terminal the progress display starts before the JVM (a spinner while Spark starts),
    then counts the stages; read through a pseudo-terminal, in order."""
    import pty

    (tmp_path / "data").mkdir()
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "groupcoord",
            "analyze",
            "--data-dir",
            str(tmp_path / "data"),
            "--out",
            str(tmp_path / "out"),
            "--master",
            "local[1]",
        ],
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "160"},
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process and its children are gone
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=600) == 0
    text = b"".join(chunks).decode(errors="replace")
    starting = text.find("starting Spark (JVM)")
    started = text.find("Spark started")
    first_stage = text.find("_log_batches")
    report = text.find("report (")
    assert -1 < starting < started < first_stage < report, text[-3000:]
    assert "13/13" in text
