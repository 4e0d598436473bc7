"""Listening before the broker is ready (what a client waits for from spawn to its first ApiVersions answer).

``kafkette serve`` binds its listeners as soon as the config is checked, before storage, the
coordinators and the protocol codecs are imported. Until the broker is ready an
:class:`EarlyListener` answers ApiVersions itself (``api_versions.early_answer``, no kio) while
the rest of the broker loads in a thread. Any other request waits, unread, with everything
behind it on its connection: it is queued, not refused. When the broker has opened its logs it
adopts the listener (``Broker(early=...)``) and hands every waiting connection to a
KafkaConnection, which handles the waiting bytes and all that follows, in order.

This module and what it imports stay light (tests/spine/test_lazy_imports.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import ssl
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING, cast

from .api_versions import SHARE_VERSION, TRANSACTION_VERSION, early_answer
from .security.config_keys import TLS_PROTOCOLS
from .security.tls import TlsConfigError, server_context, tls_factory

if TYPE_CHECKING:
    from .config import BrokerConfig
    from .config_def import Listener

ProtocolFactory = Callable[[], asyncio.Protocol]
_request_log = logging.getLogger("kafkette.requests")  # broker/request_log.py's


class StartupError(Exception):
    """The broker cannot start (e.g. a listener's port is taken); the message names it."""


async def bind(listener: Listener, port: int, factory: ProtocolFactory,
               ssl_context: ssl.SSLContext | None = None) -> asyncio.Server:
    """A server on ``listener``'s host and ``port``; StartupError naming it if it cannot.
    With ``ssl_context`` each connection gets ``factory()`` once its TLS handshake is done."""
    loop = asyncio.get_running_loop()
    factory = tls_factory(ssl_context, factory)
    try:
        sock = _bound_socket(listener.host, port)
        if sock is not None:
            return await loop.create_server(factory, sock=sock, backlog=_BACKLOG)
        return await loop.create_server(factory, listener.host, port,
                                        reuse_address=True, backlog=_BACKLOG)
    except OSError as exc:
        raise StartupError(f"listeners: cannot listen on {listener.host}:{port} "
                           f"(listener {listener.name}): {listen_failure(exc)}") from exc


def listen_failure(exc: OSError) -> str:
    """Why a socket could not listen, in words (a host name that does not resolve included)."""
    if isinstance(exc, socket.gaierror):
        return f"the host name does not resolve ({exc.strerror})"
    return os.strerror(exc.errno) if exc.errno else str(exc)


_BACKLOG = 1024


def _bound_socket(host: str, port: int) -> socket.socket | None:
    """A listening socket on an IP address, as ``create_server`` makes one; None for a host name
    (``create_server`` resolves it). Saves the resolver's first call (~2 ms) at start-up."""
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
        except OSError:
            continue
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind((host, port))
            sock.listen(_BACKLOG)
        except BaseException:
            sock.close()
            raise
        return sock
    return None


class EarlyListener:
    """One listener bound before the broker is ready: answers ApiVersions, holds the rest."""

    def __init__(self, listener: Listener, config: BrokerConfig) -> None:
        self.listener = listener
        self.server: asyncio.Server | None = None
        self.transaction_version = config.get_int(TRANSACTION_VERSION)
        self.share_version = config.get_int(SHARE_VERSION)
        self.max_frame = config.get_int("socket.request.max.bytes")
        self.max_unsent = config.get_int("queued.max.response.bytes")
        self._factory: ProtocolFactory | None = None
        self._early: set[EarlyConnection] = set()
        self.ssl_context: ssl.SSLContext | None = None
        if config.security_protocols.get(listener.name) in TLS_PROTOCOLS:
            try:
                self.ssl_context = server_context(config, listener.name)
            except TlsConfigError as exc:
                raise StartupError(f"listener {listener.name}: {exc}") from None

    async def bind(self) -> EarlyListener:
        self.server = await bind(self.listener, self.listener.port, self._protocol,
                                 self.ssl_context)
        return self

    def _protocol(self) -> asyncio.Protocol:
        factory = self._factory
        if factory is not None:
            return factory()
        conn = EarlyConnection(self)
        self._early.add(conn)
        return conn

    @property
    def adopted(self) -> bool:
        """The broker serves this listener's connections (``open`` was called)."""
        return self._factory is not None

    def open(self, factory: ProtocolFactory) -> asyncio.Server:
        """The broker is ready: new connections get ``factory()``, and so does every connection
        accepted before, with the bytes it sent that were not answered. Returns the server."""
        assert self.server is not None
        self._factory = factory
        early, self._early = self._early, set()
        for conn in early:
            conn.hand_over(factory())
        return self.server

    def close(self) -> None:
        """The broker did not start: close the server and every connection it accepted."""
        if self.server is not None:
            self.server.close()
        for conn in self._early:
            conn.close()
        self._early.clear()


class EarlyConnection(asyncio.Protocol):
    """A connection accepted before the broker is ready (see the module docstring)."""

    def __init__(self, owner: EarlyListener) -> None:
        self._owner = owner
        self._buf = bytearray()
        # A request other than ApiVersions is first, or the client leaves its answers unread:
        # read no more until the broker takes the connection over.
        self._held = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream server's protocol is always handed a (read-write) Transport.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner._early.discard(self)
        self.transport = None

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        owner = self._owner
        while len(buf) >= 6 and not self._held:
            size = int.from_bytes(buf[:4], "big", signed=True)
            if size < 0 or size > owner.max_frame or buf[4:6] != b"\x00\x12":
                self._hold()  # not ApiVersions (or a bad frame): the broker will handle it
                return
            if len(buf) < 4 + size:
                return
            answer = early_answer(bytes(buf[4:4 + size]), owner.transaction_version,
                                  owner.share_version)
            if answer is None:
                self._hold()
                return
            if _request_log.isEnabledFor(logging.DEBUG):
                self._log(buf)
            del buf[:4 + size]
            assert self.transport is not None
            self.transport.write(answer)
            if self.transport.get_write_buffer_size() > owner.max_unsent:
                self._hold()  # a client that does not read its answers: read no more
                return

    def _log(self, frame: bytearray) -> None:
        version, corr = struct.unpack_from(">hi", frame, 6)
        peer = self.transport.get_extra_info("peername") if self.transport else None
        _request_log.debug("ApiVersions v%d correlation=%d from %s: answered before the broker "
                           "was ready", version, corr, peer)

    def _hold(self) -> None:
        if not self._held and self.transport is not None:
            self._held = True
            self.transport.pause_reading()

    def hand_over(self, conn: asyncio.Protocol) -> None:
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        transport.set_protocol(conn)
        conn.connection_made(transport)
        if self._held:
            transport.resume_reading()
        if self._buf:
            conn.data_received(bytes(self._buf))
        self._buf = bytearray()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def listen_early(config: BrokerConfig) -> dict[str, EarlyListener]:
    """Bind every listener of ``config`` (by name); StartupError if one cannot be bound."""
    bound: dict[str, EarlyListener] = {}
    try:
        for listener in config.broker_listeners:
            bound[listener.name] = await EarlyListener(listener, config).bind()
    except BaseException:
        for early in bound.values():
            early.close()
        raise
    return bound
