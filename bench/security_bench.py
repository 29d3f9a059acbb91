"""The cost of TLS, SASL and the authorizer on the request path: produce and consume MB/s and
commits/s with confluent-kafka, and the broker's CPU per MB and per commit, against PLAINTEXT.

    .venv/bin/python bench/security_bench.py [--records 10000] [--size 1024] [--commits 500]
        [--rounds 12] [--out bench/results/security.json]

Starts two brokers (``python -m groupcoord serve --config``) on temporary data dirs:

* broker A, no authorizer, three listeners: PLAINTEXT, SSL, SASL_SSL (SCRAM-SHA-512);
* broker B, ``authorizer.class.name`` set with 200 ACL bindings (most for other principals and
  prefixes, as a shared cluster has), a PLAINTEXT listener whose ``User:ANONYMOUS`` is allowed by
  a PREFIXED binding, and a SASL_PLAINTEXT listener for the super user that creates them.

A machine shared with other busy processes makes one long run per mode meaningless (the spread
between two runs of one mode was larger than any difference between modes), so the run is many
short rounds: in each round every mode produces ``--records`` records of ``--size`` bytes (acks=1),
consumes them back (assign from offset 0) and makes ``--commits`` synchronous offset commits, the
modes' order alternating from round to round (forward, then reversed), each mode paired with the
PLAINTEXT run of its own round. Besides the clients' rates it reads the serving broker's CPU
time (``/proc/<pid>/task/*/schedstat``, nanoseconds on a CPU) over each phase: CPU per MB and per
commit is what the broker spends, and depends far less on what else the machine runs than
wall-clock rates do. The
report gives each mode's medians and the median of its per-round ratios to PLAINTEXT. The brokers
are stopped by PID. The CA is made with ``trustme``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from groupcoord.broker import acl
from groupcoord.testing.security import TestCA

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw";'


def _serve(props: str, tmp: Path, name: str) -> subprocess.Popen[str]:
    path = tmp / f"{name}.properties"
    path.write_text(props + f"log.dirs={tmp / name}\n")
    proc, _ = peer.spawn_serve(peer.serve_command(config=path), what=f"broker {name}")
    return proc


def _cpu_s(pid: int) -> float:
    """The time the process's threads have run on a CPU so far, in seconds: the sum of each
    thread's ``/proc/<pid>/task/<tid>/schedstat`` (nanoseconds; ``/proc/<pid>/stat``'s clock
    ticks are 10 ms, too coarse for a short round)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):  # a thread that ended meanwhile
            continue
    return total / 1e9


