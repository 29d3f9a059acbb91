"""The pytest plugin as a user meets it: a test file of theirs run by pytest in a subprocess.

Each case writes a small test module into a temporary directory and runs ``python -m pytest``
on it (no conftest: the fixtures must come from the ``pytest11`` entry point alone).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def run_pytest(tmp_path: Path, source: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_user.py").write_text(textwrap.dedent(source))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args, str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_fixtures_marker_and_namespaces_work_and_a_failing_test_reports_log_tail_and_group_events(
    tmp_path: Path,
) -> None:
    """One user test file (one pytest run, to keep the suite short): the marker's settings
    reach the broker, ``kafka_broker`` is fresh per test, ``kafka_broker_session`` is one
    broker with a namespace per test, and a failing test's report carries the broker's log
    tail and the events of the groups its requests named."""
    result = run_pytest(
        tmp_path,
        """
        import json, pathlib, pytest
        from kafka import KafkaConsumer

        OUT = pathlib.Path(__file__).with_name("out.jsonl")

        def note(**kw):
            with OUT.open("a") as f:
                f.write(json.dumps(kw) + "\\n")

        @pytest.mark.kafka_broker(settings={"group.initial.rebalance.delay.ms": 1234})
        def test_marked(kafka_broker):
            assert kafka_broker.settings["group.initial.rebalance.delay.ms"] == "1234"
            note(test="marked", bootstrap=kafka_broker.bootstrap)

        def test_default(kafka_broker):
            assert kafka_broker.settings["group.initial.rebalance.delay.ms"] == "300"
            note(test="default", bootstrap=kafka_broker.bootstrap)

        @pytest.mark.parametrize("i", [1, 2])
        def test_session(kafka_broker_session, i):
            topic = kafka_broker_session.topic("orders")
            kafka_broker_session.create_topic(topic, 1)
            kafka_broker_session.produce(topic, [b"x"])
            assert [r.value for r in kafka_broker_session.records(topic)] == [b"x"]
            note(test="session", bootstrap=kafka_broker_session.bootstrap, topic=topic)

        def test_fails(kafka_broker):
            kafka_broker.create_topic("orders", 1)
            c = KafkaConsumer("orders", bootstrap_servers=kafka_broker.bootstrap, group_id="reported",
                              client_id="who", consumer_timeout_ms=200)
            for _ in range(200):
                c.poll(timeout_ms=100)
                if c.assignment():
                    break
            c.close()
            assert False, "the user's own failure"
        """,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "1 failed, 4 passed" in out, out
    notes = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [n["test"] for n in notes] == ["marked", "default", "session", "session"]
    assert notes[0]["bootstrap"] != notes[1]["bootstrap"]  # a fresh broker per test
    assert notes[2]["bootstrap"] == notes[3]["bootstrap"]  # one broker for the session
    assert notes[2]["topic"] != notes[3]["topic"]  # a namespace per test
    # the failing test's report
    assert "the user's own failure" in out
    assert "groupcoord broker log (tail)" in out
    assert "test broker listening on 127.0.0.1:" in out
    assert "groupcoord events of group 'reported'" in out
    assert "member_added" in out and "client=who" in out
    assert out.count("groupcoord broker log (tail)") == 1  # only for the failing test


def test_under_xdist_each_of_two_workers_runs_its_own_broker(tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    result = run_pytest(
        tmp_path,
        """
        import json, os, pathlib, pytest

        @pytest.mark.parametrize("i", range(6))
        def test_one(kafka_broker_session, i):
            topic = kafka_broker_session.topic("t")
            kafka_broker_session.create_topic(topic, 1)
            assert kafka_broker_session.produce(topic, [b"v"]) == [0]
            line = json.dumps({"worker": os.environ["PYTEST_XDIST_WORKER"],
                               "bootstrap": kafka_broker_session.bootstrap})
            with pathlib.Path(__file__).with_name("out.jsonl").open("a") as f:
                f.write(line + "\\n")
        """,
        "-n",
        "2",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    notes = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(notes) == 6
    by_worker: dict[str, set[str]] = {}
    for n in notes:
        by_worker.setdefault(n["worker"], set()).add(n["bootstrap"])
    # xdist hands each worker a first batch of tests; each worker used one broker of its own.
    assert sorted(by_worker) == ["gw0", "gw1"]
    assert all(len(b) == 1 for b in by_worker.values())
    brokers = [next(iter(b)) for b in by_worker.values()]
    assert len(set(brokers)) == len(brokers)
