"""1,000 consumer-protocol (KIP-848) members against 1,000 classic members: time to a stable
group, and heartbeats/s, over the raw wire, on one broker in one run.

Plain script, not a test. One groupcoord broker (``bench/peer.py``; compiled if the tree is built),
``group.initial.rebalance.delay.ms=0``. Every member is its own connection speaking the real
protocol with the project's codec (``groupcoord.protocol``).

Workloads, for ``--rounds`` rounds with the protocol order rotating each round:

* ``form``: ``--members`` members join one new group subscribed to one topic of ``--partitions``
  partitions.

  - consumer protocol (ConsumerGroupHeartbeat v1, the ``uniform`` assignor): each member behaves as
    Kafka's Java client does (``ConsumerMembershipManager``): a first full heartbeat at epoch 0,
    then, whenever an answer carries an assignment that differs from what it owns, it takes it at
    once and heartbeats *immediately* to acknowledge it (owned partitions in ``topic_partitions``);
    otherwise it heartbeats every interval the broker hands out, with the unchanged fields null.
    Stable: every member holds one and the same epoch, its assignment is acknowledged (answered
    after the heartbeat that reported it), and the assignments are disjoint and cover every
    partition (so each member's equals its target), and that epoch is the group epoch
    (ConsumerGroupDescribe: with Kafka 4.3's assignment batching, members that joined inside
    ``group.consumer.assignment.interval.ms`` sit at the last assignment epoch while the group is
    Assigning; such an epoch is skipped). ConsumerGroupDescribe v1 then confirms it: state
    ``Stable``, every member at the group epoch, assignment equal to target.
  - classic (JoinGroup v7 with MEMBER_ID_REQUIRED, SyncGroup v5, Heartbeat v4,
    ``bench/group_bench.py``'s members): the leader assigns round-robin in the consumer protocol's
    bytes; stable when every member holds the SyncGroup answer of the one generation with all of
    them.

  Reported: seconds from the first request sent to stable, requests sent, the final epoch or
  generation, the broker's CPU seconds meanwhile.

* ``heartbeat``: closed loop (each member's next heartbeat as soon as its answer arrives), for
  ``--seconds``: ``big`` = one group of ``--big`` members; ``small`` = ``--small-groups`` groups of
  ``--small-size`` members. Consumer members send the steady-state heartbeat (epoch, all else
  null); classic ones Heartbeat v4. Answers per second, the broker's CPU per answer.

The heartbeat interval of the consumer groups is ``--interval-ms`` (``group.consumer.heartbeat.
interval.ms`` and its minimum); classic members heartbeat every 3 s (the Java default).

    .venv/bin/python bench/stable848_bench.py [--members 1000] [--partitions 10000] [--rounds 3]
        [--interval-ms 5000] [--seconds 5] [--big 50] [--small-groups 100] [--small-size 5]
        [--workloads form,heartbeat] [--pure] [--out bench/results/stable848.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from kio.schema.consumer_group_describe.v1.request import ConsumerGroupDescribeRequest
from kio.schema.consumer_group_heartbeat.v1.request import ConsumerGroupHeartbeatRequest, TopicPartitions
from kio.static.primitive import i32, i32Timedelta

sys.path.insert(0, str(Path(__file__).resolve().parent))
import group_bench
import peer
from group_bench import Conn, GroupWatch, Template
from groupcoord.protocol.registry import load_messages

CGH = load_messages(68, 1)
CGD = load_messages(69, 1)
FENCED_MEMBER_EPOCH = 110
UNKNOWN_MEMBER_ID = 25
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
CLASSIC_HEARTBEAT_S = 3.0
SESSION_MS = 45_000
#: The partitions of the one topic the heartbeat workload's consumer groups subscribe to.
HB_PARTITIONS = 100

Owned = dict[uuid.UUID, frozenset[int]]


def cgh_request(
    group: str,
    member_id: str,
    epoch: int,
    *,
    topic: str | None = None,
    owned: Owned | None = None,
) -> ConsumerGroupHeartbeatRequest:
    """A ConsumerGroupHeartbeat v1: full (``topic`` given: a join) or only what changed."""
    full = topic is not None
    return ConsumerGroupHeartbeatRequest(
        group_id=group,  # type: ignore[arg-type]
        member_id=member_id,
        member_epoch=i32(epoch),
        instance_id=None,
        rack_id=None,
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=60_000 if full else -1)),
        subscribed_topic_names=(topic,) if full else None,  # type: ignore[arg-type]
        subscribed_topic_regex=None,
        server_assignor="uniform" if full else None,
        topic_partitions=(
            None
            if owned is None
            else tuple(
                TopicPartitions(topic_id=t, partitions=tuple(i32(p) for p in sorted(ps)))
                for t, ps in owned.items()
            )
        ),
    )


class ConsumerWatch:
    """The consumer-protocol members' shared view, to see when the group is stable."""

    def __init__(self, size: int, partitions: int) -> None:
        self.size = size
        self.partitions = partitions
        self.members: list[ConsumerMember] = []
        self.done = asyncio.Event()
        self.done_at = 0.0
        self.epoch = -1
        self.errors: dict[str, int] = {}
        self.dirty = False
        #: Epochs at which the members looked stable but ConsumerGroupDescribe showed a newer
        #: group epoch: with Kafka 4.3's assignment batching (KIP-1263) members that joined inside
        #: the interval sit at the last assignment epoch, the group Assigning, until the next
        #: computation; only the broker knows the group epoch.
        self.rejected: set[int] = set()

    def check(self) -> None:
        if self.done.is_set() or not self.dirty:
            return
        self.dirty = False
        ms = self.members
        epochs = {m.epoch for m in ms}
        if len(epochs) != 1 or epochs & self.rejected or not all(m.acked for m in ms):
            return
        if sum(m.owned_count for m in ms) != self.partitions:
            return
        seen: set[tuple[uuid.UUID, int]] = set()
        for m in ms:
            for t, ps in m.owned.items():
                seen.update((t, p) for p in ps)
        if len(seen) != self.partitions:
            return
        (self.epoch,) = epochs
        self.done_at = max(m.answered_at for m in ms)
        self.done.set()


