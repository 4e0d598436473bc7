"""A small blocking Kafka client on the project's codec: raw requests, frames and pipelining.

Used by ``kafkette groups`` (broker/cli/admin_client.py), the wire-level tests (tests/wire.py) and the
benchmarks (bench/figures/wire.py); never by the broker itself, whose event loop must not block.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Iterable, Mapping
from typing import Any, Self

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import decode_response, encode_request, request_type

_I32 = struct.Struct(">i")


class WireError(RuntimeError):
    """The broker answered something other than what was asked (wrong correlation id)."""


class WireClient:
    def __init__(self, bootstrap: str, client_id: str | None = "kafkette-wire", timeout: float = 10,
                 security: Mapping[str, str] | None = None):
        """``security``: Kafka client properties (``--command-config``) for a TLS and/or SASL
        listener (broker/cli/client_security.py)."""
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host.strip("[]"), int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self._corr = 0
        if security:
            from .client_security import authenticate, wrap_socket

            self.sock = wrap_socket(self.sock, host.strip("[]"), security)
            authenticate(self, security)

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Requests -----------------------------------------------------------------------------
    def encode(self, api_key: int, version: int, correlation_id: int = 0, **fields: Any) -> bytes:
        """One framed request built from fields for ``make``."""
        return encode_request(api_key, version, correlation_id, self.client_id,
                              make(request_type(api_key, version), **fields))

    def send(self, api_key: int, version: int, body: Any) -> int:
        """Send a request (a kio entity) without waiting; returns its correlation id."""
        self._corr += 1
        self.sock.sendall(encode_request(api_key, version, self._corr, self.client_id, body))
        return self._corr

    def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        """(correlation id, response) of the next response frame."""
        return decode_response(api_key, version, self.read_frame())

    def request(self, api_key: int, version: int, body: Any = None, **fields: Any) -> Any:
        """Send one request (a kio entity, or fields for ``make``) and return the response."""
        if body is None:
            body = make(request_type(api_key, version), **fields)
        corr = self.send(api_key, version, body)
        got, response = self.receive(api_key, version)
        if got != corr:
            raise WireError(f"correlation id {got} != {corr}")
        return response

    def pipeline(self, frames: Iterable[bytes], depth: int = 64) -> list[bytes]:
        """Send frames keeping up to ``depth`` in flight; the raw response frames, in order."""
        out: list[bytes] = []
        pending = 0
        for frame in frames:
            if pending >= depth:
                out.append(self.read_frame())
                pending -= 1
            self.sock.sendall(frame)
            pending += 1
        for _ in range(pending):
            out.append(self.read_frame())
        return out

    # Raw I/O ------------------------------------------------------------------------------
    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        (size,) = _I32.unpack(self._read_exact(4))
        return self._read_exact(size)

    def _read_exact(self, n: int) -> bytes:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            read = self.sock.recv_into(view[got:])
            if not read:
                raise ConnectionError("connection closed by the broker")
            got += read
        return bytes(buf)

    def is_closed_by_peer(self, timeout: float = 5) -> bool:
        """Whether the broker closes the connection within ``timeout`` seconds."""
        self.sock.settimeout(timeout)
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True
        except TimeoutError:
            return False


def entity(cls: type, field_name: str, **fields: Any) -> Any:
    """Build the nested entity held by ``cls.field_name``."""
    return make(item_type(cls, field_name), **fields)
