"""Security for test brokers: a throwaway CA (``trustme``), the broker's TLS and SASL settings by
Kafka's names, and each client's settings to connect (``Broker.client_config``).

``trustme`` is a test dependency (``pip install groupcoord[test]``); it is imported only when a
broker with TLS is made.
"""

from __future__ import annotations

import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["CLIENTS", "TestCA", "broker_settings", "client_config"]

CLIENTS = ("confluent", "kafka-python", "aiokafka")
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


class TestCA:
    """A certificate authority made for one test, its files in a temporary directory: the CA
    (``ca_pem``), the broker's keystore for 127.0.0.1 and localhost (``server_pem``: key and
    chain, ``ssl.keystore.type=PEM``) and client certificates on demand."""

    __test__ = False  # not a pytest test class

    def __init__(self, directory: Path | None = None) -> None:
        import trustme

        self._ca = trustme.CA()
        self.dir = directory or Path(tempfile.mkdtemp(prefix="groupcoord-ca-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.ca_pem = self.dir / "ca.pem"
        self._ca.cert_pem.write_to_path(str(self.ca_pem))
        server = self._ca.issue_cert("127.0.0.1", "localhost", common_name="groupcoord")
        self.server_pem = self.dir / "server.pem"
        server.private_key_and_cert_chain_pem.write_to_path(str(self.server_pem))
        self._clients: dict[str, tuple[Path, Path]] = {}

    def client_cert(self, name: str) -> tuple[Path, Path]:
        """(certificate, key) files of a client certificate whose subject CN is ``name``
        (its SSL principal: ``User:CN=<name>,OU=...,O=...``)."""
        found = self._clients.get(name)
        if found is None:
            issued = self._ca.issue_cert(f"{name}.clients.invalid", common_name=name)
            cert, key = self.dir / f"client-{name}.pem", self.dir / f"client-{name}.key"
            for blob in issued.cert_chain_pems:
                with open(cert, "ab") as f:
                    f.write(blob.bytes())
            issued.private_key_pem.write_to_path(str(key))
            found = self._clients[name] = (cert, key)
        return found

    def principal_of(self, name: str) -> str:
        """The principal a client certificate of :meth:`client_cert` maps to (default rules)."""
        from cryptography import x509

        cert, _key = self.client_cert(name)
        return "User:" + x509.load_pem_x509_certificate(cert.read_bytes()).subject.rfc4514_string()


def broker_settings(
    protocol: str,
    *,
    ca: TestCA | None,
    plain_users: Mapping[str, str] | None = None,
    mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
    client_auth: str = "none",
) -> dict[str, str]:
    """The broker properties of a listener named after ``protocol`` (Kafka's names)."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"security_protocol must be one of {', '.join(PROTOCOLS)}")
    out: dict[str, str] = {}
    name = protocol.lower()
    if protocol in ("SSL", "SASL_SSL"):
        assert ca is not None
        out.update(
            {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(ca.server_pem),
                "ssl.truststore.type": "PEM",
                "ssl.truststore.location": str(ca.ca_pem),
                "ssl.client.auth": client_auth,
            }
        )
    if protocol.startswith("SASL_"):
        out["sasl.enabled.mechanisms"] = ",".join(mechanisms)
        if "PLAIN" in mechanisms:
            users = " ".join(f'user_{u}="{p}"' for u, p in (plain_users or {}).items())
            out[f"listener.name.{name}.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};"
            )
    return out


def client_config(
    *,
    bootstrap: str,
    protocol: str,
    client: str = "confluent",
    ca: TestCA | None = None,
    user: str | None = None,
    password: str | None = None,
    mechanism: str = "PLAIN",
    cert_name: str | None = None,
) -> dict[str, Any]:
    """The settings ``client`` needs to connect as ``user`` (SASL) and/or with the client
    certificate ``cert_name`` (TLS)."""
    if client not in CLIENTS:
        raise ValueError(f"client must be one of {', '.join(CLIENTS)}")
    tls = protocol in ("SSL", "SASL_SSL")
    sasl = protocol.startswith("SASL_")
    cert = ca.client_cert(cert_name) if (ca is not None and cert_name is not None) else None
    if client == "confluent":
        conf: dict[str, Any] = {"bootstrap.servers": bootstrap, "security.protocol": protocol}
        if tls and ca is not None:
            conf["ssl.ca.location"] = str(ca.ca_pem)
            if cert is not None:
                conf["ssl.certificate.location"], conf["ssl.key.location"] = str(cert[0]), str(cert[1])
        if sasl:
            conf.update({"sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password})
        return conf
    conf = {"bootstrap_servers": bootstrap, "security_protocol": protocol}
    if sasl:
        conf.update(
            {"sasl_mechanism": mechanism, "sasl_plain_username": user, "sasl_plain_password": password}
        )
    if tls and ca is not None:
        if client == "kafka-python":
            conf.update({"ssl_cafile": str(ca.ca_pem), "ssl_check_hostname": True})
            if cert is not None:
                conf["ssl_certfile"], conf["ssl_keyfile"] = str(cert[0]), str(cert[1])
        else:
            context = ssl.create_default_context(cafile=str(ca.ca_pem))
            if cert is not None:
                context.load_cert_chain(str(cert[0]), str(cert[1]))
            conf["ssl_context"] = context
    return conf
