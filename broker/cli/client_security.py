"""Client-side TLS and SASL for kafkette's own tools (``--command-config FILE``, Kafka tools'
flag): ``security.protocol``, ``sasl.mechanism`` (PLAIN, SCRAM-SHA-256/512), ``sasl.jaas.config``
(``username="..." password="..."``), ``ssl.truststore.location`` / ``ssl.truststore.type=PEM``
(or ``ssl.truststore.certificates``), ``ssl.keystore.location`` (PEM: key + certificate)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import socket
import ssl
from collections.abc import Mapping
from typing import Any, Protocol

from ..security.jaas import parse_jaas
from ..security.scram import HASHES, salted_password


class AuthError(RuntimeError):
    """The broker refused the tool's login; the message is the broker's."""


PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
# The security settings this client implements; any other ssl.* / sasl.* key would change how
# Kafka's client logs in, so it is refused rather than silently ignored.
SECURITY_KEYS = frozenset({
    "security.protocol", "sasl.mechanism", "sasl.jaas.config", "ssl.truststore.location",
    "ssl.truststore.type", "ssl.truststore.certificates", "ssl.keystore.location",
    "ssl.keystore.type", "ssl.key.password", "ssl.endpoint.identification.algorithm",
})


class ClientConfigError(ValueError):
    """A ``--command-config`` file that cannot be read or used; the message says why."""


def read_command_config(path: str | None) -> dict[str, str]:
    """The ``--command-config`` properties (client.id and the TLS/SASL login), checked:
    ClientConfigError when the file is unreadable or a setting cannot be honoured."""
    if path is None:
        return {}
    from pathlib import Path

    from ..config import read_properties

    try:
        settings = read_properties(Path(path))
    except OSError as exc:
        raise ClientConfigError(f"--command-config {path}: {exc.strerror or exc}") from None
    problem = unsupported_setting(settings)
    if problem is not None:
        raise ClientConfigError(f"--command-config {path}: {problem}")
    return settings


def unsupported_setting(settings: Mapping[str, str]) -> str | None:
    """Why these client properties cannot be used by kafkette's tools (Kafka's words for an
    invalid value), or None. Keys that are not about security (client.id, timeouts) are
    accepted and, but for client.id, not used, as Kafka's clients warn and go on."""
    protocol = settings.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        return (f"Invalid value {settings['security.protocol']} for configuration "
                f"security.protocol: String must be one of: {', '.join(PROTOCOLS)}")
    for key in sorted(settings):
        if key.startswith(("ssl.", "sasl.")) and key not in SECURITY_KEYS:
            return f"{key} is not supported by kafkette's tools (supported: " \
                   f"{', '.join(sorted(SECURITY_KEYS))})"
    if protocol.startswith("SASL"):
        mechanism = settings.get("sasl.mechanism", "GSSAPI").strip().upper()
        if mechanism not in MECHANISMS:
            return f"sasl.mechanism={mechanism} is not supported by kafkette's tools " \
                   f"(supported: {', '.join(MECHANISMS)})"
        if not settings.get("sasl.jaas.config"):
            return "sasl.jaas.config is required for SASL (username=\"...\" password=\"...\")"
        try:
            parse_jaas(settings["sasl.jaas.config"])
        except ValueError as exc:
            return f"sasl.jaas.config: {exc}"
    for key in ("ssl.truststore.type", "ssl.keystore.type"):
        kind = settings.get(key, "PEM").strip().upper()
        if kind != "PEM":
            return f"{key}={kind} is not supported by kafkette's tools: use PEM files"
    return None


class RequestSender(Protocol):
    def request(self, api_key: int, version: int, body: Any = None, **fields: Any) -> Any: ...


# Kafka client settings librdkafka takes under another name or not at all (its types and
# passwords of Java keystores: librdkafka reads PEM, or a PKCS#12 keystore by itself).
_LIBRDKAFKA_DROPS = frozenset({"ssl.truststore.type", "ssl.truststore.password",
                               "ssl.keystore.type", "sasl.jaas.config",
                               "ssl.truststore.location", "ssl.truststore.certificates"})


