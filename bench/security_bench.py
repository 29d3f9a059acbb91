"""The cost of TLS, SASL and the authorizer: produce and consume MB/s and commits/s with
confluent-kafka, against PLAINTEXT, in one run.

    .venv/bin/python bench/security_bench.py [--records 50000] [--size 1024] [--commits 2000]
        [--repeat 2] [--out bench/results/security.json]

Starts two brokers (``python -m groupcoord serve --config``) on temporary data dirs:

* broker A, no authorizer, three listeners: PLAINTEXT, SSL, SASL_SSL (SCRAM-SHA-512);
* broker B, ``authorizer.class.name`` set with 200 ACL bindings (most for other principals and
  prefixes, as a shared cluster has), a PLAINTEXT listener whose ``User:ANONYMOUS`` is allowed by
  a PREFIXED binding, and a SASL_PLAINTEXT listener for the super user that creates them.

For each mode it produces ``--records`` records of ``--size`` bytes (acks=1), consumes them back
(assign from offset 0), and makes ``--commits`` synchronous offset commits, and records MB/s and
commits/s, after a warm-up round, best of ``--repeat`` rounds. The brokers are stopped by PID.
The CA is made with ``trustme``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
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

from groupcoord.testing.security import TestCA

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peer

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-pw";'


def _serve(props: str, tmp: Path, name: str) -> subprocess.Popen[str]:
    path = tmp / f"{name}.properties"
    path.write_text(props + f"log.dirs={tmp / name}\n")
    proc, _ = peer.spawn_serve(peer.serve_command(config=path), what=f"broker {name}")
    return proc


def _run(conf: dict[str, Any], records: int, size: int, commits: int) -> dict[str, float]:
    topic = f"sec-{os.urandom(4).hex()}"
    value = os.urandom(size)
    producer = Producer({**conf, "linger.ms": 5, "acks": 1})
    started = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    produce_s = time.perf_counter() - started

    consumer = Consumer({**conf, "group.id": f"g-{topic}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    got = 0
    started = time.perf_counter()
    while got < records:
        for msg in consumer.consume(1000, 5.0):
            if msg.error() is None:
                got += 1
    consume_s = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(commits):
        consumer.commit(offsets=[TopicPartition(topic, 0, i + 1)], asynchronous=False)
    commit_s = time.perf_counter() - started
    consumer.close()
    mb = records * size / 1e6
    return {
        "produce_mb_s": round(mb / produce_s, 1),
        "consume_mb_s": round(mb / consume_s, 1),
        "commits_s": round(commits / commit_s, 0),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=50_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--commits", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=2)
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
        for name, conf in modes.items():
            _run(conf, 2000, args.size, 50)  # warm-up: codecs, connections, the first topic
            runs = [_run(conf, args.records, args.size, args.commits) for _ in range(args.repeat)]
            results[name] = {k: max(r[k] for r in runs) for k in runs[0]}  # best of the rounds
            print(name, results[name], flush=True)
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
        "args": vars(args),
        "results": results,
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
