"""What one listener's connections need to authenticate, built once from the config: its
security protocol, TLS context, enabled SASL mechanisms and their settings.

``on_connect`` is the connection's one call: it sets the principal a TLS client certificate
gives (SSL listeners) and returns the SASL gate of a SASL listener (None otherwise, and the
connection pays nothing per request).
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Callable, Mapping
from typing import Any

from .config_keys import SASL_PROTOCOLS, TLS_PROTOCOLS, listener_value
from .jaas import JaasError, LoginModule, parse_jaas, plain_users
from .mechanisms import PlainExchange, SaslExchange
from .principal import NoMatchingRule, map_name, parse_rules, subject_name

log = logging.getLogger("kafkette.security")

ANONYMOUS = "User:ANONYMOUS"


class SecurityConfigError(ValueError):
    """The listener cannot be served as configured; the message names the key."""


class ListenerSecurity:
    def __init__(self, values: Mapping[str, str], listener: str, protocol: str, *,
                 ssl_context: ssl.SSLContext | None = None,
                 scram_credentials: Callable[[str, str], Any] | None = None) -> None:
        self.listener = listener
        self.protocol = protocol
        self.ssl_context = ssl_context
        self.sasl = protocol in SASL_PROTOCOLS
        self.tls = protocol in TLS_PROTOCOLS
        self._values = values
        self._scram_credentials = scram_credentials

        def get(key: str, mechanism: str | None = None) -> str | None:
            return listener_value(values, listener, key, mechanism)

        self._get = get
        try:
            self.principal_rules = parse_rules(get("ssl.principal.mapping.rules") or "DEFAULT")
        except ValueError as exc:
            raise SecurityConfigError(f"ssl.principal.mapping.rules: {exc}") from None
        builder = get("principal.builder.class")
        if builder and not builder.endswith("DefaultKafkaPrincipalBuilder"):
            raise SecurityConfigError(f"principal.builder.class={builder}: only Kafka's "
                                      "DefaultKafkaPrincipalBuilder is supported")
        self.mechanisms: tuple[str, ...] = ()
        self.max_receive_size = int(get("sasl.server.max.receive.size") or 524288)
        self.failed_delay_ms = int(get("connection.failed.authentication.delay.ms") or 100)
        self._jaas: dict[str, LoginModule] = {}
        self._plain_users: dict[str, str] = {}
        if self.sasl:
            raw = get("sasl.enabled.mechanisms") or ""
            self.mechanisms = tuple(m.strip() for m in raw.split(",") if m.strip())
            for mechanism in self.mechanisms:
                text = get("sasl.jaas.config", mechanism)
                if text is None:
                    continue
                try:
                    self._jaas[mechanism] = parse_jaas(text)
                except JaasError as exc:
                    raise SecurityConfigError(
                        f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config: "
                        f"{exc}") from None
            if "PLAIN" in self._jaas:
                self._plain_users = plain_users(self._jaas["PLAIN"])

    def reauth_ms(self, mechanism: str) -> int:
        return int(self._get("connections.max.reauth.ms", mechanism) or 0)

    def jaas_options(self, mechanism: str) -> dict[str, str]:
        module = self._jaas.get(mechanism)
        return dict(module.options) if module is not None else {}

    def exchange(self, mechanism: str) -> SaslExchange:
        """A new server exchange of ``mechanism`` (one of ``mechanisms``)."""
        if mechanism == "PLAIN":
            return PlainExchange(self._plain_users)
        if mechanism.startswith("SCRAM-"):
            from .scram import ScramExchange

            return ScramExchange(mechanism, self._scram_lookup)
        if mechanism == "OAUTHBEARER":
            from .oauthbearer import OAuthBearerExchange

            return OAuthBearerExchange(self.jaas_options(mechanism))
        raise SecurityConfigError(f"unknown SASL mechanism {mechanism}")

    def _scram_lookup(self, user: str, mechanism: str) -> Any:
        return self._scram_credentials(user, mechanism) if self._scram_credentials else None

    # The connection's call ---------------------------------------------------------------
    def on_connect(self, conn: Any, transport: Any) -> Any:
        """Set ``conn.principal`` / ``conn.listener``; the SASL gate, or None."""
        conn.listener = self.listener
        if self.protocol == "SSL":
            principal = self.certificate_principal(transport, conn.client_host)
            if principal is None:
                conn.close(None)
                return None
            conn.principal = principal
        if not self.sasl:
            return None
        from .authenticator import SaslGate

        return SaslGate(self, conn)

    def certificate_principal(self, transport: Any, client_host: str) -> str | None:
        """``User:<mapped subject>`` of the client's certificate, ANONYMOUS without one; None
        (logged) when no mapping rule applies."""
        ssl_object = transport.get_extra_info("ssl_object")
        cert = ssl_object.getpeercert() if ssl_object is not None else None
        if not cert:
            return ANONYMOUS
        name = subject_name(cert)
        try:
            return "User:" + map_name(self.principal_rules, name)
        except NoMatchingRule as exc:
            log.info("Failed authentication with %s (%s)", client_host, exc)
            return None


def listener_securities(values: Mapping[str, str], protocols: Mapping[str, str],
                        listeners: list[str],
                        scram_credentials: Callable[[str, str], Any] | None = None,
                        ) -> dict[str, ListenerSecurity]:
    """Every listener's security, by name; SecurityConfigError naming the key at fault."""
    from .tls import TlsConfigError, server_context

    out = {}
    for name in listeners:
        protocol = protocols.get(name, "PLAINTEXT")
        context = None
        if protocol in TLS_PROTOCOLS:
            try:
                context = server_context(values, name)
            except TlsConfigError as exc:
                raise SecurityConfigError(f"listener {name}: {exc}") from None
        out[name] = ListenerSecurity(values, name, protocol, ssl_context=context,
                                     scram_credentials=scram_credentials)
    return out
