"""ACLs and the authorizer, as Kafka's ``StandardAuthorizer`` decides.

An ACL binding is a resource pattern (type, name, LITERAL or PREFIXED; the LITERAL name ``*``
matches every name) and an entry (principal or ``User:*``, host or ``*``, operation,
ALLOW or DENY). :meth:`Authorizer.authorize` follows ``StandardAuthorizerData``:

1. a super user (``super.users``, ``User:a;User:b``) is allowed everything;
2. of the ACLs whose pattern matches the resource, one that matches the principal, the host and
   the operation and DENIES wins; else one that ALLOWS; an ALLOW of READ, WRITE, DELETE or ALTER
   also allows DESCRIBE, an ALLOW of ALTER_CONFIGS also DESCRIBE_CONFIGS (a DENY implies
   nothing); ALL matches every operation;
3. when no ACL's pattern matches the resource at all, ``allow.everyone.if.no.acl.found``
   decides (default false); when some do but none applies, the answer is DENIED.

Bindings are kept in ``acls.json`` in the data dir, replaced atomically on each change.
:data:`SUPPORTED_OPERATIONS` feeds the authorized-operations fields of Metadata, DescribeGroups
and DescribeCluster (``broker/authorized_ops.py``).
"""

from __future__ import annotations

import enum
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "STANDARD_AUTHORIZER",
    "AclBinding",
    "AclFilter",
    "AclStore",
    "Authorizer",
    "Op",
    "Pattern",
    "Permission",
    "Resource",
]

#: ``authorizer.class.name`` values that turn the authorizer on (Kafka's KRaft and ZooKeeper ones)
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
_ACCEPTED_AUTHORIZERS = frozenset({STANDARD_AUTHORIZER, "kafka.security.authorizer.AclAuthorizer"})

WILDCARD = "*"
#: decisions kept before the cache starts over
_MAX_DECISIONS = 100_000
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"
FILE_NAME = "acls.json"


class Resource(enum.IntEnum):
    """Kafka's ``ResourceType`` codes."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class Pattern(enum.IntEnum):
    """Kafka's ``PatternType`` codes (ANY and MATCH only in filters)."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class Op(enum.IntEnum):
    """Kafka's ``AclOperation`` codes."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class Permission(enum.IntEnum):
    """Kafka's ``AclPermissionType`` codes."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: The operations each resource type supports (Kafka's ``AclEntry.supportedOperations``).
SUPPORTED_OPERATIONS: dict[Resource, tuple[Op, ...]] = {
    Resource.TOPIC: (
        Op.READ,
        Op.WRITE,
        Op.CREATE,
        Op.DESCRIBE,
        Op.DELETE,
        Op.ALTER,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
    ),
    Resource.GROUP: (Op.READ, Op.DESCRIBE, Op.DELETE),
    Resource.CLUSTER: (
        Op.CREATE,
        Op.CLUSTER_ACTION,
        Op.DESCRIBE_CONFIGS,
        Op.ALTER_CONFIGS,
        Op.IDEMPOTENT_WRITE,
        Op.ALTER,
        Op.DESCRIBE,
    ),
    Resource.TRANSACTIONAL_ID: (Op.DESCRIBE, Op.WRITE),
    Resource.DELEGATION_TOKEN: (Op.DESCRIBE,),
    Resource.USER: (Op.CREATE_TOKENS, Op.DESCRIBE_TOKENS),
}