def _run(conf: dict[str, Any], pid: int, records: int, size: int, commits: int) -> dict[str, float]:
    topic = f"sec-{os.urandom(4).hex()}"
    value = os.urandom(size)
    producer = Producer({**conf, "linger.ms": 5, "acks": 1})
    cpu0, started = _cpu_s(pid), time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    produce_s, produce_cpu = time.perf_counter() - started, _cpu_s(pid) - cpu0

    consumer = Consumer({**conf, "group.id": f"g-{topic}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    cpu0, started = _cpu_s(pid), time.perf_counter()
    while got < records:
        for msg in consumer.consume(1000, 5.0):
            if msg.error() is None:
                got += 1
    consume_s, consume_cpu = time.perf_counter() - started, _cpu_s(pid) - cpu0
    cpu0, started = _cpu_s(pid), time.perf_counter()
    for i in range(commits):
        consumer.commit(offsets=[TopicPartition(topic, 0, i + 1)], asynchronous=False)
    commit_s, commit_cpu = time.perf_counter() - started, _cpu_s(pid) - cpu0
    consumer.close()
    mb = records * size / 1e6
    return {
        "produce_mb_s": mb / produce_s,
        "consume_mb_s": mb / consume_s,
        "commits_s": commits / commit_s,
        "produce_cpu_ms_per_mb": 1000 * produce_cpu / mb,
        "consume_cpu_ms_per_mb": 1000 * consume_cpu / mb,
        "commit_cpu_us": 1e6 * commit_cpu / commits,
    }


def _authorizer_micro(tmp: Path) -> dict[str, float]:
    """The authorizer's own cost, in-process and without the network: microseconds per
    decision with broker B's 200 bindings, answered from the decision cache (every check after
    a connection's first) and decided afresh (the first, or after the bindings change: a scan of
    every binding). An OffsetCommit makes two checks (READ on the group and on the topic), a
    Produce or Fetch one per topic."""
    (tmp / "micro").mkdir()
    store = acl.AclStore(tmp / "micro")
    store.add(
        [
            acl.AclBinding(
                resource_type=acl.Resource.TOPIC if i % 2 else acl.Resource.GROUP,
                resource_name=f"team{i}.",
                pattern_type=acl.Pattern.PREFIXED,
                principal=f"User:other{i}",
                host="*",
                operation=acl.Op.READ,
                permission=acl.Permission.ALLOW,
            )
            for i in range(196)
        ]
        + [
            acl.AclBinding(
                resource_type=r,
                resource_name=prefix,
                pattern_type=acl.Pattern.PREFIXED,
                principal="User:ANONYMOUS",
                host="*",
                operation=acl.Op.ALL,
                permission=acl.Permission.ALLOW,
            )
            for r, prefix in ((acl.Resource.TOPIC, "sec-"), (acl.Resource.GROUP, "g-sec-"))
        ]
    )
    authorizer = acl.Authorizer(store, enabled=True)
    args = ("User:ANONYMOUS", "127.0.0.1", acl.Op.READ, acl.Resource.TOPIC, "sec-0123abcd")
    assert authorizer.authorize(*args)
    n = 20_000
    cached = min(timeit.repeat(lambda: authorizer.authorize(*args), number=n, repeat=7)) / n
    fresh = min(timeit.repeat(lambda: authorizer._decide(*args), number=n // 20, repeat=7)) / (n // 20)
    return {"cached_us": round(cached * 1e6, 3), "decided_afresh_us": round(fresh * 1e6, 2)}


def _summary(rounds: list[dict[str, dict[str, float]]], base: str) -> dict[str, Any]:
    """Each mode's medians, and the median over rounds of its ratio to ``base`` in that round."""
    out: dict[str, Any] = {}
    for mode in rounds[0]:
        metrics = rounds[0][mode].keys()
        out[mode] = {
            "median": {m: round(statistics.median(r[mode][m] for r in rounds), 2) for m in metrics},
            "ratio_to_plaintext": {
                m: round(statistics.median(r[mode][m] / r[base][m] for r in rounds if r[base][m] > 0), 3)
                for m in metrics
            },
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=10_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--commits", type=int, default=500)
    ap.add_argument("--rounds", type=int, default=12)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "security.json"))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="groupcoord-secbench-"))
    ca = TestCA(tmp / "ca")
    pa = [peer.free_port() for _ in range(3)]
    pb = [peer.free_port() for _ in range(2)]
    a = _serve(
        f"listeners=PLAINTEXT://127.0.0.1:{pa[0]},SSL://127.0.0.1:{pa[1]},SASL_SSL://127.0.0.1:{pa[2]}\n"
        f"ssl.keystore.type=PEM\nssl.keystore.location={ca.server_pem}\n"
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512\n"
        f"listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS}\n",
        tmp,
        "a",
    )
    b = _serve(
        f"listeners=PLAINTEXT://127.0.0.1:{pb[0]},SASL_PLAINTEXT://127.0.0.1:{pb[1]}\n"
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
        "super.users=User:admin\nsasl.enabled.mechanisms=PLAIN\n"
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}\n",
        tmp,
        "b",
    )
    results: dict[str, Any] = {}
    rounds: list[dict[str, dict[str, float]]] = []
    micro = _authorizer_micro(tmp)
    print("authorizer, in-process:", micro, flush=True)
    try:
        admin_a = AdminClient(
            {
                "bootstrap.servers": f"127.0.0.1:{pa[2]}",
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "admin",
                "sasl.password": "admin-pw",
                "ssl.ca.location": str(ca.ca_pem),
            }
        )
        up = UserScramCredentialUpsertion(
            "bench", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"pw"
        )
        for fut in admin_a.alter_user_scram_credentials([up]).values():
            fut.result(30)
        admin_b = AdminClient(
            {
                "bootstrap.servers": f"127.0.0.1:{pb[1]}",
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.username": "admin",
                "sasl.password": "admin-pw",
            }
        )
        bindings = [
            AclBinding(
                ResourceType.TOPIC if i % 2 else ResourceType.GROUP,
                f"team{i}.",
                ResourcePatternType.PREFIXED,
                f"User:other{i}",
                "*",
                AclOperation.READ,
                AclPermissionType.ALLOW,
            )
            for i in range(196)
        ]
        for rtype in (ResourceType.TOPIC, ResourceType.GROUP):
            bindings.append(
                AclBinding(
                    rtype,
                    "sec-" if rtype == ResourceType.TOPIC else "g-sec-",
                    ResourcePatternType.PREFIXED,
                    "User:ANONYMOUS",
                    "*",
                    AclOperation.ALL,
                    AclPermissionType.ALLOW,
                )
            )
        bindings += [
            AclBinding(
                ResourceType.BROKER,
                "kafka-cluster",
                ResourcePatternType.LITERAL,
                "User:ANONYMOUS",
                "*",
                op,
                AclPermissionType.ALLOW,
            )
            for op in (AclOperation.IDEMPOTENT_WRITE, AclOperation.CREATE)
        ]
        for fut in admin_b.create_acls(bindings).values():
            fut.result(30)
        modes = {
            "plaintext": {"bootstrap.servers": f"127.0.0.1:{pa[0]}"},
            "ssl": {
                "bootstrap.servers": f"127.0.0.1:{pa[1]}",
                "security.protocol": "SSL",
                "ssl.ca.location": str(ca.ca_pem),
            },
            "sasl_ssl_scram512": {
                "bootstrap.servers": f"127.0.0.1:{pa[2]}",
                "security.protocol": "SASL_SSL",
                "sasl.mechanism": "SCRAM-SHA-512",
                "sasl.username": "bench",
                "sasl.password": "pw",
                "ssl.ca.location": str(ca.ca_pem),
            },
            "plaintext_authorizer_200_acls": {"bootstrap.servers": f"127.0.0.1:{pb[0]}"},
        }
        pids = {name: (b if "authorizer" in name else a).pid for name in modes}
        for name, conf in modes.items():  # warm-up: codecs, connections, the first topics
            _run(conf, pids[name], 2000, args.size, 50)
        names = list(modes)
        for i in range(args.rounds):
            order = names if i % 2 == 0 else names[::-1]
            this = {n: _run(modes[n], pids[n], args.records, args.size, args.commits) for n in order}
            rounds.append(this)
            print(f"round {i + 1}/{args.rounds}", {n: round(this[n]["commits_s"]) for n in names}, flush=True)
        results = _summary(rounds, "plaintext")
        for name, summary in results.items():
            print(name, summary, flush=True)
    finally:
        for proc in (a, b):
            proc.terminate()
            proc.wait(60)
    out = {
        "machine": {
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
        },
        "load_average": os.getloadavg(),
        "args": vars(args),
        "results": results,
        "authorizer_micro": micro,
        "rounds": rounds,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
