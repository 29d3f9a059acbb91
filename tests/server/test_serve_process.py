"""``python -m groupcoord serve`` as a process: the listening line, signals, graceful shutdown."""

from __future__ import annotations

import datetime
import signal
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from groupcoord.protocol.client import decode_response, encode_request
from groupcoord.protocol.entities import child, make
from groupcoord.protocol.registry import load_messages

METADATA, FETCH, CREATE_TOPICS = 3, 1, 19


def start(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen[str], int]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "groupcoord",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(tmp_path / "d"),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    prefix = "groupcoord listening on 127.0.0.1:"
    assert line.startswith(prefix), line
    return proc, int(line[len(prefix) :])


def call(sock: socket.socket, key: int, version: int, corr: int, **body: Any) -> Any:
    send(sock, key, version, corr, **body)
    return recv(sock, key, version, corr)


def send(sock: socket.socket, key: int, version: int, corr: int, **body: Any) -> None:
    m = load_messages(key, version)
    sock.sendall(encode_request(m, corr, make(m.request_type, **body)))


def recv(sock: socket.socket, key: int, version: int, corr: int) -> Any:
    def exactly(n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            assert chunk, "connection closed"
            buf += chunk
        return buf

    size = struct.unpack(">i", exactly(4))[0]
    got, resp = decode_response(load_messages(key, version), exactly(size))
    assert got == corr
    return resp


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_answers_a_parked_fetch_then_exits_cleanly_printing_one_line(
    tmp_path: Path, sig: signal.Signals
) -> None:
    proc, port = start(tmp_path)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
            ct = load_messages(CREATE_TOPICS, 7).request_type
            topic_t = child(ct, "topics")
            r = call(
                sock,
                CREATE_TOPICS,
                7,
                1,
                topics=(
                    make(
                        topic_t, name="t", num_partitions=1, replication_factor=1, assignments=(), configs=()
                    ),
                ),
                timeout=datetime.timedelta(seconds=5),
                validate_only=False,
            )
            assert r.topics[0].error_code == 0
            ft = load_messages(FETCH, 12).request_type
            t_t = child(ft, "topics")
            p_t = child(t_t, "partitions")
            send(
                sock,
                FETCH,
                12,
                2,
                max_wait=datetime.timedelta(minutes=5),
                min_bytes=1,
                max_bytes=1 << 20,
                isolation_level=0,
                topics=(
                    make(
                        t_t,
                        topic="t",
                        partitions=(make(p_t, partition=0, fetch_offset=0, partition_max_bytes=1 << 20),),
                    ),
                ),
                forgotten_topics_data=(),
                replica_id=-1,
            )
            # The fetch bytes are readable on the server side as soon as sendall returns (loopback).
            # A round trip on a new connection needs an accept and a read in later loop iterations,
            # by which time the event loop has read and parked the fetch.
            with socket.create_connection(("127.0.0.1", port), timeout=20) as other:
                call(
                    other,
                    METADATA,
                    12,
                    1,
                    topics=None,
                    allow_auto_topic_creation=False,
                    include_topic_authorized_operations=False,
                )
            proc.send_signal(sig)
            resp = recv(sock, FETCH, 12, 2)
            assert (resp.responses[0].partitions[0].error_code, resp.responses[0].partitions[0].records) == (
                0,
                b"",
            )
            assert sock.recv(1) == b""
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert out == ""  # the listening line was the only stdout line
        assert "stopped" in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_bad_configuration_exits_2_before_listening(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "groupcoord",
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(tmp_path),
            "--set",
            "num.partitions=-4",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "num.partitions" in proc.stderr and "'-4'" in proc.stderr
