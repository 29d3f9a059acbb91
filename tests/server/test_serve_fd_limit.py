"""Open files and the partitions they allow.

A partition holds one descriptor for its active segment (its ``.log``; the index files share one
bounded set of descriptors, ``groupcoord.storage.index_files``), as a Kafka partition does, so a
topic as wide as the open-files limit less that set is created and served. A topic whose
partition files the operating system refuses (too many open files) is refused whole, with
KAFKA_STORAGE_ERROR and one log line, and the broker goes on serving.

Kafka answers a CreateTopics it cannot carry out with the error of the failure in that topic's
result (``CreateTopicsResponse``'s per-topic ``error_code``; ``KAFKA_STORAGE_ERROR`` is the code
``Errors.KAFKA_STORAGE_ERROR`` for a log directory failure) and keeps no half-created topic. The
broker is a child process with a lowered ``RLIMIT_NOFILE`` soft limit, so the refusal is the real
EMFILE of the real log code; it is stopped by its PID.
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from groupcoord.testing.control import LISTENING_PREFIX
from serve_process import serve_argv

SOFT_LIMIT = 1024  # each partition holds one descriptor (its .log); the indexes share 1024 // 8


def _lowered_fd_limit(soft: int) -> Callable[[], None]:
    def lower() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    return lower


class _Served:
    def __init__(self, proc: subprocess.Popen[str], bootstrap: str) -> None:
        self.proc = proc
        self.bootstrap = bootstrap
        self.stderr = ""


@contextlib.contextmanager
def _serve(data: Path, soft_limit: int) -> Iterator[_Served]:
    """``groupcoord serve`` as a child with the open-files soft limit lowered; stopped by PID."""
    proc = subprocess.Popen(
        serve_argv(data),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_lowered_fd_limit(soft_limit),
    )
    served = _Served(proc, "")
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith(LISTENING_PREFIX):
            proc.wait(timeout=60)
            raise AssertionError(f"the broker did not start: {proc.stderr.read() if proc.stderr else ''}")
        served.bootstrap = line[len(LISTENING_PREFIX) :].strip()
        yield served
    finally:
        proc.terminate()
        _, served.stderr = proc.communicate(timeout=120)


def _files_held(pid: int, under: Path) -> list[str]:
    """Names (relative to ``under``) of the files the process ``pid`` holds a descriptor on."""
    prefix = str(under) + "/"
    names = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
            if target.startswith(prefix):
                names.append(target[len(prefix) :])
    return names


WIDE_LIMIT = 2048
WIDE_PARTITIONS = 1200


def test_a_topic_of_more_partitions_than_half_the_open_files_limit_is_created_and_served(
    tmp_path: Path,
) -> None:
    """1,200 partitions under a soft limit of 2,048 descriptors: three descriptors a partition
    (log, index, time index: 3,600) and even two (2,400) would be refused with
    KAFKA_STORAGE_ERROR, as the test below shows for a topic past the limit. Every partition is
    written twice with ``index.interval.bytes=1``, so each second batch writes an index entry and
    a time index entry: 2,400 index files written through a set of 256 descriptors. Then each
    partition holds exactly one descriptor (its ``.log``), the index files at most 256 in all,
    and reads by offset and ListOffsets by timestamp answer from the indexes as before."""
    data = tmp_path / "data"
    with _serve(data, WIDE_LIMIT) as served:
        admin = AdminClient({"bootstrap.servers": served.bootstrap})
        topic = NewTopic("wide", WIDE_PARTITIONS, 1, config={"index.interval.bytes": "1"})
        (wide,) = admin.create_topics([topic], operation_timeout=60).values()
        assert wide.result(timeout=120) is None
        assert len(admin.list_topics(timeout=30).topics["wide"].partitions) == WIDE_PARTITIONS

        t0 = int(time.time() * 1000) - 60_000
        producer = Producer({"bootstrap.servers": served.bootstrap, "linger.ms": 0, "acks": "all"})
        failures: list[object] = []

        def delivered(err: object, _msg: object) -> None:
            if err is not None:
                failures.append(err)

        for round_, ts in enumerate((t0, t0 + 10)):
            for p in range(WIDE_PARTITIONS):
                value = b"%d-%d" % (p, round_)
                producer.produce("wide", value, partition=p, timestamp=ts, on_delivery=delivered)
                producer.poll(0)
            assert producer.flush(60) == 0 and failures == []

        held = _files_held(served.proc.pid, data)
        wide_logs = [n for n in held if n.startswith("wide-") and n.endswith(".log")]
        assert sorted(wide_logs) == sorted(f"wide-{p}/{0:020d}.log" for p in range(WIDE_PARTITIONS))
        index_files = [n for n in held if n.endswith((".index", ".timeindex"))]
        assert 0 < len(index_files) <= WIDE_LIMIT // 8

        spread = [0, 1, 599, 1198, 1199]
        by_time = admin.list_offsets(
            {TopicPartition("wide", p): OffsetSpec.for_timestamp(t0 + 5) for p in spread}
        )
        assert {tp.partition: f.result(timeout=60).offset for tp, f in by_time.items()} == {
            p: 1 for p in spread
        }
        consumer = Consumer(
            {"bootstrap.servers": served.bootstrap, "group.id": "reader", "enable.auto.commit": False}
        )
        try:
            consumer.assign([TopicPartition("wide", p, 1) for p in spread])
            got: dict[int, tuple[int, bytes | None, int]] = {}
            deadline = time.monotonic() + 60
            while len(got) < len(spread) and time.monotonic() < deadline:
                msg = consumer.poll(1.0)
                if msg is not None and msg.error() is None:
                    got[msg.partition()] = (msg.offset(), msg.value(), msg.timestamp()[1])
        finally:
            consumer.close()
        assert got == {p: (1, b"%d-1" % p, t0 + 10) for p in spread}
    assert "Traceback" not in served.stderr


def test_a_topic_past_the_open_files_limit_is_refused_whole_and_the_broker_serves_on(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with _serve(data, SOFT_LIMIT) as served:
        admin = AdminClient({"bootstrap.servers": served.bootstrap})

        # One descriptor a partition: 1,000 partitions do not fit beside the internal topics.
        (wide,) = admin.create_topics([NewTopic("wide", 1000, 1)], operation_timeout=30).values()
        error = wide.exception(timeout=60)
        assert error is not None
        assert error.args[0].code() == KafkaError.KAFKA_STORAGE_ERROR, error

        (narrow,) = admin.create_topics([NewTopic("narrow", 2, 1)], operation_timeout=30).values()
        assert narrow.result(timeout=60) is None
        topics = admin.list_topics(timeout=30).topics
        assert "narrow" in topics and len(topics["narrow"].partitions) == 2
        assert "wide" not in topics
        assert not list(data.glob("wide-*"))
        # The refused topic holds no descriptor.
        assert not [n for n in _files_held(served.proc.pid, data) if n.startswith("wide-")]
    refused = [ln for ln in served.stderr.splitlines() if "topic wide not created" in ln]
    assert len(refused) == 1, served.stderr
    assert "Too many open files" in refused[0]
    assert "Traceback" not in served.stderr


def test_too_few_open_files_for_the_internal_topics_stops_startup_with_one_line(tmp_path: Path) -> None:
    """The rule for an OS error at startup: exit status 2 and one line naming the cause, no stack.
    (The internal topics' hundred partitions need a hundred descriptors, the broker a dozen more.)"""

    def tiny_limit() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))

    done = subprocess.run(
        serve_argv(tmp_path / "data"), capture_output=True, text=True, timeout=120, preexec_fn=tiny_limit
    )
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("groupcoord: ")]
    assert len(lines) == 1, done.stderr
    assert "cannot start in data dir" in lines[0] and "Too many open files" in lines[0]
    assert "Traceback" not in done.stderr