class ConsumerMember:
    """One consumer-protocol member on its own connection, reconciling as the Java client does."""

    def __init__(
        self,
        conn: Conn,
        watch: ConsumerWatch,
        group: str,
        topic: str,
        interval_s: float,
        *,
        own_interval: bool = False,
    ) -> None:
        """``interval_s`` is used between heartbeats only with ``own_interval`` (a bench that
        forms many groups fast); otherwise the member waits the interval the broker hands out."""
        self.own_interval = own_interval
        self.conn = conn
        self.watch = watch
        self.group = group
        self.topic = topic
        self.interval_s = interval_s
        self.member_id = uuid.uuid4().hex  # v1: the client generates its member id
        self.epoch = 0
        self.owned: Owned = {}
        self.owned_count = 0
        self.acked = False
        self.answered_at = 0.0
        self.first_answer_at = 0.0
        self.requests = 0
        self.stop = asyncio.Event()

    async def run(self) -> None:
        request = cgh_request(self.group, self.member_id, 0, topic=self.topic, owned={})
        reported: Owned | None = {}
        while not self.stop.is_set():
            self.requests += 1
            resp = await self.conn.call(CGH, request)
            self.answered_at = time.perf_counter()
            if not self.first_answer_at:
                self.first_answer_at = self.answered_at
            code = int(resp.error_code)
            if code != 0:
                key = f"heartbeat:{code}"
                self.watch.errors[key] = self.watch.errors.get(key, 0) + 1
                if code in (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID):
                    self.owned, self.owned_count, self.epoch = {}, 0, 0
                    request = cgh_request(self.group, self.member_id, 0, topic=self.topic, owned={})
                    reported = {}
                    continue
                if code in (COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE):
                    await asyncio.sleep(0.05)
                    continue
                raise RuntimeError(f"member {self.member_id}: ConsumerGroupHeartbeat error {code}")
            self.epoch = int(resp.member_epoch)
            interval_s = self.interval_s if self.own_interval else resp.heartbeat_interval.total_seconds()
            changed = False
            if resp.assignment is not None:
                new = {
                    tp.topic_id: frozenset(int(p) for p in tp.partitions)
                    for tp in resp.assignment.topic_partitions
                }
                new = {t: ps for t, ps in new.items() if ps}
                if new != self.owned:
                    # Revoking and assigning take no time here: the member acknowledges at once.
                    self.owned = new
                    self.owned_count = sum(len(ps) for ps in new.values())
                    changed = True
            self.acked = not changed and reported == self.owned
            self.watch.dirty = True
            if changed:
                reported = dict(self.owned)
                request = cgh_request(self.group, self.member_id, self.epoch, owned=reported)
                continue
            request = cgh_request(self.group, self.member_id, self.epoch)
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.stop.wait(), interval_s)


async def open_conns(host: str, port: int, n: int) -> list[Conn]:
    conns: list[Conn] = []
    for start in range(0, n, 100):  # in waves, so the listen backlog never overflows
        conns += await asyncio.gather(*(Conn.open(host, port) for _ in range(start, min(n, start + 100))))
    return conns