_IMPLIES_DESCRIBE = frozenset({Op.DESCRIBE, Op.READ, Op.WRITE, Op.DELETE, Op.ALTER})
_IMPLIES_DESCRIBE_CONFIGS = frozenset({Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS})


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class AclBinding:
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission: int

    def matches_resource(self, resource_type: int, name: str) -> bool:
        if self.resource_type != resource_type:
            return False
        if self.pattern_type == Pattern.LITERAL:
            return self.resource_name in (name, WILDCARD)
        if self.pattern_type == Pattern.PREFIXED:
            return name.startswith(self.resource_name)
        return False

    def validate(self) -> str | None:
        """Why a binding may not be created (Kafka's ``AclControlManager.validateNewAcl``), or None."""
        if self.resource_type in (Resource.UNKNOWN, Resource.ANY) or self.resource_type not in set(Resource):
            return "Invalid resourceType " + str(self.resource_type)
        if self.pattern_type not in (Pattern.LITERAL, Pattern.PREFIXED):
            return "Invalid patternType " + str(self.pattern_type)
        if self.operation in (Op.UNKNOWN, Op.ANY) or self.operation not in set(Op):
            return "Invalid operation " + str(self.operation)
        if self.permission not in (Permission.ALLOW, Permission.DENY):
            return "Invalid permissionType " + str(self.permission)
        if not self.resource_name:
            return "Resource name should not be empty"
        if self.resource_type == Resource.CLUSTER and self.resource_name != CLUSTER_NAME:
            return "The only valid name for the CLUSTER resource is kafka-cluster"
        if ":" not in self.principal:
            return (
                f"Could not parse principal from `{self.principal}` "
                "(no colon is present separating the principal type from name)"
            )
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class AclFilter:
    """DescribeAcls / DeleteAcls filters: None (or ANY) matches everything."""

    resource_type: int = Resource.ANY
    resource_name: str | None = None
    pattern_type: int = Pattern.ANY
    principal: str | None = None
    host: str | None = None
    operation: int = Op.ANY
    permission: int = Permission.ANY

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != Resource.ANY and acl.resource_type != self.resource_type:
            return False
        if self.pattern_type == Pattern.MATCH:
            # the bindings that would apply to a resource of this name
            if self.resource_name is not None and not (
                acl.matches_resource(acl.resource_type, self.resource_name)
            ):
                return False
        else:
            if self.pattern_type != Pattern.ANY and acl.pattern_type != self.pattern_type:
                return False
            if self.resource_name is not None and acl.resource_name != self.resource_name:
                return False
        if self.principal is not None and acl.principal != self.principal:
            return False
        if self.host is not None and acl.host != self.host:
            return False
        if self.operation != Op.ANY and acl.operation != self.operation:
            return False
        return self.permission == Permission.ANY or acl.permission == self.permission


