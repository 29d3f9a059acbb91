"""``python -m groupcoord serve`` as a process: the listening line, signals, graceful shutdown."""

from __future__ import annotations

import ctypes
import datetime
import os
import signal
import socket
import struct
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

import pytest

from groupcoord.app import run_blocking
from groupcoord.config import BrokerConfig
from groupcoord.protocol.codec import decode_response, encode_request
from groupcoord.protocol.entities import child, make
from groupcoord.protocol.registry import load_messages
from serve_process import serve_argv, start_serve

METADATA, FETCH, CREATE_TOPICS = 3, 1, 19


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
    proc, port = start_serve(tmp_path / "d")
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
        serve_argv(tmp_path, "--set", "num.partitions=-4"),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert "num.partitions" in proc.stderr and "'-4'" in proc.stderr


def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def _raw(key: int, version: int, body: bytes, flexible: bool) -> bytes:
    """A request frame: header v1 (v2 with an empty tag section when ``flexible``), then ``body``."""
    payload = struct.pack(">hhi", key, version, 9) + _s("raw") + (b"\x00" if flexible else b"") + body
    return struct.pack(">i", len(payload)) + payload


_NULL_ARRAY, _NULL_STRING, _ZERO = b"\xff\xff\xff\xff", b"\xff\xff", b"\x00\x00\x00\x00"
_JOIN_V5 = _s("g") + _ZERO + _ZERO + _s("") + _NULL_STRING + _s("consumer")
_JOIN_V7 = b"\x02g" + _ZERO + _ZERO + b"\x01" + b"\x00" + b"\x09consumer"

#: (frame, what the log line says): nulls Kafka's schemas do not allow (JoinGroupRequest.json,
#: SyncGroupRequest.json, OffsetCommitRequest.json, OffsetFetchRequest.json before v2,
#: MetadataRequest.json at v0).
_FORBIDDEN_NULLS = [
    (_raw(11, 5, _JOIN_V5 + _NULL_ARRAY, False), "null array 'protocols'"),
    (_raw(11, 7, _JOIN_V7 + b"\x00" + b"\x00", True), "null array 'protocols'"),  # compact: length 0 is null
    (_raw(14, 3, _s("g") + _ZERO + _s("m") + _NULL_STRING + _NULL_ARRAY, False), "null array 'assignments'"),
    (_raw(8, 2, _s("g") + _ZERO + _s("") + b"\x00" * 8 + _NULL_ARRAY, False), "null array 'topics'"),
    (_raw(9, 1, _s("g") + _NULL_ARRAY, False), "null array 'topics'"),
    (_raw(3, 0, _NULL_ARRAY, False), "null array 'topics'"),
    (_raw(12, 3, _NULL_STRING + _ZERO + _s("m") + _NULL_STRING, False), "null string 'group_id'"),
]


def test_null_where_the_schema_forbids_it_closes_only_that_connection_with_one_log_line(
    tmp_path: Path,
) -> None:
    """A null count or length in a field Kafka's message schema does not mark nullable is a
    malformed frame: that connection closes with one warning line and no traceback (it used to
    reach the handlers, which failed with TypeError and logged a traceback at ERROR); the
    broker goes on serving others, and a null where the schema allows it (Metadata v1+ topics,
    "all topics") is answered. Kafka's generated readers refuse the same nulls ("non-nullable
    field ... was serialized as null"), and a request that fails to parse closes its connection
    (SocketServer's Processor)."""
    proc, port = start_serve(tmp_path / "d")
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=20) as keep:
            for frame, _ in _FORBIDDEN_NULLS:
                with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
                    sock.sendall(frame)
                    assert sock.recv(1) == b""  # closed by the broker, nothing answered
            # Allowed null: Metadata v1 topics = null means every topic.
            keep.sendall(_raw(METADATA, 1, _NULL_ARRAY, False))
            size = struct.unpack(">i", keep.recv(4, socket.MSG_WAITALL))[0]
            answer = keep.recv(size, socket.MSG_WAITALL)
            assert struct.unpack(">i", answer[:4])[0] == 9  # the correlation id: answered
            r = call(keep, METADATA, 12, 1, topics=None, allow_auto_topic_creation=False,
                     include_topic_authorized_operations=False)  # fmt: skip
            assert [b.port for b in r.brokers] == [port]
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        closing = [line for line in err.splitlines() if "closing conn=" in line]
        assert len(closing) == len(_FORBIDDEN_NULLS), closing
        for line, (_, says) in zip(closing, _FORBIDDEN_NULLS, strict=True):
            assert " WARNING " in line and says in line, line
        assert "Traceback" not in err and " ERROR " not in err, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _serve_exits(
    data_dir: Path, listen: str = "127.0.0.1:0", **popen: Any
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groupcoord", "serve", "--listen", listen, "--data-dir", str(data_dir),
         "--log-level", "warning"],
        capture_output=True, text=True, timeout=60, **popen,
    )  # fmt: skip


