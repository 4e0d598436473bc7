"""TLS for SSL and SASL_SSL listeners: the server context from Kafka's ``ssl.*`` configs, and
the acceptor that runs each connection's handshake.

Keystore (``ssl.keystore.type``): PEM, as one file (``ssl.keystore.location``: key + chain) or
inline (``ssl.keystore.key`` + ``ssl.keystore.certificate.chain``), the key optionally
encrypted with ``ssl.key.password``; PKCS12 with ``ssl.keystore.password`` (needs the
``cryptography`` package). JKS has no Python reader: refused with how to convert it. Truststore
(``ssl.truststore.type``): PEM file or inline ``ssl.truststore.certificates``, or PKCS12.
``ssl.client.auth``: none / requested / required.

Each connection is accepted as plain TCP and upgraded with ``loop.start_tls``, so a failed
handshake (a PLAINTEXT client, TLS garbage, a missing or untrusted client certificate) costs
one log line, "Failed authentication with /IP (SSL handshake failed)", and that connection only.
The broker's connection protocol is made only once the handshake is done.

Standard library only (broker/boot.py binds listeners before the broker is imported).
"""

from __future__ import annotations

import asyncio
import logging
import os
import ssl
import tempfile
from collections.abc import Callable, Mapping
from typing import Any, cast

from .config_keys import listener_value

log = logging.getLogger("kafkette.security")

HANDSHAKE_TIMEOUT_S = 10.0
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3,
             "TLSv1.1": ssl.TLSVersion.TLSv1_1, "TLSv1": ssl.TLSVersion.TLSv1}
_CLIENT_AUTH = {"none": ssl.CERT_NONE, "requested": ssl.CERT_OPTIONAL,
                "required": ssl.CERT_REQUIRED}


class TlsConfigError(ValueError):
    """The listener's TLS configs are wrong; the message names the key."""


def server_context(values: Mapping[str, str], listener: str) -> ssl.SSLContext:
    """The TLS server context of ``listener`` from its ``ssl.*`` configs."""

    def get(key: str) -> str | None:
        value = listener_value(values, listener, key)
        return value if value not in (None, "") else None

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    enabled = [p.strip() for p in (get("ssl.enabled.protocols") or "").split(",") if p.strip()]
    known = [_VERSIONS[p] for p in enabled if p in _VERSIONS]
    if enabled and not known:
        raise TlsConfigError(f"ssl.enabled.protocols: none of {enabled} is supported")
    if known:
        context.minimum_version = min(known)
        context.maximum_version = max(known)
    _load_keystore(context, get, listener)
    auth = (get("ssl.client.auth") or "none").lower()
    context.verify_mode = _CLIENT_AUTH.get(auth, ssl.CERT_NONE)
    if not _load_truststore(context, get) and context.verify_mode != ssl.CERT_NONE:
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    if get("ssl.engine.factory.class"):
        raise TlsConfigError("ssl.engine.factory.class: custom SSL engine factories are not "
                             "supported")
    return context


def _load_keystore(context: ssl.SSLContext, get: Callable[[str, ], str | None],
                   listener: str) -> None:
    kind = (get("ssl.keystore.type") or "JKS").upper()
    location = get("ssl.keystore.location")
    inline_key = get("ssl.keystore.key")
    inline_chain = get("ssl.keystore.certificate.chain")
    key_password = get("ssl.key.password")
    if kind == "JKS":
        raise TlsConfigError(
            f"ssl.keystore.type=JKS (listener {listener}): kafkette reads PEM or PKCS12 "
            "keystores; convert with keytool -importkeystore -deststoretype PKCS12, or use PEM")
    if kind == "PEM":
        if get("ssl.keystore.password"):
            raise TlsConfigError("SSL key store password cannot be specified with PEM format, "
                                 "only key password may be specified")
        if location and (inline_key or inline_chain):
            raise TlsConfigError("Both ssl.keystore.location and ssl.keystore.key / "
                                 "ssl.keystore.certificate.chain are set: give one")
        if location:
            _load_chain(context, location, key_password, "ssl.keystore.location")
            return
        if not (inline_key and inline_chain):
            raise TlsConfigError("ssl.keystore.key and ssl.keystore.certificate.chain must "
                                 "both be set for an inline PEM keystore")
        _load_inline(context, inline_chain + "\n" + inline_key, key_password)
        return
    if kind == "PKCS12":
        if not location:
            raise TlsConfigError("ssl.keystore.location is not set")
        pem = _pkcs12_pem(location, get("ssl.keystore.password"), key_password)
        _load_inline(context, pem, None)
        return
    raise TlsConfigError(f"ssl.keystore.type={kind} is not supported (PEM, PKCS12)")


