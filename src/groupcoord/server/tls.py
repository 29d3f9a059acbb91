"""TLS for SSL and SASL_SSL listeners: the server context from Kafka's ``ssl.*`` keys, and the
principal of a client certificate.

Kafka's ``DefaultSslEngineFactory`` reads the same keys; here Python's :mod:`ssl` does the TLS:

* keystore: ``ssl.keystore.type`` PEM (a file with the private key and the certificate chain,
  or inline ``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``) or PKCS12 (read with
  ``cryptography``, as :mod:`ssl` reads no PKCS12); ``ssl.keystore.password`` opens a PKCS12
  store, ``ssl.key.password`` an encrypted PEM key. JKS, Java's own format, cannot be read and
  is refused at start naming the key.
* truststore: ``ssl.truststore.type`` PEM (``ssl.truststore.location`` or inline
  ``ssl.truststore.certificates``) or PKCS12; without one, the system's CAs.
* ``ssl.client.auth``: ``required`` (a client without a certificate the truststore trusts fails
  the handshake), ``requested`` (a certificate is asked for, and checked when given), ``none``.
* ``ssl.enabled.protocols`` (default ``TLSv1.2,TLSv1.3``) bounds the versions;
  ``ssl.cipher.suites`` (IANA names as Kafka takes them, or OpenSSL names) limits the TLS 1.2
  suites (OpenSSL fixes TLS 1.3's through another call that Python does not expose).

The SSL principal is ``User:`` and the certificate's subject in RFC 2253 form (``CN=alice,O=org``),
rewritten by ``ssl.principal.mapping.rules`` (Kafka's ``SslPrincipalMapper``); ``User:ANONYMOUS``
without a certificate.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import re2

from groupcoord.config.listeners import SecuritySettings
from groupcoord.errors import ConfigError

__all__ = ["PrincipalMapper", "build_server_context", "openssl_cipher_name"]

ANONYMOUS = "User:ANONYMOUS"

#: ``get(key, default=None)``: one listener's value of a key
_Getter = Callable[..., "str | None"]

_VERSIONS = {
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1": ssl.TLSVersion.TLSv1,
}


def build_server_context(settings: SecuritySettings, listener: str) -> ssl.SSLContext:
    """The server-side TLS context of one listener (its ``listener.name.<l>.ssl.*`` keys over
    the broker-wide ``ssl.*``). Raises :class:`ConfigError` naming the key at fault."""

    def get(key: str, default: str | None = None) -> str | None:
        return settings.for_listener(listener, key, default)

    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _load_keystore(ctx, get)
    _load_truststore(ctx, get)
    auth = (get("ssl.client.auth", "none") or "none").lower()
    modes = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
    if auth not in modes:
        raise ConfigError(f"bad value for ssl.client.auth: {auth!r} (one of required, requested, none)")
    ctx.verify_mode = modes[auth]
    _set_protocols(ctx, settings.list_for(listener, "ssl.enabled.protocols", "TLSv1.2,TLSv1.3"))
    suites = settings.list_for(listener, "ssl.cipher.suites", "")
    if suites:
        names = [openssl_cipher_name(s) for s in suites]
        tls12 = [n for n in names if n is not None]
        if tls12:
            try:
                ctx.set_ciphers(":".join(tls12))
            except ssl.SSLError:
                raise ConfigError(
                    f"bad value for ssl.cipher.suites: {','.join(suites)!r} (no suite known)"
                ) from None
    return ctx


def _pem_file(get_value: str, what: str) -> Path:
    path = Path(get_value)
    if not path.is_file():
        raise ConfigError(f"bad value for {what}: {get_value!r} (no such file)")
    return path


@contextlib.contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A file only this process can read, removed at once: :meth:`ssl.SSLContext.load_cert_chain`
    reads a key from a path only."""
    fd, name = tempfile.mkstemp(prefix="groupcoord-key-", suffix=".pem")
    try:
        os.write(fd, data)
        os.close(fd)
        yield name
    finally:
        with contextlib.suppress(OSError):
            os.unlink(name)


