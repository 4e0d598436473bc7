"""A raw Kafka client built on the project's codec, for wire-level tests."""

from __future__ import annotations

import socket
import struct
from typing import Any

from protocol.build import item_type, make
from protocol.codec import decode_response, encode_request, request_type


class WireClient:
    def __init__(self, bootstrap: str, client_id: str | None = "wire-test", timeout: float = 10):
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.client_id = client_id
        self._corr = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> WireClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, api_key: int, version: int, body: Any) -> int:
        """Send a request without waiting; returns its correlation id."""
        self._corr += 1
        self.sock.sendall(encode_request(api_key, version, self._corr, self.client_id, body))
        return self._corr

    def receive(self, api_key: int, version: int) -> tuple[int, Any]:
        frame = self.read_frame()
        return decode_response(api_key, version, frame)

    def request(self, api_key: int, version: int, body: Any = None, **fields: Any) -> Any:
        """Send one request (a kio entity, or fields for ``make``) and return the response."""
        if body is None:
            body = make(request_type(api_key, version), **fields)
        corr = self.send(api_key, version, body)
        got, response = self.receive(api_key, version)
        assert got == corr, f"correlation id {got} != {corr}"
        return response

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        (size,) = struct.unpack(">i", self._read_exact(4))
        return self._read_exact(size)

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("connection closed by broker")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def is_closed_by_peer(self, timeout: float = 5) -> bool:
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
