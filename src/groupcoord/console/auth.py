"""``console.auth=basic``: the console asks for a user of the broker's own, by HTTP Basic
authentication (RFC 7617).

The users are those a Kafka client could log in as on one of the broker's SASL listeners:

* PLAIN: the ``user_<name>="<password>"`` options of the JAAS line of every listener that enables
  PLAIN (a name on two listeners with two passwords is let in with either);
* SCRAM-SHA-256 / SCRAM-SHA-512, where a listener enables the mechanism: the salted credentials
  the broker keeps in the data dir (``broker/scram.py``), read at each request, so a user added or
  deleted with AlterUserScramCredentials counts at once. The password is checked the way a SCRAM
  server checks a client's proof: SaltedPassword = Hi(password, salt, iterations), then
  H(HMAC(SaltedPassword, "Client Key")) must equal the StoredKey kept (RFC 5802 §3). Nothing of the
  password is kept.

Every comparison is ``hmac.compare_digest`` (of SHA-256 digests for PLAIN, so that lengths do not
show either) and an unknown user costs about the work of a known one (a PLAIN comparison with a
placeholder; a SCRAM derivation with a throwaway credential of 4096 iterations, Kafka's default),
so the time of an answer does not readily tell which names exist.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from groupcoord.broker.scram import StoredCredential, derive

__all__ = ["BasicAuth", "ScramLookup", "parse_basic"]

#: ``lookup(mechanism, user)``: the user's stored SCRAM credential, or None
ScramLookup = Callable[[str, str], StoredCredential | None]

_HASH_NAMES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
#: what an unknown user's password is compared with, so that it costs what a known one does
_PLACEHOLDER = os.urandom(32).hex()


def parse_basic(header: str | None) -> tuple[str, str] | None:
    """(user, password) of an ``Authorization: Basic <base64(user:password)>`` header (UTF-8,
    RFC 7617 §2.1), or None when there is none or it is malformed."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    if not sep or not user:
        return None
    return user, password


@dataclass(frozen=True, slots=True, kw_only=True)
class BasicAuth:
    """The broker's users, for the console.

    Args:
        plain_users: PLAIN's users, each with the passwords its listeners' JAAS lines give it.
        scram_mechanisms: the SCRAM mechanisms some listener enables.
        scram_lookup: the broker's SCRAM credentials (read on the HTTP thread: one dict look-up).
        failed_delay_ms: how long a refused request waits before its 401
            (``connection.failed.authentication.delay.ms``, as the broker's SASL exchange does).
    """

    plain_users: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    scram_mechanisms: tuple[str, ...] = ()
    scram_lookup: ScramLookup | None = None
    failed_delay_ms: int = 100

    def check(self, user: str, password: str) -> bool:
        """Whether ``password`` is ``user``'s, by any mechanism the broker serves."""
        given = password.encode("utf-8")
        # PLAIN: digests compared, so that not even the length of a password shows in the time
        given_digest = hashlib.sha256(given).digest()
        ok = False
        for expected in self.plain_users.get(user, (_PLACEHOLDER,)):
            # no early exit: every password of the user is compared
            expected_digest = hashlib.sha256(expected.encode("utf-8")).digest()
            ok = hmac.compare_digest(expected_digest, given_digest) | ok
        if user not in self.plain_users:
            ok = False
        for mechanism in self.scram_mechanisms:
            if self.scram_lookup is None:
                break
            cred = self.scram_lookup(mechanism, user)
            ok = _scram_matches(mechanism, cred, given) | ok
        return ok


_THROWAWAY = StoredCredential(salt=os.urandom(24), stored_key=os.urandom(64), server_key=b"", iterations=4096)


def _scram_matches(mechanism: str, cred: StoredCredential | None, password: bytes) -> bool:
    """Whether ``password`` derives ``cred``'s StoredKey. Written with hashlib: ``scramp`` has no
    check of a password against a stored key, and its ``make_auth_info`` SASLprep-normalises the
    password, which Kafka's clients do not (Kafka's ``ScramFormatter.normalize`` is plain UTF-8)
    and which the credentials in the store were made without; hashlib's PBKDF2 runs without the
    GIL, off the broker's loop."""
    known = cred is not None
    used = cred if cred is not None else _THROWAWAY
    salted = hashlib.pbkdf2_hmac(_HASH_NAMES[mechanism], password, used.salt, used.iterations)
    derived = derive(mechanism, salted, used.salt, used.iterations)
    return hmac.compare_digest(derived.stored_key, used.stored_key) and known
