"""``groupcoord acls list|add|remove`` and ``groupcoord users list|add|remove``: ACL bindings
(DescribeAcls / CreateAcls / DeleteAcls) and SCRAM users (DescribeUserScramCredentials /
AlterUserScramCredentials) over the wire, as Kafka's ``kafka-acls.sh`` and
``kafka-configs.sh --entity-type users`` do.

``--command-config FILE`` takes a client properties file by Kafka's client names:
``security.protocol`` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), ``sasl.mechanism`` (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512) with the user and password from ``sasl.jaas.config``
(``username="..." password="..."``), ``ssl.truststore.location`` / ``ssl.keystore.location``
(PEM files, ``ssl.key.password``) or ``ssl.truststore.certificates`` inline, and
``ssl.endpoint.identification.algorithm`` (``https``, the default, checks the broker's name; empty
does not). The SCRAM exchange is ``scramp``'s client; a SCRAM credential is salted here and
only the salted password is sent (KIP-554).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import ssl
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from scramp import ScramClient

from groupcoord.admin.command import connection_options
from groupcoord.config import parse_properties
from groupcoord.errors import ErrorCode
from groupcoord.protocol.api_keys import ApiKey
from groupcoord.protocol.client import WireClient, WireError

__all__ = ["SecureClient", "register"]

_RESOURCE = {"any": 1, "topic": 2, "group": 3, "cluster": 4, "transactional-id": 5}
_RESOURCE_NAMES = {
    2: "TOPIC",
    3: "GROUP",
    4: "CLUSTER",
    5: "TRANSACTIONAL_ID",
    6: "DELEGATION_TOKEN",
    7: "USER",
}
_PATTERN = {"any": 1, "match": 2, "literal": 3, "prefixed": 4}
_PATTERN_NAMES = {3: "LITERAL", 4: "PREFIXED"}
_OPS = {
    "All": 2,
    "Read": 3,
    "Write": 4,
    "Create": 5,
    "Delete": 6,
    "Alter": 7,
    "Describe": 8,
    "ClusterAction": 9,
    "DescribeConfigs": 10,
    "AlterConfigs": 11,
    "IdempotentWrite": 12,
}
_OP_NAMES = {v: k for k, v in _OPS.items()}
_MECHANISMS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
_MECHANISM_NAMES = {v: k for k, v in _MECHANISMS.items()}
_HASH = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}


class CommandError(Exception):
    """What the user is told (exit status 1)."""


def _jaas_credentials(jaas: str) -> tuple[str, str]:
    found = dict(re.findall(r'(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"', jaas))
    if "username" not in found or "password" not in found:
        raise CommandError('sasl.jaas.config needs username="..." and password="..."')
    return found["username"], found["password"]


class SecureClient:
    """One connection to a broker, with TLS and SASL as the client properties say."""

    def __init__(self, bootstrap: str, props: Mapping[str, str], *, timeout_s: float = 10.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        protocol = props.get("security.protocol", "PLAINTEXT").upper()
        try:
            self.wire = WireClient(
                host or "127.0.0.1", int(port), client_id="groupcoord-admin", timeout_s=timeout_s
            )
        except WireError as exc:
            raise CommandError(str(exc)) from None
        if protocol in ("SSL", "SASL_SSL"):
            self.wire.sock = _tls_context(props).wrap_socket(
                self.wire.sock, server_hostname=host or "127.0.0.1"
            )
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            self._authenticate(props)

    def _authenticate(self, props: Mapping[str, str]) -> None:
        mechanism = props.get("sasl.mechanism", "GSSAPI").upper()
        user, password = _jaas_credentials(props.get("sasl.jaas.config", ""))
        r = self.wire.call(ApiKey.SASL_HANDSHAKE, 1, mechanism=mechanism)
        if r.error_code != 0:
            raise CommandError(f"SASL mechanism {mechanism} refused: {ErrorCode(int(r.error_code)).name}")
        if mechanism == "PLAIN":
            self._token(f"\0{user}\0{password}".encode())
            return
        client = ScramClient([mechanism], user, password)
        server_first = self._token(client.get_client_first().encode())
        client.set_server_first(server_first.decode())
        server_final = self._token(client.get_client_final().encode())
        client.set_server_final(server_final.decode())

    def _token(self, token: bytes) -> bytes:
        r = self.wire.call(ApiKey.SASL_AUTHENTICATE, 2, auth_bytes=token)
        if r.error_code != 0:
            raise CommandError(
                f"authentication failed: {r.error_message or ErrorCode(int(r.error_code)).name}"
            )
        return bytes(r.auth_bytes)

    def call(self, api_key: ApiKey, version: int, **fields: Any) -> Any:
        try:
            return self.wire.call(api_key, version, **fields)
        except WireError as exc:
            raise CommandError(str(exc)) from None

    def close(self) -> None:
        self.wire.close()

    def __enter__(self) -> SecureClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _tls_context(props: Mapping[str, str]) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    if props.get("ssl.truststore.certificates"):
        ctx = ssl.create_default_context(cadata=props["ssl.truststore.certificates"])
    elif props.get("ssl.truststore.location"):
        ctx = ssl.create_default_context(cafile=props["ssl.truststore.location"])
    if props.get("ssl.keystore.location"):
        ctx.load_cert_chain(props["ssl.keystore.location"], password=props.get("ssl.key.password"))
    if props.get("ssl.endpoint.identification.algorithm", "https") == "":
        ctx.check_hostname = False
    return ctx


def _props(args: argparse.Namespace) -> dict[str, str]:
    if not args.command_config:
        return {}
    try:
        return parse_properties(Path(args.command_config).read_text(encoding="utf-8"))
    except OSError as exc:
        raise CommandError(f"cannot read {args.command_config}: {exc.strerror}") from None


def _check(code: Any, message: str | None, what: str) -> None:
    if int(code) != 0:
        raise CommandError(f"{what}: {ErrorCode(int(code)).name}" + (f" ({message})" if message else ""))


# ---------------------------------------------------------------------- acls
def _resource(args: argparse.Namespace, *, required: bool) -> tuple[int, str | None]:
    chosen = [
        (k, v)
        for k, v in (
            ("topic", args.topic),
            ("group", args.group),
            ("transactional-id", args.transactional_id),
        )
        if v
    ]
    if args.cluster:
        chosen.append(("cluster", "kafka-cluster"))
    if len(chosen) > 1:
        raise CommandError("give one of --topic, --group, --transactional-id, --cluster")
    if not chosen:
        if required:
            raise CommandError("give one of --topic, --group, --transactional-id, --cluster")
        return 1, None
    return _RESOURCE[chosen[0][0]], chosen[0][1]


def _filter(args: argparse.Namespace) -> dict[str, Any]:
    rtype, name = _resource(args, required=False)
    return {
        "resource_type_filter": rtype,
        "resource_name_filter": name,
        "pattern_type_filter": _PATTERN[args.resource_pattern_type],
        "principal_filter": args.principal,
        "host_filter": args.host,
        "operation": _OPS[args.operation] if args.operation else 1,
        "permission_type": 1 if args.permission is None else (2 if args.permission == "deny" else 3),
    }


def _acls_list(args: argparse.Namespace, client: SecureClient) -> list[dict[str, Any]]:
    r = client.call(ApiKey.DESCRIBE_ACLS, 3, **_filter(args))
    _check(r.error_code, r.error_message, "DescribeAcls")
    return [
        {
            "resource_type": _RESOURCE_NAMES.get(int(res.resource_type), str(res.resource_type)),
            "name": res.resource_name,
            "pattern_type": _PATTERN_NAMES.get(int(res.pattern_type), str(res.pattern_type)),
            "principal": a.principal,
            "host": a.host,
            "operation": _OP_NAMES.get(int(a.operation), str(a.operation)),
            "permission": "ALLOW" if int(a.permission_type) == 3 else "DENY",
        }
        for res in r.resources
        for a in res.acls
    ]


def _acls_add(args: argparse.Namespace, client: SecureClient) -> list[dict[str, Any]]:
    rtype, name = _resource(args, required=True)
    if not args.principal or not args.operation:
        raise CommandError("acls add needs --principal and --operation")
    pattern = (
        args.resource_pattern_type if args.resource_pattern_type in ("literal", "prefixed") else "literal"
    )
    creation = {
        "resource_type": rtype,
        "resource_name": name,
        "resource_pattern_type": _PATTERN[pattern],
        "principal": args.principal,
        "host": args.host or "*",
        "operation": _OPS[args.operation],
        "permission_type": 2 if args.permission == "deny" else 3,
    }
    r = client.call(ApiKey.CREATE_ACLS, 3, creations=[creation])
    for result in r.results:
        _check(result.error_code, result.error_message, "CreateAcls")
    return [creation]


def _acls_remove(args: argparse.Namespace, client: SecureClient) -> list[dict[str, Any]]:
    _resource(args, required=True)
    r = client.call(ApiKey.DELETE_ACLS, 3, filters=[_filter(args)])
    out = []
    for result in r.filter_results:
        _check(result.error_code, result.error_message, "DeleteAcls")
        out += [
            {"principal": m.principal, "operation": _OP_NAMES.get(int(m.operation)), "name": m.resource_name}
            for m in result.matching_acls
        ]
    return out


# ---------------------------------------------------------------------- users
def _users_list(args: argparse.Namespace, client: SecureClient) -> list[dict[str, Any]]:
    users = [{"name": n} for n in args.names] if args.names else None
    r = client.call(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, users=users)
    _check(r.error_code, r.error_message, "DescribeUserScramCredentials")
    out = []
    for result in r.results:
        _check(result.error_code, result.error_message, f"user {result.user}")
        out.append(
            {
                "user": result.user,
                "credentials": [
                    {"mechanism": _MECHANISM_NAMES.get(int(c.mechanism)), "iterations": int(c.iterations)}
                    for c in result.credential_infos
                ],
            }
        )
    return out


def _users_add(args: argparse.Namespace, client: SecureClient) -> list[dict[str, Any]]:
    password = args.password if args.password is not None else os.environ.get("GROUPCOORD_USER_PASSWORD")
    if not password:
        raise CommandError("users add needs --password (or GROUPCOORD_USER_PASSWORD)")
    salt = os.urandom(32)
    salted = hashlib.pbkdf2_hmac(_HASH[args.mechanism], password.encode(), salt, args.iterations)
    upsertion = {
        "name": args.name,
        "mechanism": _MECHANISMS[args.mechanism],
        "iterations": args.iterations,
        "salt": salt,
        "salted_password": salted,
    }
    r = client.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, deletions=[], upsertions=[upsertion])
    for result in r.results:
        _check(result.error_code, result.error_message, f"user {result.user}")
    return [{"user": args.name, "mechanism": args.mechanism, "iterations": args.iterations}]


def _users_remove(args: argparse.Namespace, client: SecureClient) -> list[dict[str, Any]]:
    r = client.call(
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        0,
        deletions=[{"name": args.name, "mechanism": _MECHANISMS[args.mechanism]}],
        upsertions=[],
    )
    for result in r.results:
        _check(result.error_code, result.error_message, f"user {result.user}")
    return [{"user": args.name, "mechanism": args.mechanism}]


def _run(args: argparse.Namespace) -> int:
    try:
        with SecureClient(args.bootstrap, _props(args), timeout_s=args.timeout) as client:
            rows = args.verb(args, client)
    except (CommandError, ssl.SSLError, OSError) as exc:
        print(f"groupcoord: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print("  ".join(f"{k}={v}" for k, v in row.items()))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``acls`` and ``users`` to the ``groupcoord`` command."""

    def common(p: argparse.ArgumentParser) -> None:
        connection_options(p)
        p.add_argument(
            "--command-config", metavar="FILE", help="client properties (security.protocol, sasl.*, ssl.*)"
        )
        p.add_argument("--json", action="store_true", help="print JSON")
        p.set_defaults(func=_run)

    def acl_args(p: argparse.ArgumentParser, *, pattern_default: str) -> None:
        p.add_argument("--principal", help="User:name (User:* for everyone)")
        p.add_argument("--host", help="client host (default: * for add, any for list/remove)")
        p.add_argument("--operation", choices=sorted(_OPS))
        p.add_argument("--permission", choices=["allow", "deny"])
        p.add_argument("--topic")
        p.add_argument("--group")
        p.add_argument("--transactional-id")
        p.add_argument("--cluster", action="store_true")
        p.add_argument("--resource-pattern-type", choices=sorted(_PATTERN), default=pattern_default)

    acls = subparsers.add_parser("acls", help="list, add and remove ACL bindings")
    sub = acls.add_subparsers(dest="acls_command", required=True)
    for name, verb, default, help_text in (
        ("list", _acls_list, "any", "bindings matching the filter (DescribeAcls)"),
        ("add", _acls_add, "literal", "add one binding (CreateAcls)"),
        ("remove", _acls_remove, "literal", "remove the bindings matching the filter (DeleteAcls)"),
    ):
        p = sub.add_parser(name, help=help_text)
        common(p)
        acl_args(p, pattern_default=default)
        p.set_defaults(verb=verb)

    users = subparsers.add_parser("users", help="list, add and remove SCRAM users")
    sub = users.add_subparsers(dest="users_command", required=True)
    p = sub.add_parser("list", help="users and their SCRAM mechanisms (DescribeUserScramCredentials)")
    common(p)
    p.add_argument("names", nargs="*", metavar="USER")
    p.set_defaults(verb=_users_list)
    for name, verb, help_text in (
        ("add", _users_add, "add or replace a SCRAM credential (AlterUserScramCredentials)"),
        ("remove", _users_remove, "remove a SCRAM credential"),
    ):
        p = sub.add_parser(name, help=help_text)
        common(p)
        p.add_argument("name", metavar="USER")
        p.add_argument("--mechanism", choices=sorted(_MECHANISMS), default="SCRAM-SHA-512")
        if name == "add":
            p.add_argument("--password", help="the password (or GROUPCOORD_USER_PASSWORD)")
            p.add_argument("--iterations", type=int, default=4096)
        p.set_defaults(verb=verb)
