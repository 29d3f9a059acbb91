"""Python calls the broker makes per Heartbeat: a deterministic measure of a request's cost.

Plain script, not a test. On a machine other processes share, wall-clock throughput moves by more
than the cost of a few calls per request; the number of Python function calls the broker's
event-loop thread makes per request does not move at all. This starts an in-process broker
(``groupcoord.testing.Broker``), joins one member to a group over one connection (JoinGroup,
SyncGroup), sends heartbeats untraced (warm-up), then ``--count`` more (``--depth`` at a time in
one write, as a pipelining client sends them) while every Python call on
the broker's loop thread is counted (``sys.setprofile``: stdlib and asyncio included), and prints
the calls per heartbeat with the functions that make them, as JSON with ``--json``.

Run it on the sources (a compiled module's calls are invisible to the profiler), for this tree or
another, and compare:

    GROUPCOORD_PURE=1 PYTHONPATH=src .venv/bin/python bench/heartbeat_calls.py --json a.json
    GROUPCOORD_PURE=1 PYTHONPATH=/other/src .venv/bin/python bench/heartbeat_calls.py --json b.json
    .venv/bin/python bench/heartbeat_calls.py --diff a.json b.json
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

JOIN_GROUP, HEARTBEAT, SYNC_GROUP = 11, 12, 14
GROUP = "calls"


def _where(frame: FrameType) -> str:
    code = frame.f_code
    name = code.co_filename
    at = name.rfind("/groupcoord/")
    name = name[at + 1 :] if at >= 0 else Path(name).name
    return f"{name}:{code.co_qualname}"


def measure(count: int, depth: int = 1) -> dict[str, Any]:
    from groupcoord.protocol.client import WireClient, build_request, encode_request
    from groupcoord.protocol.registry import load_messages
    from groupcoord.testing import Broker

    calls: Counter[str] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            calls[_where(frame)] += 1

    with Broker({"group.initial.rebalance.delay.ms": 0}) as broker:
        host, port = broker.bootstrap.rsplit(":", 1)
        with WireClient(host, int(port)) as c:
            meta = b"\x00\x01\x00\x00\x00\x00\xff\xff\xff\xff"
            fields = dict(
                group_id=GROUP,
                session_timeout=30_000,
                rebalance_timeout=30_000,
                group_instance_id=None,
                protocol_type="consumer",
                protocols=[{"name": "range", "metadata": meta}],
                reason=None,
            )
            first = c.call(JOIN_GROUP, 9, member_id="", **fields)
            joined = c.call(JOIN_GROUP, 9, member_id=str(first.member_id), **fields)
            member, generation = str(joined.member_id), int(joined.generation_id)
            c.call(
                SYNC_GROUP,
                5,
                group_id=GROUP,
                generation_id=generation,
                member_id=member,
                group_instance_id=None,
                protocol_type="consumer",
                protocol_name="range",
                assignments=[{"member_id": member, "assignment": b""}],
            )

            def beat() -> None:
                answer = c.call(
                    HEARTBEAT,
                    4,
                    group_id=GROUP,
                    generation_id=generation,
                    member_id=member,
                    group_instance_id=None,
                )
                assert answer.error_code == 0, answer

            def beats() -> None:
                """``depth`` heartbeats in one write (a pipelining client's), then their answers."""
                messages = load_messages(HEARTBEAT, 4)
                frames = []
                for _ in range(depth):
                    c.correlation += 1
                    fields = dict(
                        group_id=GROUP, generation_id=generation, member_id=member, group_instance_id=None
                    )
                    frames.append(
                        encode_request(messages, c.correlation, build_request(messages.request_type, fields))
                    )
                    c.pending.append((c.correlation, messages))
                c.sock.sendall(b"".join(frames))
                for _ in range(depth):
                    answer = c.recv()
                    assert answer.error_code == 0, answer

            if depth > 1:
                beat = beats
                count //= depth
            for _ in range(50):
                beat()
            loop = broker._loop
            assert loop is not None
            switched = threading.Event()
            loop.call_soon_threadsafe(lambda: (sys.setprofile(profile), switched.set()))
            switched.wait(10)
            for _ in range(count):
                beat()
            switched.clear()
            loop.call_soon_threadsafe(lambda: (sys.setprofile(None), switched.set()))
            switched.wait(10)
    return {"count": count * depth, "depth": depth, "calls": dict(calls)}


def report(result: dict[str, Any], top: int) -> None:
    count = result["count"]
    calls: dict[str, int] = result["calls"]
    print(f"{sum(calls.values()) / count:.1f} Python calls per heartbeat ({count} heartbeats)")
    for name, n in sorted(calls.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {n / count:7.2f}  {name}")


def diff(a: dict[str, Any], b: dict[str, Any], top: int) -> None:
    """Per heartbeat, b minus a, the largest changes first."""
    ca, cb = a["calls"], b["calls"]
    na, nb = a["count"], b["count"]
    total_a, total_b = sum(ca.values()) / na, sum(cb.values()) / nb
    print(f"calls per heartbeat: {total_a:.1f} -> {total_b:.1f} ({total_b - total_a:+.1f})")
    change = {k: cb.get(k, 0) / nb - ca.get(k, 0) / na for k in set(ca) | set(cb)}
    for name, d in sorted(change.items(), key=lambda kv: -abs(kv[1]))[:top]:
        if abs(d) >= 0.01:
            print(f"  {d:+7.2f}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=500)
    parser.add_argument("--depth", type=int, default=1, help="heartbeats written together (pipelined)")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--json", help="write the counts here")
    parser.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two --json files")
    args = parser.parse_args()
    if args.diff:
        before, after = (json.loads(Path(p).read_text()) for p in args.diff)
        diff(before, after, args.top)
        return
    result = measure(args.count, args.depth)
    report(result, args.top)
    if args.json:
        Path(args.json).write_text(json.dumps(result))


if __name__ == "__main__":
    main()
