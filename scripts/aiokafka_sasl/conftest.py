"""A harness to run aiokafka's own ``tests/test_sasl.py`` against groupcoord.

aiokafka's suite starts Kafka in docker and makes its ACLs and SCRAM users with Kafka's CLI
(``kafka-acls.sh``, ``kafka-configs.sh``). This conftest gives the same fixtures with a
``groupcoord serve`` process instead (a PLAINTEXT listener for the suite's own producers, a
SASL_PLAINTEXT one with PLAIN users ``admin`` and ``test``, the StandardAuthorizer with
``super.users=User:admin;User:ANONYMOUS`` and ``allow.everyone.if.no.acl.found=true``,
``num.partitions=2``), and makes ACLs and users with ``groupcoord acls`` / ``groupcoord users``.

Run (aiokafka's files are theirs, fetched, not kept here)::

    mkdir -p /tmp/aiok/tests && cd /tmp/aiok/tests && touch __init__.py
    cp <this dir>/conftest.py .
    curl -O https://raw.githubusercontent.com/aio-libs/aiokafka/v0.14.0/tests/test_sasl.py
    curl -O https://raw.githubusercontent.com/aio-libs/aiokafka/v0.14.0/tests/_testutil.py
    cd /tmp/aiok && PYTHONPATH=<groupcoord>/src python -m pytest -rA tests/test_sasl.py

Result (docs/security.md): 15 passed, the 2 GSSAPI tests fail (Kerberos is not served), 1 skipped
(Kafka < 1.0 only).
"""

from __future__ import annotations

import asyncio
import gc
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from groupcoord.cli import main as groupcoord

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin" user_test="test";'
OPERATIONS = {
    name.lower(): name
    for name in (
        "All",
        "Read",
        "Write",
        "Create",
        "Delete",
        "Alter",
        "Describe",
        "ClusterAction",
        "DescribeConfigs",
        "AlterConfigs",
        "IdempotentWrite",
    )
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    host: str
    port: int
    sasl_plain_port: int
    admin_config: Path

    @property
    def hosts(self) -> list[str]:
        return [f"{self.host}:{self.port}"]

    def cli(self, *argv: str) -> None:
        common = [
            "--bootstrap",
            f"{self.host}:{self.sasl_plain_port}",
            "--command-config",
            str(self.admin_config),
        ]
        assert groupcoord([*argv, *common]) == 0, argv


@pytest.fixture(scope="session")
def kafka_server() -> Iterator[Server]:
    tmp = Path(tempfile.mkdtemp(prefix="groupcoord-aiokafka-"))
    plain, sasl = _free_port(), _free_port()
    props = tmp / "server.properties"
    props.write_text(
        f"listeners=PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}\n"
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512\n"
        f"listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}\n"
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n"
        "super.users=User:admin;User:ANONYMOUS\nallow.everyone.if.no.acl.found=true\n"
        "group.initial.rebalance.delay.ms=0\nnum.partitions=2\n"
        f"log.dirs={tmp / 'data'}\n"
    )
    admin = tmp / "admin.properties"
    admin.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        'sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" '
        'password="admin";\n'
    )
    with open(tmp / "broker.log", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "groupcoord", "serve", "--config", str(props)],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    assert proc.stdout is not None
    assert proc.stdout.readline().startswith("groupcoord listening")
    yield Server("127.0.0.1", plain, sasl, admin)
    proc.terminate()
    proc.wait(60)


class AclManager:
    """aiokafka's ``ACLManager`` through ``groupcoord acls`` (``--producer`` and ``--consumer``
    expanded as ``kafka-acls.sh`` expands them)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.active: list[dict[str, Any]] = []

    def _apply(self, verb: str, **p: Any) -> None:
        resources: list[list[str]] = []
        if p.get("topic") is not None:
            resources.append(["--topic", p["topic"]])
        if p.get("group") is not None:
            resources.append(["--group", p["group"]])
        if p.get("transactional_id") is not None:
            resources.append(["--transactional-id", p["transactional_id"]])
        if p.get("cluster"):
            resources.append(["--cluster"])
        pairs = [(r, p["operation"]) for r in resources if p.get("operation")]
        if p.get("producer"):
            pairs += [(["--topic", p["topic"]], op) for op in ("Write", "Describe", "Create")]
        if p.get("consumer"):
            pairs += [(["--topic", p["topic"]], op) for op in ("Read", "Describe")]
            pairs += [(["--group", p["group"]], "Read")]
        principal = p.get("allow_principal") or p.get("deny_principal")
        permission = "deny" if p.get("deny_principal") else "allow"
        for resource, op in pairs:
            self.server.cli(
                "acls",
                verb,
                "--principal",
                f"User:{principal}",
                "--operation",
                OPERATIONS[op.lower()],
                "--permission",
                permission,
                *resource,
            )

    def add_acl(self, **p: Any) -> None:
        self._apply("add", **p)
        self.active.append(p)

    def remove_acl(self, **p: Any) -> None:
        self._apply("remove", **p)
        self.active.remove(p)

    def list_acl(self, principal: str | None = None) -> None:
        self.server.cli("acls", "list")

    def cleanup(self) -> None:
        for p in self.active[:]:
            self.remove_acl(**p)


class KafkaConfig:
    """aiokafka's ``KafkaConfig.add_scram_user`` through ``groupcoord users add``."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def add_scram_user(self, username: str, password: str) -> None:
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
            self.server.cli("users", "add", username, "--mechanism", mechanism, "--password", password)


@pytest.fixture(scope="class")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    loop.close()
    gc.collect()
    asyncio.set_event_loop(None)


@pytest.fixture(scope="class")
def setup_test_class(request: Any, loop: asyncio.AbstractEventLoop, kafka_server: Server) -> None:
    cls = request.cls
    cls.loop = loop
    cls.kafka_host = kafka_server.host
    cls.kafka_port = kafka_server.port
    cls.kafka_sasl_plain_port = kafka_server.sasl_plain_port
    cls.acl_manager = AclManager(kafka_server)
    cls.kafka_config = KafkaConfig(kafka_server)
    cls.kerberos_utils = None  # GSSAPI is not served
    cls.hosts = kafka_server.hosts
    cls.kafka_version = "3.9.0"
