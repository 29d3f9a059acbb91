"""SCRAM credentials: kept in the data dir as salted keys, managed by AlterUserScramCredentials
(key 51) and DescribeUserScramCredentials (key 50), KIP-554.

The broker never sees a SCRAM password: the admin client sends the salt, the iteration count
and the salted password (``Hi(password, salt, i)``, RFC 5802), and the broker keeps what a SCRAM
server needs, StoredKey and ServerKey (as Kafka's ``ScramCredential`` /
``ScramCredentialUtils``). The file ``scram-credentials.json`` in the data dir holds them
(base64), replaced atomically on each change.

Validation and error codes follow Kafka's ``ScramControlManager`` / ``ControllerApis``: an
unknown mechanism is UNSUPPORTED_SASL_MECHANISM, iterations outside [4096, 16384] or an empty
name, salt or salted password UNACCEPTABLE_CREDENTIAL, the same (user, mechanism) twice in one
request DUPLICATE_RESOURCE, deleting or describing what does not exist RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groupcoord.errors import ErrorCode
from groupcoord.handling import RequestContext
from groupcoord.protocol.entities import NO_THROTTLE, child, err, make

__all__ = ["MECHANISM_NAMES", "ScramStore", "StoredCredential"]

#: The wire's mechanism numbers (Kafka's ``ScramMechanism.type()``).
MECHANISM_NAMES = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
_NUMBERS = {name: number for number, name in MECHANISM_NAMES.items()}
_HASHES = {"SCRAM-SHA-256": hashlib.sha256, "SCRAM-SHA-512": hashlib.sha512}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384

FILE_NAME = "scram-credentials.json"


@dataclass(frozen=True, slots=True, kw_only=True)
class StoredCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def derive(mechanism: str, salted_password: bytes, salt: bytes, iterations: int) -> StoredCredential:
    """StoredKey = H(HMAC(SaltedPassword, "Client Key")), ServerKey = HMAC(SaltedPassword,
    "Server Key") (RFC 5802 §3). Written out: ``scramp`` derives them from a password only, and
    the wire gives the salted password."""
    digest = _HASHES[mechanism]
    client_key = hmac.new(salted_password, b"Client Key", digest).digest()
    return StoredCredential(
        salt=salt,
        stored_key=digest(client_key).digest(),
        server_key=hmac.new(salted_password, b"Server Key", digest).digest(),
        iterations=iterations,
    )


class ScramStore:
    """(user, mechanism) -> salted credential, persisted in the data dir."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / FILE_NAME
        self._creds: dict[tuple[str, str], StoredCredential] = {}
        if self.path.exists():
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            for item in raw.get("credentials", []):
                self._creds[(item["user"], item["mechanism"])] = StoredCredential(
                    salt=base64.b64decode(item["salt"]),
                    stored_key=base64.b64decode(item["stored_key"]),
                    server_key=base64.b64decode(item["server_key"]),
                    iterations=int(item["iterations"]),
                )

    def get(self, mechanism: str, user: str) -> StoredCredential | None:
        return self._creds.get((user, mechanism))

    def users(self) -> dict[str, list[tuple[str, int]]]:
        out: dict[str, list[tuple[str, int]]] = {}
        for (user, mechanism), cred in sorted(self._creds.items()):
            out.setdefault(user, []).append((mechanism, cred.iterations))
        return out

    def put(self, user: str, mechanism: str, cred: StoredCredential) -> None:
        self._creds[(user, mechanism)] = cred

    def delete(self, user: str, mechanism: str) -> bool:
        return self._creds.pop((user, mechanism), None) is not None

    def set_password(
        self, user: str, mechanism: str, password: str, iterations: int = MIN_ITERATIONS
    ) -> None:
        """Add a credential from a password (``groupcoord.testing``, bootstrap users)."""
        salt = os.urandom(24)
        salted = hashlib.pbkdf2_hmac(_HASHES[mechanism]().name, password.encode(), salt, iterations)
        self.put(user, mechanism, derive(mechanism, salted, salt, iterations))

    def save(self) -> None:
        items = [
            {
                "user": user,
                "mechanism": mechanism,
                "salt": base64.b64encode(c.salt).decode(),
                "stored_key": base64.b64encode(c.stored_key).decode(),
                "server_key": base64.b64encode(c.server_key).decode(),
                "iterations": c.iterations,
            }
            for (user, mechanism), c in sorted(self._creds.items())
        ]
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"version": 1, "credentials": items}, f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)


