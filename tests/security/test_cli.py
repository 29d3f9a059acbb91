"""``groupcoord acls`` and ``groupcoord users`` over SASL_SSL with ``--command-config``, as
Kafka's ``kafka-acls.sh`` / ``kafka-configs.sh --entity-type users`` take a client properties file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from groupcoord.cli import main
from groupcoord.testing import Broker


@pytest.fixture(scope="module")
def broker() -> Broker:
    with Broker(
        security_protocol="SASL_SSL", users={"admin": "admin-pw"}, acls=True, super_users=["User:admin"]
    ) as b:
        yield b


def _config(
    broker: Broker, tmp_path: Path, user: str, password: str, mechanism: str = "SCRAM-SHA-512"
) -> str:
    assert broker.ca is not None
    path = tmp_path / f"{user}.properties"
    module = "plain.PlainLoginModule" if mechanism == "PLAIN" else "scram.ScramLoginModule"
    path.write_text(
        "security.protocol=SASL_SSL\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config=org.apache.kafka.common.security.{module} required "
        f'username="{user}" password="{password}";\n'
        f"ssl.truststore.type=PEM\nssl.truststore.location={broker.ca.ca_pem}\n"
    )
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, object]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, (json.loads(out) if code == 0 and out.strip().startswith(("[", "{")) else out)


def test_users_and_acls_round_trip(
    broker: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    admin = _config(broker, tmp_path, "admin", "admin-pw")
    common = ["--bootstrap", broker.bootstrap, "--command-config", admin, "--json"]
    code, _ = _run(capsys, "users", "add", "carol", "--password", "carol-pw", "--iterations", "8192", *common)
    assert code == 0
    code, rows = _run(capsys, "users", "list", "carol", *common)
    assert rows == [{"user": "carol", "credentials": [{"mechanism": "SCRAM-SHA-512", "iterations": 8192}]}]
    carol = _config(broker, tmp_path, "carol", "carol-pw")
    # carol authenticates, but may not describe ACLs (CLUSTER DESCRIBE)
    code, _ = _run(
        capsys, "acls", "list", "--bootstrap", broker.bootstrap, "--command-config", carol, "--json"
    )
    assert code == 1
    code, _ = _run(
        capsys,
        "acls",
        "add",
        "--principal",
        "User:carol",
        "--operation",
        "Read",
        "--topic",
        "orders.",
        "--resource-pattern-type",
        "prefixed",
        *common,
    )
    assert code == 0
    code, rows = _run(capsys, "acls", "list", "--principal", "User:carol", *common)
    assert rows == [
        {
            "resource_type": "TOPIC",
            "name": "orders.",
            "pattern_type": "PREFIXED",
            "principal": "User:carol",
            "host": "*",
            "operation": "Read",
            "permission": "ALLOW",
        }
    ]
    code, rows = _run(
        capsys,
        "acls",
        "remove",
        "--principal",
        "User:carol",
        "--topic",
        "orders.",
        "--resource-pattern-type",
        "prefixed",
        *common,
    )
    assert code == 0 and rows == [{"principal": "User:carol", "operation": "Read", "name": "orders."}]
    code, _ = _run(capsys, "users", "remove", "carol", *common)
    assert code == 0
    code, _ = _run(capsys, "users", "list", "carol", *common)
    assert code == 1  # RESOURCE_NOT_FOUND


def test_a_wrong_password_in_the_command_config_is_reported(
    broker: Broker, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _config(broker, tmp_path, "admin", "wrong", mechanism="PLAIN")
    assert main(["acls", "list", "--bootstrap", broker.bootstrap, "--command-config", bad]) == 1
    assert "Invalid username or password" in capsys.readouterr().err
    assert AdminClient(broker.client_config("admin")).list_topics(timeout=20).brokers