async def describe(host: str, port: int, group: str) -> Any:
    conn = await Conn.open(host, port)
    try:
        resp = await conn.call(
            CGD, ConsumerGroupDescribeRequest(group_ids=(group,), include_authorized_operations=False)
        )  # type: ignore[arg-type]
    finally:
        conn.close()
    (described,) = resp.groups
    return described


async def form_consumer(
    host: str,
    port: int,
    broker: peer.BrokerProcess,
    *,
    topic: str,
    members: int,
    partitions: int,
    interval_s: float,
    timeout_s: float,
    keep: bool = False,
    own_interval: bool = False,
) -> tuple[dict[str, Any], list[ConsumerMember]]:
    group = f"b848-c-{uuid.uuid4().hex[:8]}"
    watch = ConsumerWatch(members, partitions)
    conns = await open_conns(host, port, members)
    watch.members = [
        ConsumerMember(c, watch, group, topic, interval_s, own_interval=own_interval) for c in conns
    ]
    out: dict[str, Any] = {"protocol": "consumer", "members": members, "partitions": partitions}
    bcpu0 = broker.cpu_seconds()
    t0 = time.perf_counter()
    tasks = [asyncio.create_task(m.run()) for m in watch.members]
    try:
        deadline = t0 + timeout_s
        while True:
            while not watch.done.is_set():
                for t in tasks:
                    if t.done() and t.exception() is not None:
                        raise t.exception()  # type: ignore[misc]
                if time.perf_counter() > deadline:
                    raise TimeoutError(f"not stable after {timeout_s} s")
                watch.check()
                await asyncio.sleep(0.005)
            # The members agree; the group epoch may still be ahead of theirs (a target not
            # computed yet, KIP-1263): then wait for the next epoch they all reach.
            d = await describe(host, port, group)
            if int(d.group_epoch) == watch.epoch:
                break
            watch.rejected.add(watch.epoch)
            watch.done = asyncio.Event()
            watch.dirty = True
        out["stable_s"] = round(watch.done_at - t0, 3)
        # when the join storm was through: the last member's first answer
        out["last_join_answer_s"] = round(max(m.first_answer_at for m in watch.members) - t0, 3)
        out["epoch"] = watch.epoch
        out["requests"] = sum(m.requests for m in watch.members)
        out["broker_cpu_s"] = round(broker.cpu_seconds() - bcpu0, 3)
        out["errors"] = dict(watch.errors)
        d = await describe(host, port, group)
        out["described"] = {
            "state": d.group_state,
            "group_epoch": int(d.group_epoch),
            "assignment_epoch": int(d.assignment_epoch),
            "members": len(d.members),
            "members_at_group_epoch": sum(1 for m in d.members if int(m.member_epoch) == int(d.group_epoch)),
            "assignment_is_target": all(m.assignment == m.target_assignment for m in d.members),
        }
        out["ok"] = (
            d.group_state == "Stable"
            and out["described"]["members_at_group_epoch"] == members
            and out["described"]["assignment_is_target"]
        )
    except Exception as exc:
        out.update(ok=False, error=repr(exc), errors=dict(watch.errors))
    finally:
        if not keep:
            for m in watch.members:
                m.stop.set()
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for c in conns:
                c.close()
    return out, watch.members


async def form_classic(
    host: str, port: int, broker: peer.BrokerProcess, *, members: int, partitions: int, timeout_s: float
) -> dict[str, Any]:
    # The classic coordinator never looks at the topic (the leader assigns), so none is created:
    # the broker holds three descriptors per partition, and the machine's limit is 20,000.
    tag = uuid.uuid4().hex[:8]
    topic, group = f"b848-k-{tag}", f"b848-k-{tag}"
    watch = GroupWatch(size=members)
    ms = await group_bench.open_members(
        host, port, members, watch, group=group, topic=topic, partitions=partitions,
        session_ms=SESSION_MS, heartbeat_interval_s=CLASSIC_HEARTBEAT_S,
    )  # fmt: skip
    out: dict[str, Any] = {"protocol": "classic", "members": members, "partitions": partitions}
    bcpu0 = broker.cpu_seconds()
    t0 = watch.t0 = time.perf_counter()
    tasks = [asyncio.create_task(m.run()) for m in ms]
    try:
        await group_bench.wait_in_sync(watch, tasks, timeout_s)
        owned: list[int] = []
        for m in ms:
            if m.assignment is not None:
                for _, parts in m.assignment.partitions:
                    owned += parts
        out.update(
            stable_s=round(watch.done_at - t0, 3),
            generation=watch.done_generation,
            requests=sum(m.requests for m in ms),
            broker_cpu_s=round(broker.cpu_seconds() - bcpu0, 3),
            errors=dict(watch.errors),
            ok=sorted(owned) == list(range(partitions)),
        )
    except Exception as exc:
        out.update(ok=False, error=repr(exc), errors=dict(watch.errors))
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        group_bench.close_members(ms)
    return out


