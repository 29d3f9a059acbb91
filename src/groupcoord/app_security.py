"""The composition root's part for security: what each listener's TLS and SASL are, and which
users the web console lets in, read from the configuration.

:class:`~groupcoord.app.BrokerApp` calls these before it opens the data dir, so that a bad keystore,
mechanism or JAAS line stops startup with a message naming the key (a :class:`ConfigError`) and
touches nothing on disk:

* :func:`listener_security`: one listener's :class:`~groupcoord.server.session.ListenerSecurity`
  (its ``listener.name.<l>.*`` keys over the broker-wide ones), which its server and connections use;
* :func:`console_users`: the users ``console.auth=basic`` checks, those the SASL listeners accept.
"""

from __future__ import annotations

from collections.abc import Iterable

from groupcoord.config import BrokerConfig
from groupcoord.config.listeners import ListenerSpec, SecuritySettings, parse_jaas_users
from groupcoord.console.auth import BasicAuth, ScramLookup
from groupcoord.errors import ConfigError
from groupcoord.server import sasl
from groupcoord.server.session import ListenerSecurity
from groupcoord.server.tls import PrincipalMapper, build_server_context

__all__ = ["console_users", "listener_security"]


def listener_security(
    config: BrokerConfig, spec: ListenerSpec, scram_lookup: sasl.ScramLookup | None = None
) -> ListenerSecurity:
    """One listener's TLS context and SASL settings from the configuration (its
    ``listener.name.<l>.*`` keys over the broker-wide ones); :class:`ConfigError` naming the key
    at fault."""
    settings = config.security_settings
    context = build_server_context(settings, spec.name) if spec.tls else None
    mapper = PrincipalMapper(settings.for_listener(spec.name, "ssl.principal.mapping.rules")).name
    sasl_config = None
    if spec.sasl:
        # Kafka's default is GSSAPI (Kerberos), which groupcoord does not serve.
        mechanisms = settings.list_for(spec.name, "sasl.enabled.mechanisms", "GSSAPI")
        unsupported = [m for m in mechanisms if m not in sasl.SUPPORTED_MECHANISMS]
        if unsupported or not mechanisms:
            raise ConfigError(
                f"bad value for sasl.enabled.mechanisms of listener {spec.name}: {','.join(mechanisms)!r} "
                f"(groupcoord serves {', '.join(sasl.SUPPORTED_MECHANISMS)})"
            )
        plain_users: dict[str, str] = {}
        if "PLAIN" in mechanisms:
            jaas = settings.jaas_for(spec.name, "PLAIN")
            if not jaas:
                raise ConfigError(
                    f"listener {spec.name} enables PLAIN but has no JAAS line: set "
                    f"listener.name.{spec.name.lower()}.plain.sasl.jaas.config"
                )
            plain_users = parse_jaas_users(jaas)
        delay_raw = settings.get("connection.failed.authentication.delay.ms") or "100"
        try:
            delay = int(delay_raw)
        except ValueError:
            raise ConfigError(
                f"bad value for connection.failed.authentication.delay.ms: {delay_raw!r} (an integer >= 0)"
            ) from None
        sasl_config = sasl.SaslServerConfig(
            mechanisms=mechanisms,
            plain_users=plain_users,
            scram_lookup=scram_lookup,
            failed_delay_ms=delay,
            max_reauth_ms={m: _max_reauth_ms(settings, spec.name, m) for m in mechanisms},
        )
    return ListenerSecurity(
        name=spec.name, protocol=spec.protocol, ssl_context=context, map_principal=mapper, sasl=sasl_config
    )


def _max_reauth_ms(settings: SecuritySettings, listener: str, mechanism: str) -> int:
    """``connections.max.reauth.ms`` of one listener's mechanism, as Kafka's
    ``SaslChannelBuilder`` reads it: ``listener.name.<l>.<mechanism>.connections.max.reauth.ms``,
    else the listener's, else the broker's (default 0: sessions do not end)."""
    key = "connections.max.reauth.ms"
    specific = f"listener.name.{listener.lower()}.{mechanism.lower()}.{key}"
    raw = settings.props.get(specific) or settings.for_listener(listener, key) or "0"
    try:
        return int(raw)
    except ValueError:
        raise ConfigError(f"bad value for {key}: {raw!r} (an integer, milliseconds)") from None


def console_users(
    config: BrokerConfig, securities: Iterable[ListenerSecurity], scram_lookup: ScramLookup
) -> BasicAuth:
    """The users ``console.auth=basic`` lets in: those a client could log in as on one of the
    listeners (PLAIN's JAAS users, the SCRAM credentials of the mechanisms some listener
    enables). :class:`ConfigError` naming ``console.auth`` if it is ``basic`` and no listener has
    SASL (the console would have no user to ask for)."""
    plain: dict[str, tuple[str, ...]] = {}
    scram: list[str] = []
    delay = None
    for security in securities:
        sasl_config = security.sasl
        if not isinstance(sasl_config, sasl.SaslServerConfig):
            continue
        delay = sasl_config.failed_delay_ms
        if "PLAIN" in sasl_config.mechanisms:
            for user, password in sasl_config.plain_users.items():
                plain[user] = (*plain.get(user, ()), password)
        scram += [m for m in sasl_config.mechanisms if m in sasl.SCRAM_MECHANISMS and m not in scram]
    if config.console_auth == "basic" and delay is None:
        raise ConfigError(
            "bad value for console.auth: 'basic' (no listener has SASL: the console checks the users "
            "of the SASL_PLAINTEXT and SASL_SSL listeners, see docs/operations.md)"
        )
    return BasicAuth(
        plain_users=plain,
        scram_mechanisms=tuple(scram),
        scram_lookup=scram_lookup,
        failed_delay_ms=100 if delay is None else delay,
    )
