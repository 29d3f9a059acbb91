"""Client quotas (KIP-13, KIP-124, KIP-612): their configuration, as AlterClientQuotas and
DescribeClientQuotas (``broker.client_quotas``) change and read it, kept in the data dir.

An entity is a set of (type, name) pairs, a name of ``None`` meaning the type's default:
``user`` and ``client-id`` (alone or together) carry ``producer_byte_rate``,
``consumer_byte_rate`` (bytes per second, whole numbers), ``request_percentage`` and
``controller_mutation_rate``; ``ip`` (alone) carries ``connection_creation_rate`` (whole
connections per second). Validation and its error messages are Kafka's
(``ClientQuotaControlManager.alterClientQuotaEntity``, ``validateEntity``,
``configKeysForEntityType``, ``validateQuotaKeyValue``; for describe ``ClientQuotasImage.describe``
and ``matches``): every failure is INVALID_REQUEST with Kafka's message, an unknown entity type in
a describe filter UNSUPPORTED_VERSION. Each entry of an alteration succeeds or fails on its own;
``validate_only`` checks without changing anything.

The quotas live in ``client-quotas.json`` in the data dir (written to a temporary file, fsynced
and renamed before the answer), so they survive a restart. Who enforces them:
``server.client_quotas`` (byte rates, request time, throttling) and
``server.connection_quotas`` (``connection_creation_rate``), told of every change through
:attr:`ClientQuotaStore.listeners` (wired in ``groupcoord.app``); ``controller_mutation_rate``
by ``server.client_quotas`` too, on CreateTopics, CreatePartitions and DeleteTopics
(``broker.topics``).
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from groupcoord.errors import ErrorCode

log = logging.getLogger(__name__)

USER, CLIENT_ID, IP = "user", "client-id", "ip"

#: QuotaConfig.userAndClientQuotaConfigs / ipConfigs: key -> integral (LONG/INT) or not (DOUBLE)
USER_CLIENT_KEYS: dict[str, bool] = {
    "producer_byte_rate": True,
    "consumer_byte_rate": True,
    "request_percentage": False,
    "controller_mutation_rate": False,
}
IP_KEYS: dict[str, bool] = {"connection_creation_rate": True}
_INT_MAX = 2**31 - 1

#: An entity: its (type, name) pairs sorted by type; a name of None is the type's default.
Entity = tuple[tuple[str, str | None], ...]
Quotas = Mapping[Entity, Mapping[str, float]]

FILE_NAME = "client-quotas.json"


class QuotaError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _invalid(message: str) -> QuotaError:
    return QuotaError(ErrorCode.INVALID_REQUEST, message)


def describe_entity(entity: Entity) -> str:
    return "{" + ", ".join(f"{t}={'<default>' if n is None else n}" for t, n in entity) + "}"


class ClientQuotaStore:
    """The configured quotas, persisted; :meth:`alter` and :meth:`describe` as Kafka validates
    them. ``listeners`` are called with every entity's quotas after each change."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self.quotas: dict[Entity, dict[str, float]] = {}
        self.listeners: list[Callable[[Quotas], None]] = []
        if self.path.exists():
            for row in json.loads(self.path.read_text()):
                entity = tuple(sorted((str(t), None if n is None else str(n)) for t, n in row["entity"]))
                self.quotas[entity] = {str(k): float(v) for k, v in row["quotas"].items()}

    def _save(self) -> None:
        rows = [
            {"entity": [list(pair) for pair in entity], "quotas": values}
            for entity, values in sorted(self.quotas.items(), key=lambda kv: repr(kv[0]))
        ]
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(rows, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def _notify(self) -> None:
        for listener in self.listeners:
            listener(self.quotas)

    # ------------------------------------------------------------------ alter
    def alter(
        self,
        entries: Iterable[tuple[list[tuple[str, str | None]], list[tuple[str, float | None]]]],
        validate_only: bool,
    ) -> list[tuple[list[tuple[str, str | None]], ErrorCode, str | None]]:
        """Each entry (entity pairs as sent, ops as (key, value or None to remove)); its outcome."""
        results: list[tuple[list[tuple[str, str | None]], ErrorCode, str | None]] = []
        changed = False
        for pairs, ops in entries:
            try:
                entity = self._check_entity(pairs)
                keys = self._keys_for(entity)
                alterations: dict[str, float | None] = {}
                for key, value in ops:
                    if key in alterations:
                        named = describe_entity(entity)
                        msg = f"Duplicate quota key {key} not updating quota for this entity {named}"
                        raise _invalid(msg)
                    alterations[key] = value
                for key, value in alterations.items():
                    if value is not None:
                        _check_value(keys, key, value)
            except QuotaError as exc:
                results.append((pairs, exc.code, exc.message))
                continue
            if not validate_only:
                current = self.quotas.setdefault(entity, {})
                for key, value in alterations.items():
                    if value is None:
                        current.pop(key, None)
                    else:
                        current[key] = value
                if not current:
                    del self.quotas[entity]
                changed = True
            results.append((pairs, ErrorCode.NONE, None))
        if changed:
            self._save()
            self._notify()
        return results

    @staticmethod
    def _check_entity(pairs: list[tuple[str, str | None]]) -> Entity:
        if not pairs:
            raise _invalid("Invalid empty client quota entity")
        seen: dict[str, str | None] = {}
        for entity_type, name in pairs:
            if entity_type in seen:
                raise _invalid(f"Invalid client quota entity, duplicate entity entry {entity_type}")
            if entity_type not in (USER, CLIENT_ID, IP):
                raise _invalid(f"Unhandled client quota entity type: {entity_type}")
            if name is not None and name == "":
                raise _invalid(f"Empty {entity_type} not supported")
            seen[entity_type] = name
        return tuple(sorted(seen.items(), key=lambda kv: kv[0]))

    @staticmethod
    def _keys_for(entity: Entity) -> dict[str, bool]:
        types = dict(entity)
        if IP in types:
            if USER in types or CLIENT_ID in types:
                raise _invalid(
                    "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
                )
            ip = types[IP]
            if ip is not None:
                try:
                    socket.gethostbyname(ip)
                except OSError:
                    raise _invalid(f"{ip} is not a valid IP or resolvable host.") from None
            return IP_KEYS
        return USER_CLIENT_KEYS

    # ------------------------------------------------------------------ describe
    def describe(
        self, components: Iterable[tuple[str, int, str | None]], strict: bool
    ) -> list[tuple[Entity, dict[str, float]]]:
        """The entities a filter matches (``ClientQuotasImage.describe``); raises QuotaError."""
        exact: dict[str, str | None] = {}
        typed: set[str] = set()
        for entity_type, match_type, match in components:
            if not entity_type:
                raise _invalid("Invalid empty entity type.")
            if entity_type in exact or entity_type in typed:
                raise _invalid(f"Entity type {entity_type} cannot appear more than once in the filter.")
            if entity_type not in (IP, USER, CLIENT_ID):
                raise QuotaError(ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {entity_type}")
            if match_type == 0:
                if match is None:
                    raise _invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
                exact[entity_type] = match
            elif match_type == 1:
                if match is not None:
                    raise _invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
                exact[entity_type] = None
            elif match_type == 2:
                if match is not None:
                    raise _invalid(
                        "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                    )
                typed.add(entity_type)
            else:
                raise _invalid(f"Unknown match type {match_type}")
        if (IP in exact or IP in typed) and ({USER, CLIENT_ID} & (set(exact) | typed)):
            raise _invalid(
                "Invalid entity filter component combination. IP filter component should not be used "
                "with user or clientId filter component."
            )
        out: list[tuple[Entity, dict[str, float]]] = []
        for entity, values in sorted(self.quotas.items(), key=lambda kv: repr(kv[0])):
            types = dict(entity)
            if strict and len(types) != len(exact) + len(typed):
                continue
            if any(t not in types or types[t] != name for t, name in exact.items()):
                continue
            if any(t not in types for t in typed):
                continue
            out.append((entity, dict(values)))
        return out


def _check_value(keys: Mapping[str, bool], key: str, value: float) -> None:
    """``validateQuotaKeyValue``."""
    integral = keys.get(key)
    if integral is None:
        raise _invalid(f"Invalid configuration key {key}")
    if value <= 0.0:
        raise _invalid(f"Quota {key} must be greater than 0")
    if integral:
        if key == "connection_creation_rate" and value > _INT_MAX:
            raise _invalid(f"Proposed value for {key} is too large for an INT.")
        if abs(value % 1.0) > 1e-6:
            raise _invalid(f"{key} cannot be a fractional value.")
