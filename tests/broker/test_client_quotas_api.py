"""DescribeClientQuotas (key 48) and AlterClientQuotas (key 49) over the raw wire (kio entities),
through ``groupcoord quotas`` and ``groupcoord.testing``; kept across a restart.

Validation and messages are Kafka's: ``ClientQuotaControlManager`` (alter: ``validateEntity``,
``configKeysForEntityType``, ``validateQuotaKeyValue``; ``ClientQuotaControlManagerTest``) and
``ClientQuotasImage.describe`` / ``matches`` (``ClientQuotasImageTest``,
``ClientQuotasRequestTest``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from groupcoord.admin.client import AdminError
from groupcoord.errors import ErrorCode
from groupcoord.protocol.client import WireClient
from groupcoord.testing import DEFAULT_ENTITY, Broker
from wire_testing import wire_client

DESCRIBE, ALTER = 48, 49


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with Broker() as b:
        yield b


@pytest.fixture
def client(broker: Broker) -> Iterator[WireClient]:
    with wire_client(broker) as c:
        yield c


def alter(
    client: WireClient,
    entity: list[tuple[str, str | None]],
    ops: list[tuple[str, float | None]],
    validate_only: bool = False,
    version: int = 1,
) -> tuple[int, str | None]:
    r = client.call(
        ALTER,
        version,
        entries=[
            {
                "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                "ops": [{"key": k, "value": 0.0 if v is None else v, "remove": v is None} for k, v in ops],
            }
        ],
        validate_only=validate_only,
    )
    (entry,) = r.entries
    return int(entry.error_code), entry.error_message


def describe(
    client: WireClient, components: list[tuple[str, int, str | None]], strict: bool = False, version: int = 1
) -> Any:
    return client.call(
        DESCRIBE,
        version,
        components=[{"entity_type": t, "match_type": m, "match": x} for t, m, x in components],
        strict=strict,
    )


def entries(r: Any) -> dict[tuple[tuple[str, str | None], ...], dict[str, float]]:
    assert int(r.error_code) == 0, r
    return {
        tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity)): {
            v.key: v.value for v in entry.values
        }
        for entry in r.entries
    }


@pytest.mark.parametrize("version", [0, 1])
def test_alter_then_describe_exact_default_and_any_matches(client: WireClient, version: int) -> None:
    u = f"alice-v{version}"
    assert alter(client, [("user", u)], [("producer_byte_rate", 1024.0)], version=version) == (0, None)
    assert alter(client, [("user", u), ("client-id", "c1")], [("consumer_byte_rate", 2048.0)]) == (0, None)
    assert alter(client, [("user", None)], [("request_percentage", 50.5)]) == (0, None)
    # exact user: both entities with that user (not strict)
    got = entries(describe(client, [("user", 0, u)], version=version))
    assert got == {
        (("user", u),): {"producer_byte_rate": 1024.0},
        (("client-id", "c1"), ("user", u)): {"consumer_byte_rate": 2048.0},
    }
    # strict: only entities made of exactly the filter's types
    assert entries(describe(client, [("user", 0, u)], strict=True)) == {
        (("user", u),): {"producer_byte_rate": 1024.0}
    }
    # default user
    assert entries(describe(client, [("user", 1, None)], strict=True)) == {
        (("user", None),): {"request_percentage": 50.5}
    }
    # any client id with this user
    got = entries(describe(client, [("user", 0, u), ("client-id", 2, None)]))
    assert got == {(("client-id", "c1"), ("user", u)): {"consumer_byte_rate": 2048.0}}
    # removing the last key removes the entity
    assert alter(client, [("user", u)], [("producer_byte_rate", None)]) == (0, None)
    assert (("user", u),) not in entries(describe(client, [("user", 0, u)]))
    assert alter(client, [("user", u), ("client-id", "c1")], [("consumer_byte_rate", None)]) == (0, None)
    assert alter(client, [("user", None)], [("request_percentage", None)]) == (0, None)


def test_validate_only_changes_nothing(client: WireClient) -> None:
    assert alter(client, [("client-id", "vo")], [("producer_byte_rate", 10.0)], validate_only=True) == (
        0,
        None,
    )
    assert entries(describe(client, [("client-id", 0, "vo")])) == {}


INVALID = int(ErrorCode.INVALID_REQUEST)


@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        ([], [("producer_byte_rate", 1.0)], "Invalid empty client quota entity"),
        ([("group", "g")], [("producer_byte_rate", 1.0)], "Unhandled client quota entity type: group"),
        ([("user", "")], [("producer_byte_rate", 1.0)], "Empty user not supported"),
        (
            [("user", "u"), ("user", "v")],
            [("producer_byte_rate", 1.0)],
            "Invalid client quota entity, duplicate entity entry user",
        ),
        (
            [("ip", "127.0.0.1"), ("user", "u")],
            [("connection_creation_rate", 1.0)],
            "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId",
        ),
        (
            [("user", "u")],
            [("connection_creation_rate", 1.0)],
            "Invalid configuration key connection_creation_rate",
        ),
        (
            [("ip", "127.0.0.1")],
            [("producer_byte_rate", 1.0)],
            "Invalid configuration key producer_byte_rate",
        ),
        ([("user", "u")], [("producer_byte_rate", 0.0)], "Quota producer_byte_rate must be greater than 0"),
        ([("user", "u")], [("producer_byte_rate", 1.5)], "producer_byte_rate cannot be a fractional value."),
        (
            [("ip", "no.such.host.invalid")],
            [("connection_creation_rate", 1.0)],
            "no.such.host.invalid is not a valid IP or resolvable host.",
        ),
        (
            [("user", "u")],
            [("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)],
            "Duplicate quota key producer_byte_rate not updating quota for this entity {user=u}",
        ),
    ],
)
def test_invalid_alterations_get_kafkas_error_and_message(
    client: WireClient,
    entity: list[tuple[str, str | None]],
    ops: list[tuple[str, float | None]],
    message: str,
) -> None:
    assert alter(client, entity, ops) == (INVALID, message)


@pytest.mark.parametrize(
    ("components", "code", "message"),
    [
        ([("user", 0, None)], INVALID, "Request specified MATCH_TYPE_EXACT, but set match string to null."),
        (
            [("user", 1, "x")],
            INVALID,
            "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.",
        ),
        (
            [("user", 2, "x")],
            INVALID,
            "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.",
        ),
        (
            [("user", 0, "a"), ("user", 2, None)],
            INVALID,
            "Entity type user cannot appear more than once in the filter.",
        ),
        ([("user", 7, None)], INVALID, "Unknown match type 7"),
        ([("group", 2, None)], int(ErrorCode.UNSUPPORTED_VERSION), "Unsupported entity type group"),
        (
            [("ip", 2, None), ("client-id", 2, None)],
            INVALID,
            "Invalid entity filter component combination. IP filter component should not be used "
            "with user or clientId filter component.",
        ),
    ],
)
def test_invalid_describe_filters_get_kafkas_error(
    client: WireClient, components: list[tuple[str, int, str | None]], code: int, message: str
) -> None:
    r = describe(client, components)
    assert (int(r.error_code), r.error_message, r.entries) == (code, message, None)


def test_quotas_survive_a_restart_and_testing_set_quota_reads_back() -> None:
    with Broker() as b:
        b.set_quota(client_id="keep", producer_byte_rate=4096)
        b.set_quota(ip=DEFAULT_ENTITY, connection_creation_rate=100)
        b.restart()
        assert b.quotas() == {
            (("client-id", "keep"),): {"producer_byte_rate": 4096.0},
            (("ip", None),): {"connection_creation_rate": 100.0},
        }
        b.set_quota(client_id="keep", producer_byte_rate=None)
        assert b.quotas(client_id="keep") == {}
        with pytest.raises(AdminError, match="must be greater than 0"):
            b.set_quota(user="u", consumer_byte_rate=-1)


def test_cli_quotas_alter_and_list(broker: Broker) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "groupcoord", "quotas", *args, "--bootstrap", broker.bootstrap],
            capture_output=True,
            text=True,
            timeout=60,
        )

    done = cli(
        "alter",
        "--user",
        "cli-user",
        "--client-id-default",
        "--add",
        "producer_byte_rate=2048",
        "--add",
        "request_percentage=25.5",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Completed updating config for client-id=<default>, user=cli-user.\n"
    listed = cli("list", "--user", "cli-user")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == (
        "Quota configs for client-id=<default>, user=cli-user are "
        "producer_byte_rate=2048, request_percentage=25.5\n"
    )
    refused = cli("alter", "--user", "cli-user", "--add", "consumer_byte_rate=1.5")
    assert refused.returncode == 1
    assert "INVALID_REQUEST: consumer_byte_rate cannot be a fractional value." in refused.stderr
    assert (
        cli(
            "alter",
            "--user",
            "cli-user",
            "--client-id-default",
            "--delete",
            "producer_byte_rate",
            "--delete",
            "request_percentage",
        ).returncode
        == 0
    )
    assert cli("list", "--user", "cli-user").stdout == ""