# ============================================================================ heartbeats/s
async def consumer_heartbeats(
    host: str,
    port: int,
    broker: peer.BrokerProcess,
    *,
    topic: str,
    partitions: int,
    groups: int,
    size: int,
    seconds: float,
    interval_s: float,
) -> dict[str, Any]:
    """Closed loop of steady-state ConsumerGroupHeartbeats over ``groups`` stable groups (formed
    all at once, their members heartbeating every 20 ms until stable: only the loop is measured)."""
    formed: list[ConsumerMember] = []
    result: dict[str, Any] = {"protocol": "consumer", "groups": groups, "members_per_group": size}
    outs = await asyncio.gather(
        *(
            form_consumer(
                host,
                port,
                broker,
                topic=topic,
                members=size,
                partitions=partitions,
                interval_s=0.02,
                timeout_s=120,
                keep=True,
                own_interval=True,
            )
            for _ in range(groups)
        )
    )
    for _, ms in outs:
        formed += ms
    for out, _ in outs:
        if not out.get("ok"):
            for m in formed:
                m.stop.set()
                m.conn.close()
            return {**result, "ok": False, "error": f"forming: {out}"}
    for m in formed:
        m.stop.set()
    await asyncio.sleep(0.2)  # let the members' loops leave their last wait
    holders = []
    for i, m in enumerate(formed):
        holder = group_bench.Member(
            i, m.conn, GroupWatch(size=1), group=m.group, topic=m.topic, partitions=1,
            session_ms=SESSION_MS, rebalance_ms=60_000, heartbeat_interval_s=1.0,
        )  # fmt: skip
        holders.append(holder)
    lanes = [
        group_bench._Lane(
            member=h, template=Template(CGH, cgh_request(m.group, m.member_id, m.epoch)), slot=i
        )
        for i, (h, m) in enumerate(zip(holders, formed, strict=True))
    ]
    return await group_bench._drive(
        lanes, holders, kind="heartbeat", seconds=seconds, warmup_s=1.0, broker=broker, result=result
    )


async def classic_heartbeats(
    host: str, port: int, broker: peer.BrokerProcess, *, groups: int, size: int, seconds: float
) -> dict[str, Any]:
    result: dict[str, Any] = {"protocol": "classic", "groups": groups, "members_per_group": size}
    formed: list[group_bench.Member] = []
    lanes = []
    for _ in range(groups):
        tag = uuid.uuid4().hex[:8]
        watch = GroupWatch(size=size)
        ms = await group_bench.open_members(
            host, port, size, watch, group=f"b848-hk-{tag}", topic=f"b848-hk-{tag}", partitions=HB_PARTITIONS,
            session_ms=SESSION_MS, heartbeat_interval_s=60.0,
        )  # fmt: skip
        tasks = [asyncio.create_task(m.run()) for m in ms]
        await group_bench.wait_in_sync(watch, tasks, 120)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for m in ms:
            tmpl = Template(
                group_bench.HEARTBEAT, group_bench.heartbeat_request(m.group, m.generation, m.member_id)
            )
            lanes.append(group_bench._Lane(member=m, template=tmpl, slot=len(lanes)))
        formed += ms
    return await group_bench._drive(
        lanes, formed, kind="heartbeat", seconds=seconds, warmup_s=1.0, broker=broker, result=result
    )


# ============================================================================ running
def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    vals = [r[key] for r in rows if r.get(key) is not None and r.get("ok")]
    return round(statistics.median(vals), 3) if vals else None