def _without_root_file_access() -> None:
    """In the child before exec: drop the capabilities that let root ignore file permissions.

    PR_CAPBSET_DROP (24) on CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2): after exec, a
    root process holds only what the bounding set allows, so a mode-000 directory denies it.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_non_utf8_meta_properties_exits_2_with_one_line_naming_the_file(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / "meta.properties").write_bytes(b"version=1\ncluster.id=\xff\xfe\n")
    proc = _serve_exits(data)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert (
        proc.stderr
        == f"groupcoord: {data / 'meta.properties'} is not UTF-8 text (invalid byte at offset 21)\n"
    )


@pytest.mark.parametrize("content", [b"12x\n", b"\xff\n"], ids=["not-a-number", "not-utf8"])
def test_damaged_producer_id_block_exits_2_with_one_line_naming_the_file(
    tmp_path: Path, content: bytes
) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / "producer_id_block").write_bytes(content)
    proc = _serve_exits(data)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"groupcoord: {data / 'producer_id_block'} does not hold a producer id (damaged file)\n"
    )  # fmt: skip


def test_damaged_topics_file_exits_2_with_one_line_naming_the_file(tmp_path: Path) -> None:
    data = tmp_path / "d"
    data.mkdir()
    (data / "__topics.json").write_text('{"topics": {"t": {"partitions": 1}}}')
    proc = _serve_exits(data)
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"groupcoord: {data / '__topics.json'} is damaged (KeyError: 'topic_id')\n"
    )  # fmt: skip


def test_data_dir_that_is_a_file_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("not a directory")
    proc = _serve_exits(tmp_path / "f")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"groupcoord: data dir {tmp_path / 'f'} is not a directory\n"
    )  # fmt: skip
    proc = _serve_exits(tmp_path / "f" / "d")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"groupcoord: cannot open data dir {tmp_path / 'f' / 'd'}: Not a directory\n"
    )  # fmt: skip


def test_port_in_use_exits_2_with_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = _serve_exits(tmp_path / "d", listen=f"127.0.0.1:{port}")
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        2, "", f"groupcoord: cannot listen on 127.0.0.1:{port}: Address already in use\n"
    )  # fmt: skip


def test_data_dir_without_permission_exits_2_with_one_line(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        popen: dict[str, Any] = {"preexec_fn": _without_root_file_access} if os.geteuid() == 0 else {}
        try:
            proc = _serve_exits(locked / "d", **popen)
        except subprocess.SubprocessError as exc:  # the preexec_fn failed: no CAP_SETPCAP
            pytest.skip(f"running as root and cannot give up root's file access: {exc}")
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            2, "", f"groupcoord: cannot open data dir {locked / 'd'}: Permission denied\n"
        )  # fmt: skip
    finally:
        locked.chmod(0o700)


def test_an_error_while_serving_is_not_reported_as_raised_during_the_uvloop_import(tmp_path: Path) -> None:
    """``run_blocking`` used to run the whole server inside ``except ImportError`` (no uvloop),
    so every traceback began with "No module named 'uvloop'" and "During handling of the above
    exception, another exception occurred"."""
    config = BrokerConfig.load(None, ["listeners=PLAINTEXT://127.0.0.1:0"])

    def fail(host: str, port: int) -> None:
        raise RuntimeError(f"refusing to serve on {host}:{port}")

    with pytest.raises(RuntimeError, match=r"refusing to serve on 127\.0\.0\.1:") as caught:
        run_blocking(config, tmp_path / "d", on_listening=fail)
    assert caught.value.__context__ is None
    assert "No module named" not in "".join(traceback.format_exception(caught.value))


JOIN_GROUP, SYNC_GROUP, DESCRIBE_GROUPS = 11, 14, 15
NOT_COORDINATOR, MEMBER_ID_REQUIRED = 16, 79
#: ConsumerProtocol subscription v0 to topic "t" (version, topics, null user data).
_SUBSCRIPTION = b"\x00\x00" + b"\x00\x00\x00\x01" + _s("t") + b"\xff\xff\xff\xff"