def _load_chain(context: ssl.SSLContext, path: str, password: str | None, key: str) -> None:
    try:
        context.load_cert_chain(path, password=password)
    except FileNotFoundError:
        raise TlsConfigError(f"{key}: no such file {path}") from None
    except (ssl.SSLError, OSError) as exc:
        raise TlsConfigError(f"{key}: cannot load the key and certificate chain from {path} "
                             f"({exc})") from None


def _load_inline(context: ssl.SSLContext, pem: str, password: str | None) -> None:
    # load_cert_chain reads files only: a private temporary file, removed at once
    fd, path = tempfile.mkstemp(prefix="kafkette-keystore-", suffix=".pem")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(pem)
        _load_chain(context, path, password, "ssl.keystore.key")
    finally:
        os.unlink(path)


def _pkcs12_pem(path: str, password: str | None, key_password: str | None) -> str:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:
        raise TlsConfigError("ssl.keystore.type=PKCS12 needs the cryptography package "
                             "(pip install cryptography), or use PEM") from None
    try:
        with open(path, "rb") as f:
            key, cert, extra = pkcs12.load_key_and_certificates(
                f.read(), password.encode() if password else None)
    except (OSError, ValueError) as exc:
        raise TlsConfigError(f"ssl.keystore.location: cannot read PKCS12 {path} ({exc})") from None
    if key is None or cert is None:
        raise TlsConfigError(f"ssl.keystore.location: {path} holds no key and certificate")
    chain = [cert, *(extra or [])]
    pem = b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain)
    pem += key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())
    return pem.decode()


def _load_truststore(context: ssl.SSLContext, get: Callable[[str], str | None]) -> bool:
    kind = (get("ssl.truststore.type") or "JKS").upper()
    location = get("ssl.truststore.location")
    inline = get("ssl.truststore.certificates")
    if not location and not inline:
        return False
    if kind == "JKS" and location and not location.endswith((".pem", ".crt")):
        raise TlsConfigError("ssl.truststore.type=JKS: kafkette reads PEM or PKCS12 "
                             "truststores; convert with keytool, or use PEM")
    try:
        if inline:
            if get("ssl.truststore.password"):
                raise TlsConfigError("SSL trust store password cannot be specified for PEM "
                                     "format")
            context.load_verify_locations(cadata=inline)
        elif kind == "PKCS12":
            context.load_verify_locations(cadata=_pkcs12_certs(location or "",
                                                               get("ssl.truststore.password")))
        else:
            context.load_verify_locations(cafile=location)
    except FileNotFoundError:
        raise TlsConfigError(f"ssl.truststore.location: no such file {location}") from None
    except ssl.SSLError as exc:
        raise TlsConfigError(f"ssl.truststore: cannot load the certificates ({exc})") from None
    return True


def _pkcs12_certs(path: str, password: str | None) -> str:
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.serialization import pkcs12
    except ImportError:
        raise TlsConfigError("ssl.truststore.type=PKCS12 needs the cryptography package") from None
    with open(path, "rb") as f:
        _key, cert, extra = pkcs12.load_key_and_certificates(
            f.read(), password.encode() if password else None)
    certs = [c for c in [cert, *(extra or [])] if c is not None]
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs).decode()


