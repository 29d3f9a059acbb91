"""Requests pipelined on one connection: what the per-connection ordering rule costs and keeps.

Plain script, not a test. A real broker in-process (``Broker.open`` on a temporary data dir, the
group runtime, every route, real fsyncs), a real server on 127.0.0.1, and one raw socket that
writes ``--n`` requests in one go and reads every answer. Workloads:

* ``produce``: acks=-1 Produces of one 1,000-byte record to one partition;
* ``commit``: OffsetCommits of one partition by a simple (generation -1) group;
* ``commit_fetch``: OffsetCommit, OffsetFetch, OffsetCommit, ... (``--n`` pairs): every fetch must
  see the commit before it, so each pair waits for its own fsync round.

For each run: wall time until the last answer, the process's CPU time, and the broker's fsync
rounds (``Flusher.rounds``). ``PYTHONPATH=/other/checkout/src`` measures another tree.

    .venv/bin/python bench/pipelined_bench.py [--n 200] [--repeat 3] [--out bench/results/pipelined.json]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import statistics
import struct
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
from groupcoord.formats.batch import build_batch
from groupcoord.protocol.codec import encode_request
from groupcoord.protocol.entities import child, make
from groupcoord.protocol.registry import load_messages
from groupcoord.runtime.group_runtime import GroupRuntime
from groupcoord.server.app import KafkaServer

WORKLOADS = ("produce", "commit", "commit_fetch")


def commit(corr: int, offset: int) -> bytes:
    m = load_messages(8, 8)
    topic_t = child(m.request_type, "topics")
    part_t = child(topic_t, "partitions")
    part = part_t(
        partition_index=0, committed_offset=offset, committed_leader_epoch=-1, committed_metadata=""
    )
    req = make(
        m.request_type,
        group_id="g",
        generation_id_or_member_epoch=-1,
        member_id="",
        group_instance_id=None,
        topics=(topic_t(name="t", partitions=(part,)),),
    )
    return encode_request(m, corr, req)


def fetch_offsets(corr: int) -> bytes:
    m = load_messages(9, 7)
    topic_t = child(m.request_type, "topics")
    req = make(
        m.request_type,
        group_id="g",
        topics=(topic_t(name="t", partition_indexes=(0,)),),
        require_stable=False,
    )
    return encode_request(m, corr, req)


def produce(corr: int) -> bytes:
    m = load_messages(0, 9)
    topic_t = child(m.request_type, "topic_data")
    part_t = child(topic_t, "partition_data")
    records = build_batch([(None, b"x" * 1000, ())], timestamp_ms=0)
    req = make(
        m.request_type,
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(seconds=30),
        topic_data=(topic_t(name="t", partition_data=(part_t(index=0, records=records),)),),
    )
    return encode_request(m, corr, req)


def frames_for(workload: str, n: int) -> list[bytes]:
    if workload == "produce":
        return [produce(i + 1) for i in range(n)]
    if workload == "commit":
        return [commit(i + 1, i) for i in range(n)]
    out: list[bytes] = []
    for i in range(n):
        out += [commit(2 * i + 1, i), fetch_offsets(2 * i + 2)]
    return out


async def one_run(workload: str, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="groupcoord-pipelined-") as d:
        config = BrokerConfig.load(
            None, ["listeners=PLAINTEXT://127.0.0.1:0", "offsets.topic.num.partitions=1"]
        )
        broker = Broker.open(config, Path(d), SystemClock())
        groups = GroupRuntime(broker)
        dispatcher = build_dispatcher(broker, groups)
        server = KafkaServer(dispatcher, host="127.0.0.1", port=0, max_frame_bytes=1 << 27)
        await server.start()
        groups.start()
        await groups.loaded.wait()
        broker.logs.create_topic("t", 1, {})
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        frames = frames_for(workload, n)
        rounds = broker.flusher.rounds
        t0, c0 = time.perf_counter(), time.process_time()
        writer.write(b"".join(frames))
        await writer.drain()
        for _ in frames:
            size = struct.unpack(">i", await reader.readexactly(4))[0]
            await reader.readexactly(size)
        t1, c1 = time.perf_counter(), time.process_time()
        result = {
            "wall_ms": round((t1 - t0) * 1000, 1),
            "cpu_ms": round((c1 - c0) * 1000, 1),
            "fsync_rounds": broker.flusher.rounds - rounds,
        }
        writer.close()
        await server.stop(grace_s=1)
        await groups.close()
        await broker.close()
        return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=200, help="requests (pairs for commit_fetch) per run")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--out", default=str(gb.RESULTS / "pipelined.json"))
    args = ap.parse_args()
    results: dict[str, Any] = {}
    for workload in args.workloads.split(","):
        runs = [asyncio.run(one_run(workload, args.n)) for _ in range(args.repeat)]
        results[workload] = {
            "runs": runs,
            "median_wall_ms": statistics.median(r["wall_ms"] for r in runs),
            "median_fsync_rounds": statistics.median(r["fsync_rounds"] for r in runs),
        }
        print(workload, json.dumps(results[workload]))
    out = {"machine": gb.machine(), "args": vars(args), "result": results}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2, default=str) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
