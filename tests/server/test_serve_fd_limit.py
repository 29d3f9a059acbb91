"""A topic whose partition files the operating system refuses (too many open files) is refused
whole, with KAFKA_STORAGE_ERROR and one log line, and the broker goes on serving.

Kafka answers a CreateTopics it cannot carry out with the error of the failure in that topic's
result (``CreateTopicsResponse``'s per-topic ``error_code``; ``KAFKA_STORAGE_ERROR`` is the code
``Errors.KAFKA_STORAGE_ERROR`` for a log directory failure) and keeps no half-created topic. The
broker is a child process with a lowered ``RLIMIT_NOFILE`` soft limit, so the refusal is the real
EMFILE of the real log code; it is stopped by its PID.
"""

from __future__ import annotations

import resource
import subprocess
from pathlib import Path

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic

from groupcoord.testing.control import LISTENING_PREFIX
from serve_process import serve_argv

SOFT_LIMIT = 1024  # each partition holds three files (log, index, time index)


def _lower_fd_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (SOFT_LIMIT, hard))


def test_a_topic_past_the_open_files_limit_is_refused_whole_and_the_broker_serves_on(tmp_path: Path) -> None:
    data = tmp_path / "data"
    proc = subprocess.Popen(
        serve_argv(data),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_lower_fd_limit,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith(LISTENING_PREFIX):
            proc.wait(timeout=60)
            raise AssertionError(f"the broker did not start: {proc.stderr.read() if proc.stderr else ''}")
        bootstrap = line[len(LISTENING_PREFIX) :].strip()
        admin = AdminClient({"bootstrap.servers": bootstrap})

        (wide,) = admin.create_topics([NewTopic("wide", 400, 1)], operation_timeout=30).values()
        error = wide.exception(timeout=60)
        assert error is not None
        assert error.args[0].code() == KafkaError.KAFKA_STORAGE_ERROR, error

        (narrow,) = admin.create_topics([NewTopic("narrow", 2, 1)], operation_timeout=30).values()
        assert narrow.result(timeout=60) is None
        topics = admin.list_topics(timeout=30).topics
        assert "narrow" in topics and len(topics["narrow"].partitions) == 2
        assert "wide" not in topics
        assert not list(data.glob("wide-*"))
    finally:
        proc.terminate()
        _, stderr = proc.communicate(timeout=60)
    refused = [ln for ln in stderr.splitlines() if "topic wide not created" in ln]
    assert len(refused) == 1, stderr
    assert "Too many open files" in refused[0]
    assert "Traceback" not in stderr


def test_too_few_open_files_for_the_internal_topics_stops_startup_with_one_line(tmp_path: Path) -> None:
    """The rule for an OS error at startup: exit status 2 and one line naming the cause, no stack."""

    def tiny_limit() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (200, hard))

    done = subprocess.run(
        serve_argv(tmp_path / "data"), capture_output=True, text=True, timeout=120, preexec_fn=tiny_limit
    )
    assert done.returncode == 2, done.stderr
    lines = [ln for ln in done.stderr.splitlines() if ln.startswith("groupcoord: ")]
    assert len(lines) == 1, done.stderr
    assert "cannot start in data dir" in lines[0] and "Too many open files" in lines[0]
    assert "Traceback" not in done.stderr