def _load_keystore(ctx: ssl.SSLContext, get: _Getter) -> None:
    store_type = (
        get("ssl.keystore.type") or ("PEM" if get("ssl.keystore.certificate.chain") else "JKS")
    ).upper()
    key_password = get("ssl.key.password")
    chain, key = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    location = get("ssl.keystore.location")
    try:
        if chain or key:
            if not (chain and key):
                raise ConfigError("ssl.keystore.certificate.chain and ssl.keystore.key must be set together")
            _check_key_password(key.encode(), key_password)
            with _private_file((key.strip() + "\n" + chain.strip() + "\n").encode()) as name:
                ctx.load_cert_chain(name, password=key_password)
            return
        if location is None:
            raise ConfigError("ssl.keystore.location is not set")
        path = _pem_file(location, "ssl.keystore.location")
        if store_type == "PEM":
            password = key_password or get("ssl.keystore.password")
            _check_key_password(path.read_bytes(), password)
            ctx.load_cert_chain(str(path), password=password)
        elif store_type == "PKCS12":
            pem = _pkcs12_to_pem(path.read_bytes(), get("ssl.keystore.password"), "ssl.keystore.location")
            with _private_file(pem) as name:
                ctx.load_cert_chain(name)
        else:
            raise ConfigError(
                f"bad value for ssl.keystore.type: {store_type!r} (PEM or PKCS12; convert a JKS store "
                "with keytool -importkeystore -deststoretype PKCS12)"
            )
    except ssl.SSLError as exc:
        if key_password is not None:  # OpenSSL names no cause for a key it cannot decrypt
            raise ConfigError(
                f"cannot load the keystore (wrong ssl.key.password?): {exc.reason or exc}"
            ) from None
        raise ConfigError(f"cannot load the keystore (ssl.keystore.*): {exc.reason or exc}") from None


def _check_key_password(pem: bytes, password: str | None) -> None:
    """An encrypted PEM key needs ``ssl.key.password``: without one OpenSSL would ask for it on
    the terminal, so start-up stops naming the key instead."""
    encrypted = b"-----BEGIN ENCRYPTED PRIVATE KEY-----" in pem or b"Proc-Type: 4,ENCRYPTED" in pem
    if encrypted and not password:
        raise ConfigError("the keystore's key is encrypted: set ssl.key.password")


def _load_truststore(ctx: ssl.SSLContext, get: _Getter) -> None:
    inline = get("ssl.truststore.certificates")
    location = get("ssl.truststore.location")
    store_type = (get("ssl.truststore.type") or ("PEM" if inline else "JKS")).upper()
    try:
        if inline:
            ctx.load_verify_locations(cadata=inline)
        elif location is not None:
            path = _pem_file(location, "ssl.truststore.location")
            if store_type == "PEM":
                ctx.load_verify_locations(cafile=str(path))
            elif store_type == "PKCS12":
                cadata = _pkcs12_certificates(path.read_bytes(), get("ssl.truststore.password"))
                ctx.load_verify_locations(cadata=cadata)
            else:
                raise ConfigError(f"bad value for ssl.truststore.type: {store_type!r} (PEM or PKCS12)")
        else:
            ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    except ssl.SSLError as exc:
        raise ConfigError(f"cannot load the truststore (ssl.truststore.*): {exc.reason or exc}") from None


def _pkcs12_to_pem(data: bytes, password: str | None, what: str) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, pkcs12

    try:
        key, cert, extra = pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError:
        raise ConfigError(f"cannot open the PKCS12 store of {what} (wrong ssl.keystore.password?)") from None
    if key is None or cert is None:
        raise ConfigError(f"the PKCS12 store of {what} holds no private key and certificate")
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    for c in (cert, *extra):
        pem += c.public_bytes(Encoding.PEM)
    return pem


def _pkcs12_certificates(data: bytes, password: str | None) -> str:
    from cryptography.hazmat.primitives.serialization import Encoding, pkcs12

    try:
        store = pkcs12.load_pkcs12(data, password.encode() if password else None)
    except ValueError:
        raise ConfigError("cannot open the PKCS12 truststore (wrong ssl.truststore.password?)") from None
    certs = [c.certificate for c in store.additional_certs]
    if store.cert is not None:
        certs.append(store.cert.certificate)
    if not certs:
        raise ConfigError("the PKCS12 truststore holds no certificate")
    return "".join(c.public_bytes(Encoding.PEM).decode() for c in certs)