def _send_join(sock: socket.socket, corr: int, group: str, member_id: str) -> None:
    protocol_t = child(load_messages(JOIN_GROUP, 5).request_type, "protocols")
    send(
        sock,
        JOIN_GROUP,
        5,
        corr,
        group_id=group,
        member_id=member_id,
        group_instance_id=None,
        session_timeout=datetime.timedelta(seconds=60),
        rebalance_timeout=datetime.timedelta(minutes=5),
        protocol_type="consumer",
        protocols=(make(protocol_t, name="range", metadata=_SUBSCRIPTION),),
    )


def _join_new(sock: socket.socket, group: str) -> Any:
    """A dynamic member's JoinGroup v5: MEMBER_ID_REQUIRED read, the second join (correlation id 2)
    sent and left to the caller to read; the member id."""
    _send_join(sock, 1, group, "")
    first = recv(sock, JOIN_GROUP, 5, 1)
    assert first.error_code == MEMBER_ID_REQUIRED
    _send_join(sock, 2, group, first.member_id)
    return first.member_id


def _send_sync(
    sock: socket.socket, corr: int, group: str, generation: int, member_id: str, assignments: dict[str, bytes]
) -> None:
    assignment_t = child(load_messages(SYNC_GROUP, 3).request_type, "assignments")
    send(
        sock,
        SYNC_GROUP,
        3,
        corr,
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=None,
        assignments=tuple(make(assignment_t, member_id=m, assignment=a) for m, a in assignments.items()),
    )


def _describe(sock: socket.socket, corr: int, group: str) -> Any:
    r = call(sock, DESCRIBE_GROUPS, 5, corr, groups=(group,), include_authorized_operations=False)
    return r.groups[0]


def test_sigterm_answers_parked_join_and_sync_with_not_coordinator_then_exits(tmp_path: Path) -> None:
    """On shutdown the coordinator gives up its partitions as Kafka's does when leadership
    moves (a controlled shutdown): ``GroupCoordinator.onResignation`` ->
    ``GroupMetadataManager.removeGroupsForPartition`` -> ``onGroupUnloaded`` answers the parked
    JoinGroups of a PreparingRebalance group and the parked SyncGroups of a CompletingRebalance
    group with NOT_COORDINATOR (clients then look the coordinator up again). They used to stay
    unanswered until the server's 5 s drain grace dropped their connections."""
    proc, port = start_serve(tmp_path / "d", "--set", "group.initial.rebalance.delay.ms=0")
    conns: list[socket.socket] = []

    def connect() -> socket.socket:
        conns.append(socket.create_connection(("127.0.0.1", port), timeout=60))
        return conns[-1]

    try:
        a, b, d, e, watch = connect(), connect(), connect(), connect(), connect()
        # Group "g": A is Stable alone in generation 1; B's join starts a rebalance and waits for A.
        a_id = _join_new(a, "g")
        assert recv(a, JOIN_GROUP, 5, 2).generation_id == 1
        _send_sync(a, 3, "g", 1, a_id, {a_id: b""})
        assert recv(a, SYNC_GROUP, 3, 3).error_code == 0
        b_id = _join_new(b, "g")  # parked
        corr = 0
        while True:  # B is a member of the rebalancing group once its join is parked
            corr += 1
            described = _describe(watch, corr, "g")
            if described.group_state == "PreparingRebalance" and len(described.members) == 2:
                break
        # Group "h": D leads generation 2 with follower E; E's sync waits for D's assignment.
        d_id = _join_new(d, "h")
        assert recv(d, JOIN_GROUP, 5, 2).generation_id == 1
        e_id = _join_new(e, "h")
        _send_join(d, 3, "h", d_id)  # D rejoins: everyone has joined, generation 2 forms
        assert (recv(d, JOIN_GROUP, 5, 3).generation_id, recv(e, JOIN_GROUP, 5, 2).generation_id) == (2, 2)
        _send_sync(e, 3, "h", 2, e_id, {})  # parked until the leader syncs
        # E's bytes reached the server's socket before the watcher's request was even sent, so the
        # event loop read (and parked) the sync no later than the loop iteration that answers this.
        corr += 1
        assert _describe(watch, corr, "h").group_state == "CompletingRebalance"

        proc.send_signal(signal.SIGTERM)
        joined = recv(b, JOIN_GROUP, 5, 2)
        assert (joined.error_code, joined.member_id) == (NOT_COORDINATOR, b_id)
        assert recv(e, SYNC_GROUP, 3, 3).error_code == NOT_COORDINATOR
        for sock in conns:
            assert sock.recv(1) == b""  # then every connection is closed
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "did not drain" not in err  # nothing was left waiting for the grace period
    finally:
        for sock in conns:
            sock.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
