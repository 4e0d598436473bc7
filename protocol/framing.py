"""Size-prefixed framing: every Kafka request and response is int32 length + payload."""

from __future__ import annotations

import struct

_SIZE = struct.Struct(">i")


class FrameError(Exception):
    """The peer sent a frame size we will not accept; the connection must be closed."""


class FrameReader:
    """Accumulates stream bytes and yields complete frames (without the size prefix).

    A frame that spans several reads (a 1 MB produce arrives in many chunks) is gathered as a
    list of chunks and joined once, instead of being re-copied into one growing buffer.
    """

    __slots__ = ("_buf", "_max_size", "_chunks", "_chunked", "_want")

    def __init__(self, max_size: int) -> None:
        self._buf = b""
        self._max_size = max_size
        self._chunks: list[bytes] = []
        self._chunked = 0  # bytes held in _chunks
        self._want = 0  # total bytes (prefix included) of the frame being gathered, 0 if none

    def feed(self, data: bytes) -> list[bytes]:
        frames: list[bytes] = []
        if self._want:
            # Gathering one large frame: chunks hold its payload only (prefix already dropped).
            self._chunks.append(data)
            self._chunked += len(data)
            if self._chunked < self._want:
                return frames
            excess = self._chunked - self._want
            data = b""
            if excess:
                last = self._chunks[-1]
                self._chunks[-1] = last[: len(last) - excess]
                data = last[len(last) - excess :]
            frames.append(b"".join(self._chunks))
            self._chunks.clear()
            self._chunked = self._want = 0
        elif self._buf:
            data = self._buf + data
        pos = 0
        end = len(data)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(data, pos)
            if size < 0 or size > self._max_size:
                raise FrameError(f"invalid frame size {size} (limit {self._max_size})")
            if end - pos - 4 < size:
                self._want = size
                self._chunks.append(data[pos + 4 :])
                self._chunked = end - pos - 4
                self._buf = b""
                return frames
            frames.append(data[pos + 4 : pos + 4 + size])
            pos += 4 + size
        self._buf = data[pos:] if pos < end else b""
        return frames

    @property
    def buffered(self) -> int:
        return len(self._buf) + self._chunked

    @property
    def max_size(self) -> int:
        """The largest frame accepted; a connection lowers it until it is authenticated."""
        return self._max_size

    @max_size.setter
    def max_size(self, value: int) -> None:
        self._max_size = value


def frame(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload
