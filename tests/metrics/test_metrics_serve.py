"""``groupcoord serve --set metrics.listen=HOST:PORT``: the endpoint comes up with the broker,
its address is logged, and what stops it from starting is one line naming the key."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from groupcoord.config import BrokerConfig
from groupcoord.errors import ConfigError

pytestmark = pytest.mark.timeout(60)


def _serve(tmp_path: Path, *settings: str, log_level: str = "warning") -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "groupcoord", "serve", "--listen", "127.0.0.1:0"]
    argv += ["--data-dir", str(tmp_path / "data"), "--log-level", log_level]
    for item in settings:
        argv += ["--set", item]
    return subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=open(tmp_path / "stderr.log", "w"),
        text=True,
    )


def _finish(proc: subprocess.Popen[str], tmp_path: Path) -> tuple[int, str]:
    try:
        code = proc.wait(30)
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    return code, (tmp_path / "stderr.log").read_text()


def test_serve_logs_the_metrics_address_and_serves_prometheus_text_there(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "metrics.listen=127.0.0.1:0", log_level="info")
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("groupcoord listening on 127.0.0.1:")
        deadline = time.monotonic() + 30
        logged = re.compile(r"metrics on (http://127\.0\.0\.1:\d+/metrics)")
        while (m := logged.search((tmp_path / "stderr.log").read_text())) is None:
            assert time.monotonic() < deadline, "no metrics address logged"
            time.sleep(0.05)
        with urllib.request.urlopen(m.group(1), timeout=30) as response:
            text = response.read().decode("utf-8")
        families = {f.name: f for f in text_string_to_metric_families(text)}
        states = {s.labels["state"]: s.value for s in families["groupcoord_groups"].samples}
        assert states == {
            "Empty": 0,
            "PreparingRebalance": 0,
            "CompletingRebalance": 0,
            "Stable": 0,
            "Dead": 0,
        }
        assert families["kafka_brokers"].samples[0].value == 1
        assert families["groupcoord_request_duration_seconds"].type == "histogram"
        assert families["groupcoord_group_rebalances"].type == "counter"
    finally:
        proc.send_signal(signal.SIGTERM)
        code, _ = _finish(proc, tmp_path)
    assert code == 0


@pytest.mark.parametrize("bad", ["9404", "localhost", "127.0.0.1:99999", "http://127.0.0.1:9404", "a b:1"])
def test_metrics_listen_accepts_only_host_colon_port(bad: str) -> None:
    with pytest.raises(ConfigError) as caught:
        BrokerConfig.load(None, [f"metrics.listen={bad}"])
    assert str(caught.value) == f"bad value for metrics.listen: {bad!r} (HOST:PORT, e.g. 127.0.0.1:9404)"
    goods = [("127.0.0.1:0", ("127.0.0.1", 0)), (":9404", ("0.0.0.0", 9404)), ("[::1]:9", ("::1", 9))]
    for good, where in goods:
        listener = BrokerConfig.load(None, [f"metrics.listen={good}"]).metrics_listener()
        assert listener is not None and (listener.host, listener.port) == where
    assert BrokerConfig.load(None, []).metrics_listener() is None


def test_bad_metrics_listen_stops_serve_with_one_line_naming_the_key(tmp_path: Path) -> None:
    proc = _serve(tmp_path, "metrics.listen=localhost")
    code, stderr = _finish(proc, tmp_path)
    assert code == 2
    assert stderr.splitlines() == [
        "groupcoord: configuration error: bad value for metrics.listen: 'localhost' "
        "(HOST:PORT, e.g. 127.0.0.1:9404)"
    ]


def test_metrics_port_in_use_stops_startup_with_one_line_and_no_traceback(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _serve(tmp_path, f"metrics.listen=127.0.0.1:{port}")
        code, stderr = _finish(proc, tmp_path)
    assert code == 2
    assert stderr.splitlines() == [
        f"groupcoord: cannot listen on metrics.listen=127.0.0.1:{port}: Address already in use"
    ]