# ---------------------------------------------------------------------- wire handlers
def alter_user_scram_credentials(broker: Any, ctx: RequestContext, request: Any) -> Any:
    """AlterUserScramCredentials (key 51) against ``broker.scram``."""
    store: ScramStore = broker.scram
    resp_t = broker.registry.lookup(ctx.api_key, ctx.api_version).response_type
    result_t = child(resp_t, "results")
    seen: set[tuple[str, int]] = set()
    twice: set[tuple[str, int]] = set()
    for item in (*request.deletions, *request.upsertions):
        key = (str(item.name), int(item.mechanism))
        (twice if key in seen else seen).add(key)
    results = []
    changed = False

    def result(user: str, code: ErrorCode, message: str | None) -> None:
        results.append(make(result_t, user=user, error_code=err(code), error_message=message))

    for d in request.deletions:
        user, number = str(d.name), int(d.mechanism)
        problem = _check_common(user, number, twice)
        if problem is not None:
            result(user, *problem)
        elif not store.delete(user, MECHANISM_NAMES[number]):
            result(
                user, ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
            )
        else:
            changed = True
            result(user, ErrorCode.NONE, None)
    for u in request.upsertions:
        user, number, iterations = str(u.name), int(u.mechanism), int(u.iterations)
        problem = _check_common(user, number, twice)
        if problem is None:
            if iterations < MIN_ITERATIONS:
                problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
            elif iterations > MAX_ITERATIONS:
                problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
            elif not u.salt or not u.salted_password:
                problem = (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty")
        if problem is not None:
            result(user, *problem)
            continue
        mechanism = MECHANISM_NAMES[number]
        store.put(user, mechanism, derive(mechanism, bytes(u.salted_password), bytes(u.salt), iterations))
        changed = True
        result(user, ErrorCode.NONE, None)
    if changed:
        store.save()
    return make(resp_t, throttle_time=NO_THROTTLE, results=tuple(results))


def _check_common(user: str, number: int, twice: set[tuple[str, int]]) -> tuple[ErrorCode, str] | None:
    if not user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if number not in MECHANISM_NAMES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if (user, number) in twice:
        return ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"
    return None


def describe_user_scram_credentials(broker: Any, ctx: RequestContext, request: Any) -> Any:
    """DescribeUserScramCredentials (key 50) from ``broker.scram``."""
    store: ScramStore = broker.scram
    resp_t = broker.registry.lookup(ctx.api_key, ctx.api_version).response_type
    result_t = child(resp_t, "results")
    info_t = child(result_t, "credential_infos")
    known = store.users()
    names = sorted(known) if request.users is None else [str(u.name) for u in request.users]
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    results = []
    for name in dict.fromkeys(names):
        if counts[name] > 1:
            code, message, infos = (
                ErrorCode.DUPLICATE_RESOURCE,
                "Cannot describe SCRAM credentials for the same user twice in a single request",
                (),
            )
        elif name not in known:
            code, message, infos = ErrorCode.RESOURCE_NOT_FOUND, "Attempt to describe nonexistent user", ()
        else:
            code, message = ErrorCode.NONE, None
            infos = tuple(make(info_t, mechanism=_NUMBERS[m], iterations=i) for m, i in known[name])
        results.append(
            make(result_t, user=name, error_code=err(code), error_message=message, credential_infos=infos)
        )
    return make(
        resp_t,
        throttle_time=NO_THROTTLE,
        error_code=err(ErrorCode.NONE),
        error_message=None,
        results=tuple(results),
    )