class TlsAcceptor(asyncio.Protocol):
    """Runs one accepted connection's TLS handshake, then hands the TLS transport to the
    protocol ``factory`` makes (the broker's connection).

    The event loop may deliver the client's first bytes (its ClientHello) to this protocol
    before ``start_tls`` has put its TLS protocol on the transport (uvloop starts reading once
    ``connection_made`` returns): those bytes are passed on to the TLS protocol through its
    protocol interface once it is in place."""

    def __init__(self, context: ssl.SSLContext, factory: Callable[[], asyncio.Protocol]) -> None:
        self._context = context
        self._factory = factory
        self._raw: asyncio.Transport | None = None
        self._inner: asyncio.Protocol | None = None
        self._early: list[bytes] = []  # raw bytes read before the TLS protocol took over
        self._fed = False  # the early bytes went to the TLS protocol: data now is decrypted
        self._pending: list[bytes] = []  # decrypted bytes before the hand-over
        self._eof = False
        self._task: asyncio.Task | None = None
        self._host = "/?"

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._raw = cast(asyncio.Transport, transport)  # a stream server's transport
        peer = transport.get_extra_info("peername")
        if peer:
            self._host = f"/{peer[0]}"
        self._task = asyncio.get_running_loop().create_task(self._handshake())

    async def _handshake(self) -> None:
        raw = self._raw
        assert raw is not None
        loop = asyncio.get_running_loop()
        upgrade = asyncio.ensure_future(loop.start_tls(
            raw, self, self._context, server_side=True, ssl_handshake_timeout=HANDSHAKE_TIMEOUT_S))
        try:
            while raw.get_protocol() is self and not upgrade.done():
                await asyncio.sleep(0)  # start_tls puts its protocol on the transport first
            self._feed_early(raw.get_protocol())
            tls = await upgrade
        except asyncio.CancelledError:
            upgrade.cancel()
            raw.close()
            raise
        except Exception as exc:  # noqa: BLE001 - any handshake failure closes this one only
            reason = getattr(exc, "reason", None) or type(exc).__name__
            log.info("Failed authentication with %s (SSL handshake failed: %s)", self._host,
                     reason)
            raw.close()
            return
        if tls is None or tls.is_closing():
            return
        inner = self._inner = self._factory()
        tls.set_protocol(inner)
        inner.connection_made(tls)
        pending, self._pending = self._pending, []
        for data in pending:
            inner.data_received(data)
        if self._eof:
            inner.eof_received()

    def _feed_early(self, tls_protocol: asyncio.BaseProtocol) -> None:
        early, self._early = b"".join(self._early), []
        self._fed = True
        if not early or tls_protocol is self:
            return
        # Both loops' TLS protocols take bytes the BufferedProtocol way (uvloop's does not
        # subclass asyncio.BufferedProtocol, hence no isinstance test).
        buffered: Any = tls_protocol
        view = memoryview(early)
        while view:
            buf = buffered.get_buffer(len(view))
            n = min(len(buf), len(view))
            buf[:n] = view[:n]
            buffered.buffer_updated(n)
            view = view[n:]

    def data_received(self, data: bytes) -> None:
        if not self._fed:  # raw bytes, before the TLS protocol took the transport
            self._early.append(data)
            if self._raw is not None:
                self._raw.pause_reading()
        elif self._inner is not None:
            self._inner.data_received(data)
        else:
            self._pending.append(data)

    def eof_received(self) -> bool | None:
        if self._inner is not None:
            return self._inner.eof_received()
        self._eof = True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        # During the handshake the failure also reaches start_tls, which _handshake logs.
        if self._inner is not None:
            self._inner.connection_lost(exc)


def tls_factory(context: ssl.SSLContext | None,
                factory: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
    """``factory`` itself without TLS; else a factory of acceptors that call it after the
    handshake (so a listener that changes its factory meanwhile is obeyed)."""
    if context is None:
        return factory
    return lambda: TlsAcceptor(context, factory)
