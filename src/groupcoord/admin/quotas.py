"""``groupcoord quotas list|alter``: client quotas over the wire, like kafka-configs.sh's
``--entity-type users|clients|ips`` (KIP-546's DescribeClientQuotas and AlterClientQuotas).

An entity is named on the command line as Kafka's tool names it: ``--user NAME`` /
``--user-default``, ``--client-id NAME`` / ``--client-id-default``, ``--ip ADDRESS`` /
``--ip-default``; ``alter`` takes ``--add KEY=VALUE`` and ``--delete KEY`` (repeatable), ``list``
takes the same entity options as a filter (none: every entity). The functions
:func:`describe_quotas` and :func:`alter_quotas` are what ``groupcoord.testing``'s
``Broker.set_quota`` uses.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence

from groupcoord.admin.client import AdminClient, AdminError, UsageError, error_name
from groupcoord.admin.command import connection_options, guarded

DESCRIBE_CLIENT_QUOTAS, ALTER_CLIENT_QUOTAS = 48, 49
USER, CLIENT_ID, IP = "user", "client-id", "ip"
#: DescribeClientQuotas match types
MATCH_EXACT, MATCH_DEFAULT, MATCH_ANY = 0, 1, 2

#: an entity: (type, name or None for the type's default) pairs
Entity = tuple[tuple[str, str | None], ...]


def describe_quotas(
    admin: AdminClient, entity: Mapping[str, str | None] | None = None, *, strict: bool = False
) -> list[tuple[Entity, dict[str, float]]]:
    """The quotas of the entities matching ``entity`` (type -> name, None for the default; no
    filter: every entity)."""
    components = [
        {
            "entity_type": t,
            "match_type": MATCH_DEFAULT if name is None else MATCH_EXACT,
            "match": name,
        }
        for t, name in (entity or {}).items()
    ]
    r = admin.bootstrap.call(DESCRIBE_CLIENT_QUOTAS, components=components, strict=strict)
    if int(r.error_code) != 0:
        raise AdminError(f"DescribeClientQuotas: {error_name(r.error_code)}: {r.error_message}")
    return [
        (
            tuple(sorted((str(e.entity_type), e.entity_name) for e in entry.entity)),
            {str(v.key): float(v.value) for v in entry.values},
        )
        for entry in r.entries or ()
    ]


def alter_quotas(
    admin: AdminClient,
    entity: Mapping[str, str | None],
    *,
    add: Mapping[str, float] | None = None,
    delete: Sequence[str] = (),
    validate_only: bool = False,
) -> None:
    """Set ``add`` and remove ``delete`` on one entity; AdminError with Kafka's message."""
    ops = [{"key": k, "value": float(v), "remove": False} for k, v in (add or {}).items()]
    ops += [{"key": k, "value": 0.0, "remove": True} for k in delete]
    r = admin.bootstrap.call(
        ALTER_CLIENT_QUOTAS,
        entries=[{"entity": [{"entity_type": t, "entity_name": n} for t, n in entity.items()], "ops": ops}],
        validate_only=validate_only,
    )
    for entry in r.entries:
        if int(entry.error_code) != 0:
            raise AdminError(f"AlterClientQuotas: {error_name(entry.error_code)}: {entry.error_message}")


def format_entity(entity: Entity) -> str:
    return ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in entity)


# ---------------------------------------------------------------------- the verbs


def _entity_of(args: argparse.Namespace) -> dict[str, str | None]:
    entity: dict[str, str | None] = {}
    for entity_type, name, default in (
        (USER, args.user, args.user_default),
        (CLIENT_ID, args.client_id, args.client_id_default),
        (IP, args.ip, args.ip_default),
    ):
        if name is not None and default:
            raise UsageError(f"give either --{entity_type} or --{entity_type}-default, not both")
        if name is not None:
            entity[entity_type] = name
        elif default:
            entity[entity_type] = None
    return entity


def _run_list(args: argparse.Namespace) -> int:
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        found = describe_quotas(admin, _entity_of(args) or None)
    if args.json:
        rows = [{"entity": [list(pair) for pair in entity], "quotas": values} for entity, values in found]
        sys.stdout.write(json.dumps(rows, indent=1) + "\n")
        return 0
    for entity, values in found:
        settings = ", ".join(f"{k}={_number(v)}" for k, v in sorted(values.items()))
        sys.stdout.write(f"Quota configs for {format_entity(entity)} are {settings}\n")
    return 0


def _number(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


def _run_alter(args: argparse.Namespace) -> int:
    entity = _entity_of(args)
    if not entity:
        raise UsageError("name an entity: --user, --client-id or --ip (or their -default forms)")
    add: dict[str, float] = {}
    for item in args.add or ():
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--add wants KEY=VALUE, got {item!r}")
        try:
            add[key.strip()] = float(value)
        except ValueError:
            raise UsageError(f"--add {key}: {value!r} is not a number") from None
    delete = list(args.delete or ())
    if not add and not delete:
        raise UsageError("nothing to change: give --add KEY=VALUE or --delete KEY")
    with AdminClient(args.bootstrap, timeout_s=args.timeout) as admin:
        alter_quotas(admin, entity, add=add, delete=delete)
    sys.stdout.write(f"Completed updating config for {format_entity(tuple(sorted(entity.items())))}.\n")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``groupcoord quotas list|alter``."""
    quotas = subparsers.add_parser("quotas", help="list and alter client quotas")
    sub = quotas.add_subparsers(dest="quotas_command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        connection_options(p)
        p.add_argument("--user", metavar="NAME", help="a user principal's name")
        p.add_argument("--user-default", action="store_true", help="the default user")
        p.add_argument("--client-id", metavar="ID", help="a client id")
        p.add_argument("--client-id-default", action="store_true", help="the default client id")
        p.add_argument("--ip", metavar="ADDRESS", help="a client address (connection_creation_rate)")
        p.add_argument("--ip-default", action="store_true", help="the default address")

    p = sub.add_parser("list", help="the quotas of the entities matching the filter (DescribeClientQuotas)")
    common(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=guarded(_run_list))

    p = sub.add_parser("alter", help="set or remove quotas of one entity (AlterClientQuotas)")
    common(p)
    p.add_argument("--add", action="append", metavar="KEY=VALUE", help="set a quota (repeatable)")
    p.add_argument("--delete", action="append", metavar="KEY", help="remove a quota (repeatable)")
    p.set_defaults(func=guarded(_run_alter))


__all__ = ["alter_quotas", "describe_quotas", "register"]