class AclStore:
    """Every ACL binding, kept in the data dir."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self.bindings: set[AclBinding] = set()
        #: bumped on every change (the authorizer's decision cache follows it)
        self.version = 0
        if self.path.exists():
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            self.bindings = {AclBinding(**item) for item in raw.get("acls", [])}

    def add(self, bindings: Iterable[AclBinding]) -> None:
        self.bindings.update(bindings)
        self.version += 1
        self.save()

    def remove(self, bindings: Iterable[AclBinding]) -> None:
        self.bindings.difference_update(bindings)
        self.version += 1
        self.save()

    def matching(self, f: AclFilter) -> list[AclBinding]:
        return sorted(b for b in self.bindings if f.matches(b))

    def save(self) -> None:
        items = [
            {
                "resource_type": b.resource_type,
                "resource_name": b.resource_name,
                "pattern_type": b.pattern_type,
                "principal": b.principal,
                "host": b.host,
                "operation": b.operation,
                "permission": b.permission,
            }
            for b in sorted(self.bindings)
        ]
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"version": 1, "acls": items}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)


class _EmptyStore(AclStore):
    """No bindings and no file (a settings check)."""

    def __init__(self) -> None:
        self.path = Path(os.devnull)
        self.bindings = set()
        self.version = 0

    def save(self) -> None:
        return None


class Authorizer:
    """``authorizer.class.name`` set: decisions by the ACLs (``enabled``); not set: everything
    is allowed, as Kafka without an authorizer."""

    def __init__(
        self,
        store: AclStore | None,
        *,
        enabled: bool = False,
        super_users: Iterable[str] = (),
        allow_if_no_acl: bool = False,
    ) -> None:
        self.store = store if store is not None else _EmptyStore()
        self.enabled = enabled
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_if_no_acl
        #: decisions made since the bindings last changed: a request checks the same few
        #: (principal, host, operation, resource) over and over, and each decision scans every
        #: binding of the resource type
        self._decisions: dict[tuple[str, str, int, int, str], bool] = {}
        self._version = -1

    @classmethod
    def from_settings(
        cls, store: AclStore | None, class_name: str | None, super_users: str | None, allow: str | None
    ) -> Authorizer:
        """From ``authorizer.class.name``, ``super.users`` and ``allow.everyone.if.no.acl.found``;
        :class:`ValueError` naming the key at fault."""
        if class_name and class_name not in _ACCEPTED_AUTHORIZERS:
            raise ValueError(
                f"bad value for authorizer.class.name: {class_name!r} "
                f"(groupcoord's authorizer is {STANDARD_AUTHORIZER})"
            )
        if allow not in (None, "true", "false"):
            raise ValueError(f"bad value for allow.everyone.if.no.acl.found: {allow!r} (true or false)")
        users = [u.strip() for u in (super_users or "").split(";") if u.strip()]
        return cls(store, enabled=bool(class_name), super_users=users, allow_if_no_acl=allow == "true")

    def authorize(self, principal: str, host: str, op: Op, resource_type: Resource, name: str) -> bool:
        if not self.enabled or principal in self.super_users:
            return True
        store = self.store
        if self._version != store.version:
            self._decisions.clear()
            self._version = store.version
        key = (principal, host, int(op), int(resource_type), name)
        found = self._decisions.get(key)
        if found is None:
            found = self._decide(principal, host.lstrip("/"), op, resource_type, name)
            if len(self._decisions) >= _MAX_DECISIONS:
                self._decisions.clear()
            self._decisions[key] = found
        return found

    def _decide(self, principal: str, host: str, op: Op, resource_type: Resource, name: str) -> bool:
        principals = (principal, WILDCARD_PRINCIPAL)
        has_resource_acls = False
        allowed = False
        for acl in self.store.bindings:
            if not acl.matches_resource(resource_type, name):
                continue
            has_resource_acls = True
            result = _result(acl, principals, host, op)
            if result is False:
                return False  # a matching DENY wins
            if result is True:
                allowed = True
        if allowed:
            return True
        return self.allow_if_no_acl if not has_resource_acls else False

    def authorize_any(self, principal: str, host: str, op: Op, resource_type: Resource) -> bool:
        """Whether ``op`` is allowed on some resource of the type (Kafka's
        ``authorizeByResourceType``): an ALLOW binding for the principal that no DENY on a
        literal name, the wildcard or a covering prefix cancels."""
        if not self.enabled or principal in self.super_users:
            return True
        host = host.lstrip("/")
        principals = (principal, WILDCARD_PRINCIPAL)
        bindings = [b for b in self.store.bindings if b.resource_type == resource_type]
        denies = [b for b in bindings if _result(b, principals, host, op) is False]
        if any(d.pattern_type == Pattern.LITERAL and d.resource_name == WILDCARD for d in denies):
            return False
        for allow in bindings:
            if _result(allow, principals, host, op) is not True:
                continue
            if not any(_covers(d, allow) for d in denies):
                return True
        return False


def _covers(deny: AclBinding, allow: AclBinding) -> bool:
    if deny.pattern_type == Pattern.LITERAL:
        return allow.pattern_type == Pattern.LITERAL and deny.resource_name == allow.resource_name
    return allow.resource_name.startswith(deny.resource_name)


def _result(acl: AclBinding, principals: tuple[str, str], host: str, op: Op) -> bool | None:
    """True (ALLOW applies), False (DENY applies) or None (does not apply): Kafka's
    ``StandardAuthorizerData.findResult``."""
    if acl.principal not in principals:
        return None
    if acl.host != WILDCARD and acl.host != host:
        return None
    if acl.operation != Op.ALL:
        if acl.permission == Permission.ALLOW:
            if op == Op.DESCRIBE:
                if acl.operation not in _IMPLIES_DESCRIBE:
                    return None
            elif op == Op.DESCRIBE_CONFIGS:
                if acl.operation not in _IMPLIES_DESCRIBE_CONFIGS:
                    return None
            elif acl.operation != op:
                return None
        elif acl.operation != op:
            return None
    return acl.permission == Permission.ALLOW
