"""The broker's CPU per group request, in-process, without sockets.

Plain script, not a test. It builds a real broker (``Broker.open`` on a temporary data dir, the
group runtime, the dispatcher with every route) and feeds pre-encoded request frames to
``KafkaConnection`` objects whose transport only collects what is written. Everything a request
costs in the broker's Python is measured (framing, header, bounds check, decoding, the handler,
the coordinator, encoding, the connection's bookkeeping, the ``__consumer_offsets`` append); the
socket system calls, the event loop's polling and fsync are not (the broker runs under an explicit
flush policy, so an answer waits for its write but not for an fsync). CPU time is
``time.process_time()`` (all threads of this process), so a shared machine disturbs it far less
than wall time.

Workloads:

* ``heartbeat``: one member of a Stable group sends ``--heartbeats`` Heartbeats (v4);
* ``commit``: the same member commits one offset (OffsetCommit v8), each answer awaited;
* ``rebalance``: ``--members`` connections form a new group (``group.initial.rebalance.delay.ms=0``):
  JoinGroup with an empty member id (MEMBER_ID_REQUIRED), JoinGroup with the id, SyncGroup (the
  leader's with a round-robin assignment); repeated ``--repeat`` times, one new group each time.

    .venv/bin/python bench/request_path_bench.py [--heartbeats 50000] [--commits 5000] [--members 100]

Results: bench/results/request_path.json. ``PYTHONPATH=/other/checkout/src`` measures another tree.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import group_bench as gb
from groupcoord.app import build_dispatcher
from groupcoord.broker.state import Broker
from groupcoord.clock import SystemClock
from groupcoord.config import BrokerConfig
from groupcoord.protocol.codec import decode_response
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.server.connection import KafkaConnection


class CollectingTransport(asyncio.Transport):
    """A transport that keeps what the connection writes (the answers) and nothing else."""

    def __init__(self) -> None:
        super().__init__()
        self.out: list[bytes] = []

    def write(self, data: Any) -> None:
        self.out.append(bytes(data))

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 1) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def get_write_buffer_limits(self) -> tuple[int, int]:
        # asyncio's defaults (low, high): the connection learns from them, as from a socket
        # transport, that it need not ask for the buffer size on every request.
        return (16 * 1024, 64 * 1024)

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


def frame(messages: Any, request: Any, corr: int) -> bytes:
    return bytes(gb.Template(messages, request).frame(corr))


async def answers(transports: list[CollectingTransport], total: int, timeout_s: float = 30.0) -> None:
    """Run the loop until the transports hold ``total`` answers between them."""
    end = time.monotonic() + timeout_s
    while sum(len(t.out) for t in transports) < total:
        if time.monotonic() > end:
            raise RuntimeError(f"only {sum(len(t.out) for t in transports)} of {total} answers arrived")
        await asyncio.sleep(0)


class Bench:
    def __init__(self, broker: Broker, dispatcher: Any) -> None:
        self.broker = broker
        self.dispatcher = dispatcher
        self.next_id = 0

    def connect(self) -> tuple[KafkaConnection, CollectingTransport]:
        self.next_id += 1
        conn = KafkaConnection(self.dispatcher, self.next_id, 1 << 30)
        transport = CollectingTransport()
        conn.connection_made(transport)
        return conn, transport

    async def form(self, group: str, n: int) -> dict[str, float]:
        """Form a group of n members; CPU seconds per member for each of the three steps."""
        conns = [self.connect() for _ in range(n)]
        ts = [t for _, t in conns]
        meta = gb.subscription("t")
        first = frame(gb.JOIN, gb.join_request(group, "", meta, 10_000, 60_000), 1)
        c0 = time.process_time()
        for c, _ in conns:
            c.data_received(first)
        await answers(ts, n)
        c1 = time.process_time()
        ids = [decode_response(gb.JOIN, t.out[-1][4:])[1].member_id for t in ts]
        joins = [frame(gb.JOIN, gb.join_request(group, m, meta, 10_000, 60_000), 2) for m in ids]
        c2 = time.process_time()
        for (c, _), f in zip(conns, joins, strict=True):
            c.data_received(f)
        await answers(ts, 2 * n)
        c3 = time.process_time()
        joined = [decode_response(gb.JOIN, t.out[-1][4:])[1] for t in ts]
        generations = {j.generation_id for j in joined}
        if len(generations) != 1 or any(j.error_code != 0 for j in joined):
            raise RuntimeError(f"join did not complete in one generation: {generations}")
        gen = joined[0].generation_id
        leader = next(i for i, j in enumerate(joined) if j.leader == j.member_id)
        plan = gb.round_robin(ids, "t", n)
        syncs = [
            frame(gb.SYNC, gb.sync_request(group, gen, m, plan if i == leader else {}, "range"), 3)
            for i, m in enumerate(ids)
        ]
        c4 = time.process_time()
        for (c, _), f in zip(conns, syncs, strict=True):
            c.data_received(f)
        await answers(ts, 3 * n)
        c5 = time.process_time()
        synced = [decode_response(gb.SYNC, t.out[-1][4:])[1] for t in ts]
        if any(s.error_code != 0 for s in synced):
            raise RuntimeError("a SyncGroup failed")
        self.members = list(zip(conns, ids, strict=True))
        self.generation = gen
        return {"join_member_id_required": (c1 - c0) / n, "join": (c3 - c2) / n, "sync": (c5 - c4) / n}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="groupcoord-request-path-") as d:
        # An explicit flush policy (fsync at most hourly): an answer then waits for its write
        # but not for an fsync, whose cost belongs to the disk, not to this path.
        config = BrokerConfig.load(
            None, ["group.initial.rebalance.delay.ms=0", "log.flush.interval.ms=3600000"]
        )
        broker = Broker.open(config, Path(d), SystemClock())
        groups = GroupRuntime(broker)
        dispatcher = build_dispatcher(broker, groups)
        broker.start_maintenance()
        groups.start()
        await groups.loaded.wait()
        broker.logs.create_topic("t", max(args.members, 1), {})  # the topic the members commit to
        bench = Bench(broker, dispatcher)
        out: dict[str, Any] = {}
        try:
            steps = [await bench.form(f"rebalance-{r}", args.members) for r in range(args.repeat)]
            out["rebalance_us_per_member"] = {k: round(min(s[k] for s in steps) * 1e6, 1) for k in steps[0]}
            await bench.form("single", 1)
            (conn, transport), member = bench.members[0]
            hb = gb.Template(gb.HEARTBEAT, gb.heartbeat_request("single", bench.generation, member))
            frames = [bytes(hb.frame(10 + i)) for i in range(args.heartbeats)]
            before = len(transport.out)
            c0 = time.process_time()
            for f in frames:
                conn.data_received(f)
            c1 = time.process_time()
            if (
                len(transport.out) - before != args.heartbeats
                or transport.out[-1][8:] != transport.out[-2][8:]
            ):
                raise RuntimeError("heartbeats were not all answered alike")
            out["heartbeat_us"] = round((c1 - c0) / args.heartbeats * 1e6, 1)
            commit = gb.Template(
                gb.COMMIT,
                gb.commit_request("single", bench.generation, member, "t", 0, gb._SENTINEL_OFFSET),
                patch_i64=gb._SENTINEL_OFFSET,
            )
            frames = [bytes(commit.frame(10 + i, i)) for i in range(args.commits)]
            c0 = time.process_time()
            for f in frames:
                n = len(transport.out)
                conn.data_received(f)
                await answers([transport], n + 1)
            c1 = time.process_time()
            last = decode_response(gb.COMMIT, transport.out[-1][4:])[1]
            codes = {p.error_code for t in last.topics for p in t.partitions}
            if codes != {0}:
                raise RuntimeError(f"the last commit was answered {codes}")
            out["commit_us"] = round((c1 - c0) / args.commits * 1e6, 1)
        finally:
            await groups.close()
            await broker.close()
        return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--heartbeats", type=int, default=50_000)
    ap.add_argument("--commits", type=int, default=5_000)
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=10, help="groups formed; the best per step is reported")
    ap.add_argument("--out", default=str(gb.RESULTS / "request_path.json"))
    args = ap.parse_args()
    result = asyncio.run(run(args))
    out = {"machine": gb.machine(), "args": vars(args), "result": result}
    print(json.dumps(result, indent=2))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, default=str) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
