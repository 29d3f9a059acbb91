"""A data directory made by real clients (confluent-kafka) against a running groupcoord broker,
then analysed: the rebalances, ownership, commits and lags the script caused are in the tables."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from groupcoord.pipeline.analyze import AnalyzeOptions, AnalyzeResult, run_analysis

pytestmark = [pytest.mark.spark, pytest.mark.e2e]

SETTINGS = ("group.initial.rebalance.delay.ms=0", "group.min.session.timeout.ms=1000")


class Broker:
    def __init__(self, data_dir: Path, log: Path) -> None:
        argv = [
            sys.executable,
            "-m",
            "groupcoord",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(data_dir),
        ]
        for s in SETTINGS:
            argv += ["--set", s]
        with open(log, "w") as err:
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True)
        line: list[str] = []
        t = threading.Thread(
            target=lambda: line.append(self.proc.stdout.readline() if self.proc.stdout else "")
        )
        t.start()
        t.join(30)
        if not line or not line[0].startswith("groupcoord listening on "):
            self.proc.kill()
            self.proc.wait()
            raise RuntimeError(f"broker did not start: {line!r}: {log.read_text()[-2000:]}")
        self.bootstrap = line[0].split()[-1]

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(timeout=30)


def wait_for(what: str, cond: Callable[[], bool], consumers: list[Any], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for c in consumers:
            c.poll(0.1)
        if cond():
            return
    raise TimeoutError(what)


def consume_all(consumer: Any, want: dict[int, int], others: list[Any], timeout: float = 60.0) -> None:
    """Poll until the consumer's position on each partition in ``want`` reaches that offset."""
    from confluent_kafka import TopicPartition

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        consumer.poll(0.1)
        for o in others:
            o.poll(0.05)
        pos = {
            tp.partition: tp.offset for tp in consumer.position([TopicPartition("orders", p) for p in want])
        }
        if all(pos.get(p, -1) >= off for p, off in want.items()):
            return
    raise TimeoutError(f"positions never reached {want}")


@pytest.fixture(scope="module")
def real_run(
    spark: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[AnalyzeResult, dict[str, Any]]]:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    root = tmp_path_factory.mktemp("real")
    broker = Broker(root / "data", root / "broker.log")
    consumers: list[Any] = []
    facts: dict[str, Any] = {}
    try:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for fut in admin.create_topics([NewTopic("orders", 2, 1)]).values():
            fut.result(timeout=20)
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})

        def produce(n: int) -> None:
            for p in (0, 1):
                for i in range(n):
                    producer.produce("orders", value=f"v{i}".encode(), partition=p)
            assert producer.flush(30) == 0

        produce(100)

        def consumer(client_id: str) -> Any:
            c = Consumer(
                {
                    "bootstrap.servers": broker.bootstrap,
                    "group.id": "rc",
                    "client.id": client_id,
                    "enable.auto.commit": False,
                    "auto.offset.reset": "earliest",
                    "session.timeout.ms": 6000,
                    "heartbeat.interval.ms": 300,
                    "partition.assignment.strategy": "range",
                }
            )
            c.subscribe(["orders"])
            consumers.append(c)
            return c

        def owned(c: Any) -> list[int]:
            return sorted(tp.partition for tp in c.assignment())

        c1 = consumer("c1")
        wait_for("c1 owns both", lambda: owned(c1) == [0, 1], [c1])
        consume_all(c1, {0: 100, 1: 100}, [])
        c1.commit(
            offsets=[TopicPartition("orders", 0, 100), TopicPartition("orders", 1, 100)], asynchronous=False
        )

        c2 = consumer("c2")
        wait_for("c1 and c2 split", lambda: owned(c1) == [0] and owned(c2) == [1], [c1, c2])
        produce(50)
        consume_all(c1, {0: 150}, [c2])
        consume_all(c2, {1: 150}, [c1])
        c1.commit(offsets=[TopicPartition("orders", 0, 150)], asynchronous=False)
        c2.commit(offsets=[TopicPartition("orders", 1, 120)], asynchronous=False)  # 30 records still pending

        c2.close()
        consumers.remove(c2)
        wait_for("c1 owns both again", lambda: owned(c1) == [0, 1], [c1])
        c1.close()
        consumers.remove(c1)
    finally:
        for c in consumers:
            c.close()
        facts["exit"] = broker.stop()
    result = run_analysis(spark, root / "data", root / "out", AnalyzeOptions(report=False))
    yield result, facts


def _rows(spark: Any, result: AnalyzeResult, table: str, order: list[str]) -> list[dict[str, Any]]:
    df = spark.read.parquet(str(result.out / "tables" / table))
    return [r.asDict(recursive=True) for r in df.orderBy(*order).collect()]


def test_rebalances_caused_by_real_clients(spark: Any, real_run: Any) -> None:
    result, facts = real_run
    assert facts["exit"] == 0
    got = [
        (r["cause"], r["trigger_client_id"], r["members_before"], r["members_after"], r["outcome"])
        for r in _rows(spark, result, "rebalances", ["started_at"])
    ]
    assert got == [
        ("new_member_joined", "c1", 0, 1, "stable"),
        ("new_member_joined", "c2", 1, 2, "stable"),
        ("member_left", "c2", 2, 1, "stable"),
        ("member_left", "c1", 1, 0, "empty"),
    ]
    for r in _rows(spark, result, "rebalances", ["started_at"]):
        assert r["duration_ms"] >= 0 and r["join_ms"] + r["sync_ms"] == r["duration_ms"]


def test_ownership_per_generation_by_client_id(spark: Any, real_run: Any) -> None:
    result, _ = real_run
    got = [
        (r["generation"], r["partition"], r["owner"].split("@")[0])
        for r in _rows(spark, result, "partition_ownership", ["generation", "partition"])
    ]
    gens = sorted({g for g, _p, _o in got})
    assert len(gens) == 3
    g1, g2, g3 = gens
    assert got == [(g1, 0, "c1"), (g1, 1, "c1"), (g2, 0, "c1"), (g2, 1, "c2"), (g3, 0, "c1"), (g3, 1, "c1")]
    moved = {
        r["generation"]: r["partitions_moved"] for r in _rows(spark, result, "rebalances", ["started_at"])
    }
    assert (moved[g1], moved[g2], moved[g3]) == (2, 1, 1)


def test_commits_and_lags_of_real_clients(spark: Any, real_run: Any) -> None:
    result, _ = real_run
    got = [
        (r["partition"], r["committed_offset"], r["log_end_offset"], r["offset_lag"])
        for r in _rows(spark, result, "lag", ["partition", "time"])
    ]
    assert got == [(0, 100, 100, 0), (0, 150, 150, 0), (1, 100, 100, 0), (1, 120, 150, 30)]
    (pending,) = [r for r in _rows(spark, result, "lag", ["time"]) if r["offset_lag"] == 30]
    assert pending["time_lag_ms"] > 0
    status = {
        r["partition"]: (r["status"], r["current_lag"])
        for r in _rows(spark, result, "partition_status", ["partition"])
    }
    # partition 1 still has 30 records to go, but it was caught up at its first commit -> OK
    assert status == {0: ("OK", 0), 1: ("OK", 30)}