async def run(args: argparse.Namespace, broker: peer.BrokerProcess, results: dict[str, Any]) -> None:
    host, port = broker.bootstrap.split(":")
    p = int(port)
    protocols = ["consumer", "classic"]
    workloads = args.workloads.split(",")
    await asyncio.sleep(group_bench.SETTLE_S)
    # One topic for every consumer group of a workload (each topic partition costs the broker three
    # file descriptors; 10,000 partitions and 1,000 connections exceed this machine's 20,000).
    big_topic = f"b848-form-{uuid.uuid4().hex[:8]}"
    hb_topic = f"b848-hb-{uuid.uuid4().hex[:8]}"
    if "form" in workloads:
        await group_bench.create_topic(host, p, big_topic, args.partitions)
    if "heartbeat" in workloads:
        await group_bench.create_topic(host, p, hb_topic, HB_PARTITIONS)
    for rnd in range(args.rounds):
        order = protocols[rnd % 2 :] + protocols[: rnd % 2]
        if "form" in workloads:
            for proto in order:
                if proto == "consumer":
                    row, _ = await form_consumer(
                        host, p, broker, topic=big_topic, members=args.members, partitions=args.partitions,
                        interval_s=args.interval_ms / 1000, timeout_s=args.timeout,
                    )  # fmt: skip
                else:
                    row = await form_classic(
                        host,
                        p,
                        broker,
                        members=args.members,
                        partitions=args.partitions,
                        timeout_s=args.timeout,
                    )
                row = {"round": rnd, "load_average": os.getloadavg()[0], **row}
                results["form"].append(row)
                print(json.dumps(row), flush=True)
        if "heartbeat" in workloads:
            for shape, groups, size in (("big", 1, args.big), ("small", args.small_groups, args.small_size)):
                for proto in order:
                    if proto == "consumer":
                        row = await consumer_heartbeats(
                            host, p, broker, topic=hb_topic, partitions=HB_PARTITIONS, groups=groups,
                            size=size, seconds=args.seconds, interval_s=args.interval_ms / 1000,
                        )  # fmt: skip
                    else:
                        row = await classic_heartbeats(
                            host, p, broker, groups=groups, size=size, seconds=args.seconds
                        )
                    row = {"round": rnd, "shape": shape, "load_average": os.getloadavg()[0], **row}
                    results["heartbeat"].append(row)
                    print(json.dumps({k: v for k, v in row.items() if k != "unexpected_answers"}), flush=True)
    summary: dict[str, Any] = {}
    for proto in protocols:
        forms = [r for r in results["form"] if r["protocol"] == proto]
        summary[proto] = {"stable_s": _median(forms, "stable_s"), "requests": _median(forms, "requests"),
                          "broker_cpu_s": _median(forms, "broker_cpu_s")}  # fmt: skip
        for shape in ("big", "small"):
            hbs = [r for r in results["heartbeat"] if r["protocol"] == proto and r["shape"] == shape]
            summary[proto][f"heartbeats_per_s_{shape}"] = _median(hbs, "per_second")
            summary[proto][f"broker_us_per_heartbeat_{shape}"] = _median(hbs, "broker_us_per_request")
    results["summary"] = summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--partitions", type=int, default=6_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--interval-ms", type=int, default=5000)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--big", type=int, default=50)
    ap.add_argument("--small-groups", type=int, default=100)
    ap.add_argument("--small-size", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument("--workloads", default="form,heartbeat")
    ap.add_argument(
        "--pure", action="store_true", help="run the broker as pure Python even if this tree is compiled"
    )
    ap.add_argument(
        "--assignment-interval-ms",
        type=int,
        default=None,
        help="group.consumer.assignment.interval.ms (KIP-1263; default: the broker's, 1000; 0: a "
        "target per epoch bump, as Kafka 4.1)",
    )
    ap.add_argument("--out", default=str(group_bench.RESULTS / "stable848.json"))
    args = ap.parse_args()
    settings = {
        "group.initial.rebalance.delay.ms": "0",
        "group.consumer.heartbeat.interval.ms": str(args.interval_ms),
        "group.consumer.min.heartbeat.interval.ms": str(min(args.interval_ms, 5000)),
    }
    if args.assignment_interval_ms is not None:
        settings["group.consumer.assignment.interval.ms"] = str(args.assignment_interval_ms)
    results: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": {**group_bench.machine(), "load_average_at_start": os.getloadavg()},
        "broker_settings": settings,
        "broker_event_loop": group_bench.broker_event_loop(),
        "broker_build": "pure Python (--pure: GROUPCOORD_PURE=1)" if args.pure else _compiled(),
        "form": [],
        "heartbeat": [],
    }
    broker = peer.start_groupcoord(settings, env={"GROUPCOORD_PURE": "1"} if args.pure else None)
    try:
        asyncio.run(run(args, broker, results))
    finally:
        broker.stop()
    results["machine"]["load_average_at_end"] = os.getloadavg()
    print(json.dumps(results["summary"], indent=1), flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


def _compiled() -> str:
    """Whether a broker started from this tree runs compiled (it imports the same package)."""
    from groupcoord import native

    return native.status().describe()


if __name__ == "__main__":
    main()
