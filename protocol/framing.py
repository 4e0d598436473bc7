"""Size-prefixed framing: every Kafka request and response is int32 length + payload."""

from __future__ import annotations

import struct

_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The peer sent a frame size we will not accept; the connection must be closed."""


class FrameReader:
    """Accumulates stream bytes and yields complete frames (without the size prefix)."""

    __slots__ = ("_buf", "_max_size")

    def __init__(self, max_size: int) -> None:
        self._buf = bytearray()
        self._max_size = max_size

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._buf
        buf += data
        frames: list[bytes] = []
        pos = 0
        end = len(buf)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(buf, pos)
            if size < 0 or size > self._max_size:
                raise FrameError(f"invalid frame size {size} (limit {self._max_size})")
            if end - pos - 4 < size:
                break
            frames.append(bytes(buf[pos + 4 : pos + 4 + size]))
            pos += 4 + size
        if pos:
            del buf[:pos]
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf)


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
