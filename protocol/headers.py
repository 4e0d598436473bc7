"""Request header v1/v2 parsing and response header v0/v1 encoding.

Headers are parsed by hand: they are on every request's hot path and their layout has
not changed since KIP-482 added the flexible (v2) variant.
"""

from __future__ import annotations

import struct

from .varint import HeaderError, skip_tagged_fields

_HEAD = struct.Struct(">hhih")  # api_key, api_version, correlation_id, client_id length
_I32 = struct.Struct(">i")
_CLIENT_LEN = struct.Struct(">h")


def peek_api(frame: bytes) -> tuple[int, int, int]:
    """api_key, api_version, correlation_id: common to every header version."""
    if len(frame) < 8:
        raise HeaderError(f"request header truncated ({len(frame)} bytes)")
    key, version, correlation_id = struct.unpack_from(">hhi", frame, 0)
    return key, version, correlation_id


class HeaderParser:
    """Request header v1/v2 parsing at struct level, for one connection.

    Returns only what the dispatcher needs (client id, body offset); key, version and
    correlation id come from ``peek_api``. A client sends the same client id on every request,
    so the last one's raw bytes and decoded string are kept: a repeat is compared in place
    (``bytes.startswith`` at an offset, no slice) instead of decoded again.
    """

    __slots__ = ("_raw", "_client_id")

    def __init__(self) -> None:
        self._raw = b""
        self._client_id: str | None = ""

    def parse(self, frame: bytes, flexible: bool) -> tuple[str | None, int]:
        """(client_id, body offset) of a header v1 (v2 when ``flexible``)."""
        if len(frame) < _HEAD.size:
            raise HeaderError(f"request header truncated ({len(frame)} bytes)")
        client_len = _CLIENT_LEN.unpack_from(frame, 8)[0]
        if client_len >= 0:
            pos = _HEAD.size + client_len
            raw = self._raw
            if client_len == len(raw) and frame.startswith(raw, _HEAD.size):
                client_id = self._client_id
            else:
                if pos > len(frame):
                    raise HeaderError("client_id runs past the frame")
                raw = frame[_HEAD.size:pos]
                try:
                    client_id = raw.decode()
                except UnicodeDecodeError as exc:
                    raise HeaderError("client_id is not UTF-8") from exc
                self._raw, self._client_id = raw, client_id
        elif client_len == -1:
            client_id = None
            pos = _HEAD.size
        else:
            raise HeaderError(f"bad client_id length {client_len}")
        if flexible:
            # Almost always an empty tag section: one zero byte.
            if pos < len(frame) and frame[pos] == 0:
                pos += 1
            else:
                pos = skip_tagged_fields(frame, pos)
        return client_id, pos
