"""The security configs a broker accepts (Kafka 4.x names, types and defaults), and the
listener-scoped forms of them.

Kafka scopes ``ssl.*``, ``sasl.*`` and ``connections.max.reauth.ms`` by listener:
``listener.name.<listener lowercased>.<key>`` wins over ``<key>``, and the per-mechanism keys
(``sasl.jaas.config``, ``connections.max.reauth.ms``...) also take
``listener.name.<listener>.<mechanism lowercased>.<key>``. ``scoped_key`` recognises those so
that they are checked like the plain key and are not "unknown".

This module is read before the broker listens (broker/config.py): standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

PASSWORD = "PASSWORD"  # Kafka's ConfigDef type: printed [hidden]

# Mechanisms kafkette serves; GSSAPI (Kerberos) is refused at start.
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, "OAUTHBEARER")
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
TLS_PROTOCOLS = ("SSL", "SASL_SSL")
PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

DEFAULT_PRINCIPAL_BUILDER = ("org.apache.kafka.common.security.authenticator."
                             "DefaultKafkaPrincipalBuilder")
UNSECURED_VALIDATOR = ("org.apache.kafka.common.security.oauthbearer.internals.unsecured."
                       "OAuthBearerUnsecuredValidatorCallbackHandler")

SECURITY_DEFAULTS: dict[str, str] = {
    "sasl.enabled.mechanisms": "GSSAPI",
    "sasl.server.max.receive.size": "524288",
    "connections.max.reauth.ms": "0",
    "connection.failed.authentication.delay.ms": "100",
    "ssl.client.auth": "none",
    "ssl.keystore.type": "JKS",
    "ssl.truststore.type": "JKS",
    "ssl.protocol": "TLSv1.3",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.cipher.suites": "",
    "ssl.principal.mapping.rules": "DEFAULT",
    "ssl.endpoint.identification.algorithm": "https",
    "principal.builder.class": DEFAULT_PRINCIPAL_BUILDER,
    "security.inter.broker.protocol": "PLAINTEXT",
    "sasl.mechanism.inter.broker.protocol": "GSSAPI",
    "sasl.mechanism.controller.protocol": "GSSAPI",
    "scram.credentials": "",
}

# kafkette's own: SCRAM users created at start, in kafka-storage.sh format --add-scram's syntax,
# ";"-separated: SCRAM-SHA-512=[name=alice,password=alice-secret,iterations=8192]
ADD_SCRAM = "scram.credentials"


class SecurityKey(NamedTuple):
    type: str  # as broker/config.py's ConfigKey (plus PASSWORD)
    check: Callable[[object], str | None] | None = None
    per_mechanism: bool = False  # also takes listener.name.<l>.<mechanism>.<key>


def _one_of(*choices: str) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        items = value if isinstance(value, list) else [value]
        if all(item in choices for item in items):
            return None
        return "String must be one of: " + ", ".join(choices)
    return check


def _at_least(low: int) -> Callable[[object], str | None]:
    return lambda v: None if v >= low else f"Value must be at least {low}"  # type: ignore[operator]  # parsed as a number first


SECURITY_KEYS: dict[str, SecurityKey] = {
    # kafkette's own: the admin HTTP server's token (broker/admin/guard.py), a secret
    "admin.auth.token": SecurityKey(PASSWORD),
    "sasl.enabled.mechanisms": SecurityKey("LIST"),
    "sasl.jaas.config": SecurityKey(PASSWORD, per_mechanism=True),
    "sasl.server.callback.handler.class": SecurityKey("STRING", per_mechanism=True),
    "sasl.server.max.receive.size": SecurityKey("INT", _at_least(1)),
    "sasl.login.callback.handler.class": SecurityKey("STRING", per_mechanism=True),
    "sasl.login.class": SecurityKey("STRING", per_mechanism=True),
    "connections.max.reauth.ms": SecurityKey("LONG", per_mechanism=True),
    "connection.failed.authentication.delay.ms": SecurityKey("INT", _at_least(0)),
    "ssl.client.auth": SecurityKey("STRING", _one_of("required", "requested", "none")),
    "ssl.keystore.type": SecurityKey("STRING"),
    "ssl.keystore.location": SecurityKey("STRING"),
    "ssl.keystore.password": SecurityKey(PASSWORD),
    "ssl.keystore.key": SecurityKey(PASSWORD),
    "ssl.keystore.certificate.chain": SecurityKey(PASSWORD),
    "ssl.key.password": SecurityKey(PASSWORD),
    "ssl.truststore.type": SecurityKey("STRING"),
    "ssl.truststore.location": SecurityKey("STRING"),
    "ssl.truststore.password": SecurityKey(PASSWORD),
    "ssl.truststore.certificates": SecurityKey(PASSWORD),
    "ssl.protocol": SecurityKey("STRING"),
    "ssl.enabled.protocols": SecurityKey("LIST"),
    "ssl.cipher.suites": SecurityKey("LIST"),
    "ssl.principal.mapping.rules": SecurityKey("STRING"),
    "ssl.endpoint.identification.algorithm": SecurityKey("STRING"),
    "ssl.keymanager.algorithm": SecurityKey("STRING"),
    "ssl.trustmanager.algorithm": SecurityKey("STRING"),
    "ssl.provider": SecurityKey("STRING"),
    "ssl.secure.random.implementation": SecurityKey("STRING"),
    "ssl.allow.dn.changes": SecurityKey("BOOLEAN"),
    "ssl.allow.san.changes": SecurityKey("BOOLEAN"),
    "principal.builder.class": SecurityKey("STRING"),
    "security.inter.broker.protocol": SecurityKey("STRING", _one_of(*PROTOCOLS)),
    "sasl.mechanism.inter.broker.protocol": SecurityKey("STRING"),
    "sasl.mechanism.controller.protocol": SecurityKey("STRING"),
    ADD_SCRAM: SecurityKey(PASSWORD, lambda v: _add_scram_problem(str(v))),
}

_PREFIX = "listener.name."


def scoped_key(key: str) -> tuple[str, SecurityKey] | None:
    """(the plain key, its spec) of ``listener.name.<l>.[<mechanism>.]<key>``; None otherwise."""
    if not key.startswith(_PREFIX):
        return None
    listener, _, rest = key[len(_PREFIX):].partition(".")
    if not listener or not rest:
        return None
    spec = SECURITY_KEYS.get(rest)
    if spec is not None:
        return rest, spec
    mechanism, _, rest = rest.partition(".")
    spec = SECURITY_KEYS.get(rest)
    if spec is not None and spec.per_mechanism and mechanism.upper() in (*MECHANISMS, "GSSAPI"):
        return rest, spec
    return None


def listener_value(values: Mapping[str, str], listener: str, key: str,
                   mechanism: str | None = None) -> str | None:
    """The value of ``key`` for ``listener`` (and ``mechanism``): the most specific one set."""
    prefix = f"{_PREFIX}{listener.lower()}."
    if mechanism is not None:
        found = values.get(f"{prefix}{mechanism.lower()}.{key}")
        if found is not None:
            return found
    found = values.get(prefix + key)
    if found is not None:
        return found
    return values.get(key)


def is_password(key: str) -> bool:
    spec = SECURITY_KEYS.get(key)
    if spec is None:
        scoped = scoped_key(key)
        spec = scoped[1] if scoped is not None else None
    return spec is not None and spec.type == PASSWORD


def listener_problem(values: Mapping[str, str], listener: str, protocol: str) -> str | None:
    """Why ``listener`` (of ``protocol``) cannot be served as configured, or None. Checks what
    needs no file: the protocol, the mechanisms, the keystore given at all."""
    if protocol not in PROTOCOLS:
        return f"Invalid security protocol {protocol} for listener {listener}"
    if protocol in SASL_PROTOCOLS:
        raw = listener_value(values, listener, "sasl.enabled.mechanisms") or ""
        mechanisms = [m.strip() for m in raw.split(",") if m.strip()]
        key = "sasl.enabled.mechanisms"
        if not mechanisms:
            return f"{key} is empty: listener {listener} ({protocol}) needs a SASL mechanism"
        for mechanism in mechanisms:
            if mechanism == "GSSAPI":
                return (f"{key}: kafkette does not serve GSSAPI (Kerberos); listener {listener} "
                        f"({protocol}) may enable {', '.join(MECHANISMS)}")
            if mechanism not in MECHANISMS:
                return f"{key}: unknown SASL mechanism {mechanism} for listener {listener}"
        if "PLAIN" in mechanisms and listener_value(
                values, listener, "sasl.jaas.config", "PLAIN") is None:
            return (f"listener.name.{listener.lower()}.plain.sasl.jaas.config is not set: "
                    f"SASL/PLAIN on listener {listener} needs its users "
                    '(PlainLoginModule required user_alice="alice-secret";)')
    if protocol in TLS_PROTOCOLS:
        location = listener_value(values, listener, "ssl.keystore.location")
        inline = listener_value(values, listener, "ssl.keystore.certificate.chain")
        if not location and not inline:
            return (f"ssl.keystore.location is not set: listener {listener} ({protocol}) needs "
                    "the broker's certificate and key")
    return None


_SCRAM_ENTRY = re.compile(r"\s*(SCRAM-SHA-256|SCRAM-SHA-512)=\[(.*?)\]\s*$", re.S)
_SCRAM_FIELD = re.compile(r'\s*([a-z]+)=("(?:[^"\\]|\\.)*"|[^,]*)\s*(?:,|$)')


def parse_add_scram(text: str) -> list[tuple[str, str, str, int]]:
    """(mechanism, user, password, iterations) of each ``MECH=[name=..,password=..]`` entry of
    ``text`` (";"-separated); ValueError naming the bad one."""
    out = []
    for entry in _split_entries(text):
        match = _SCRAM_ENTRY.match(entry)
        if match is None:
            raise ValueError(f"expected SCRAM-SHA-256=[name=...,password=...] or "
                             f"SCRAM-SHA-512=[...], got {entry.split('=', 1)[0]}=...")
        fields: dict[str, str] = {}
        body, pos = match.group(2), 0
        while pos < len(body):
            field = _SCRAM_FIELD.match(body, pos)
            if field is None or field.end() == pos:
                raise ValueError(f"cannot read the fields of {match.group(1)}=[...]")
            value = field.group(2)
            if value.startswith('"'):
                value = re.sub(r"\\(.)", r"\1", value[1:-1])
            fields[field.group(1)] = value
            pos = field.end()
        if not fields.get("name") or not fields.get("password"):
            raise ValueError(f"{match.group(1)}=[...] needs name= and password=")
        iterations = int(fields.get("iterations") or 4096)
        if not 4096 <= iterations <= 16384:
            raise ValueError(f"iterations must be between 4096 and 16384, got {iterations}")
        out.append((match.group(1), fields["name"], fields["password"], iterations))
    return out


def _split_entries(text: str) -> list[str]:
    entries, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += char == "["
        depth -= char == "]"
        if char == ";" and depth == 0:
            entries.append(text[start:i])
            start = i + 1
    entries.append(text[start:])
    return [e for e in entries if e.strip()]


def _add_scram_problem(text: str) -> str | None:
    try:
        parse_add_scram(text)
    except ValueError as exc:
        return str(exc)
    return None