def librdkafka_settings(settings: Mapping[str, str]) -> dict[str, str]:
    """A Kafka client properties file (``--command-config``, as kafka-*.sh read it) as the
    librdkafka settings of the same login: ``sasl.jaas.config``'s username and password (or
    an unsecured OAUTHBEARER subject), a PEM truststore as ``ssl.ca.location``, a PEM
    keystore as certificate and key. librdkafka's own names pass through unchanged."""
    out = {k: v for k, v in settings.items() if k not in _LIBRDKAFKA_DROPS}
    jaas = settings.get("sasl.jaas.config")
    if jaas:
        options = parse_jaas(jaas).options
        if "username" in options:
            out.setdefault("sasl.username", options["username"])
            out.setdefault("sasl.password", options.get("password", ""))
        subject = options.get("unsecuredLoginStringClaim_sub")
        if subject:
            out.setdefault("sasl.oauthbearer.config", f"principal={subject}")
            out.setdefault("enable.sasl.oauthbearer.unsecure.jwt", "true")
    truststore = settings.get("ssl.truststore.location")
    if truststore:
        if settings.get("ssl.truststore.type", "PEM").upper() != "PEM":
            raise ValueError(f"ssl.truststore.type={settings['ssl.truststore.type']}: librdkafka "
                             "reads a PEM truststore (ssl.truststore.type=PEM, or ssl.ca.location)")
        out.setdefault("ssl.ca.location", truststore)
    if settings.get("ssl.truststore.certificates"):
        out.setdefault("ssl.ca.pem", settings["ssl.truststore.certificates"])
    keystore = settings.get("ssl.keystore.location")
    if keystore and settings.get("ssl.keystore.type", "").upper() == "PEM":
        del out["ssl.keystore.location"]
        out.setdefault("ssl.certificate.location", keystore)
        out.setdefault("ssl.key.location", keystore)
    if settings.get("ssl.endpoint.identification.algorithm") == "":
        out["ssl.endpoint.identification.algorithm"] = "none"
    return out


def wrap_socket(sock: socket.socket, host: str, settings: Mapping[str, str]) -> socket.socket:
    """``sock`` under TLS when ``security.protocol`` is SSL or SASL_SSL."""
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in ("SSL", "SASL_SSL"):
        return sock
    context = ssl.create_default_context()
    cafile = settings.get("ssl.truststore.location")
    cadata = settings.get("ssl.truststore.certificates")
    if cafile or cadata:
        context.load_verify_locations(cafile=cafile or None, cadata=cadata or None)
    if settings.get("ssl.endpoint.identification.algorithm", "https") == "":
        context.check_hostname = False
    keystore = settings.get("ssl.keystore.location")
    if keystore:
        context.load_cert_chain(keystore, password=settings.get("ssl.key.password") or None)
    return context.wrap_socket(sock, server_hostname=host)


def authenticate(client: RequestSender, settings: Mapping[str, str]) -> None:
    """SaslHandshake v1 + SaslAuthenticate with the configured mechanism (SASL listeners)."""
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return
    mechanism = settings.get("sasl.mechanism", "GSSAPI").upper()
    options = parse_jaas(settings["sasl.jaas.config"]).options \
        if settings.get("sasl.jaas.config") else {}
    user, password = options.get("username", ""), options.get("password", "")
    handshake = client.request(17, 1, mechanism=mechanism)
    if handshake.error_code != 0:
        raise AuthError(f"SASL mechanism {mechanism} is not enabled on the listener "
                        f"(enabled: {', '.join(handshake.mechanisms)})")
    if mechanism == "PLAIN":
        _step(client, f"\0{user}\0{password}".encode())
    elif mechanism in HASHES:
        _scram(client, mechanism, user, password)
    else:
        raise AuthError(f"kafkette's tools log in with PLAIN or SCRAM, not {mechanism}")


def _step(client: RequestSender, token: bytes) -> bytes:
    answer = client.request(36, 2, auth_bytes=token)
    if answer.error_code != 0:
        raise AuthError(answer.error_message or f"SASL authentication failed ({answer.error_code})")
    return answer.auth_bytes


def _scram(client: RequestSender, mechanism: str, user: str, password: str) -> None:
    digest = HASHES[mechanism]
    nonce = secrets.token_urlsafe(24)
    bare = f"n={user.replace('=', '=3D').replace(',', '=2C')},r={nonce}"
    server_first = _step(client, f"n,,{bare}".encode()).decode()
    fields = dict(item.split("=", 1) for item in server_first.split(","))
    if not fields.get("r", "").startswith(nonce):
        raise AuthError("invalid SCRAM server nonce")
    salted = salted_password(mechanism, password, base64.b64decode(fields["s"]), int(fields["i"]))
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    without_proof = f"c=biws,r={fields['r']}"
    auth_message = f"{bare},{server_first},{without_proof}".encode()
    signature = hmac.new(stored_key, auth_message, digest).digest()
    proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
    final = _step(client, f"{without_proof},p={base64.b64encode(proof).decode()}".encode())
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    expected = b"v=" + base64.b64encode(hmac.new(server_key, auth_message, digest).digest())
    if not hmac.compare_digest(final, expected):
        raise AuthError("invalid SCRAM server signature")