def _set_protocols(ctx: ssl.SSLContext, enabled: tuple[str, ...]) -> None:
    versions = []
    for name in enabled:
        if name not in _VERSIONS:
            raise ConfigError(f"bad value for ssl.enabled.protocols: {name!r} (TLSv1.2, TLSv1.3)")
        versions.append(_VERSIONS[name])
    if not versions:
        raise ConfigError("ssl.enabled.protocols is empty")
    ctx.minimum_version = min(versions)
    ctx.maximum_version = max(versions)


def openssl_cipher_name(suite: str) -> str | None:
    """OpenSSL's name of a TLS 1.2 suite given by its IANA name (as Java and Kafka name them,
    ``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`` -> ``ECDHE-RSA-AES256-GCM-SHA384``); an OpenSSL name
    as it is; None for a TLS 1.3 suite (``TLS_AES_128_GCM_SHA256``), which cannot be limited here.
    Written by hand: neither :mod:`ssl` nor ``cryptography`` maps the two namings."""
    if not suite.startswith("TLS_"):
        return suite
    if "_WITH_" not in suite:
        return None
    kx, _, rest = suite[4:].partition("_WITH_")
    kx = "" if kx == "RSA" else kx.replace("_", "-")
    parts = rest.split("_")
    mac = parts[-1]
    cipher = parts[:-1]
    if cipher[:1] == ["AES"] and len(cipher) >= 3:
        body = f"AES{cipher[1]}" + ("-" + "-".join(cipher[2:]) if cipher[2:] != ["CBC"] else "")
    else:
        body = "-".join(cipher)
    if cipher[:1] == ["CHACHA20"]:
        mac = ""  # OpenSSL's ChaCha20 names carry no MAC: ECDHE-RSA-CHACHA20-POLY1305
    return "-".join(p for p in (kx, body, mac) if p)


# ---------------------------------------------------------------------- principals
@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: object | None  # a compiled RE2 pattern; None for DEFAULT
    replacement: str
    case: str


#: Kafka's ``SslPrincipalMapper`` rule syntax: ``DEFAULT`` or ``RULE:pattern/replacement/[LU]``,
#: separated by commas or newlines (a ``/`` or ``\\`` in a pattern escaped with ``\\``).
_RULE_SPLITTER = re2.compile(
    r"\s*(DEFAULT|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?))\s*(?:[,\n]\s*|$)"
)


class PrincipalMapper:
    """``ssl.principal.mapping.rules``: the first rule whose pattern matches the whole DN gives
    the name (``$1``... groups, then ``/L`` lower or ``/U`` upper case); ``DEFAULT`` gives the
    DN itself; no matching rule is an error that fails the connection, as in Kafka."""

    def __init__(self, rules: str | None) -> None:
        self.rules: list[_Rule] = []
        text = rules or "DEFAULT"
        for m in _RULE_SPLITTER.finditer(text):
            whole = m.group(0)
            if not whole.strip():
                continue
            if m.group(5):
                raise ConfigError(f"bad value for ssl.principal.mapping.rules: invalid rule {m.group(5)!r}")
            if m.group(1) == "DEFAULT":
                self.rules.append(_Rule(None, "", ""))
                continue
            try:
                pattern = re2.compile(m.group(2))
            except re2.error:
                raise ConfigError(
                    f"bad value for ssl.principal.mapping.rules: bad pattern {m.group(2)!r}"
                ) from None
            replacement = re2.sub(r"\$(\d)", r"\\\1", m.group(3))
            self.rules.append(_Rule(pattern, replacement, m.group(4) or ""))

    def name(self, dn: str) -> str:
        for rule in self.rules:
            if rule.pattern is None:
                return dn
            pattern = rule.pattern
            if pattern.fullmatch(dn) is None:  # type: ignore[attr-defined]
                continue
            out: str = pattern.sub(rule.replacement, dn)  # type: ignore[attr-defined]
            if rule.case == "L":
                out = out.lower()
            elif rule.case == "U":
                out = out.upper()
            return out
        raise ValueError(f"no ssl.principal.mapping.rules rule matches {dn!r}")
