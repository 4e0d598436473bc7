"""A connection's memo of the last request of a hot API: a repeat of it skips the header parse,
the bounds check, the decode and a new context.

Two kinds of repeat:

- *Identical* (the routes' ``IDENTICAL_REPEATS``: Heartbeat, ConsumerGroupHeartbeat): byte for byte the same from byte 8 on (all
  but size and correlation id). It decodes to the same header and body, so the handler runs on
  the memo's body. Their decoded request is immutable (kio's frozen dataclasses) and their
  handlers keep neither the request nor its context past the answer.
- *Windowed* (OffsetCommit, registered with ``routes.repeats``): the same but for some int64
  fields (the committed offsets: a consumer commits the same partitions again and again). The
  memo knows where in its frame each of those fields lies; a frame equal to it outside those
  8-byte windows parses exactly as the memo's did (the parse of a fixed-width field does not
  depend on its value), so it is the memo's request with new values there, and the handler
  module's runner is called with them instead of a decoded body. The runner keeps neither its
  context nor the values past its call: the context is the memo's, and pipelined commits share it.

A windowed field is located by value: its 8 bytes must occur exactly once in the frame (from
byte 8 on). Where one does not (two partitions at the same offset, say), the request gets an
identical memo instead: only a byte-identical repeat skips the decode (a consumer with nothing
new to commit), with the handler run on the memo's body, which the repeat API's handler keeps no
more than its runner does.
"""

from __future__ import annotations

import struct
from typing import Any

from .context import RequestContext

MAX_FRAME = 1024  # larger requests are not memoised
MAX_WINDOWS = 16

_I64 = struct.Struct(">q")


class RequestMemo:
    """``tail``: the frame from byte 8 up to its first window (to its end when identical);
    ``rest``: after each window, (position, the bytes up to the next window or the end);
    ``windows``: the windows' positions. ``handler`` is the route's handler (identical) or the
    runner taking (context, values) (windowed)."""

    __slots__ = ("version", "size", "tail", "rest", "windows", "api_codec", "body", "ctx",
                 "handler")

    def __init__(self, version: int, frame: bytes, api_codec: Any, body: Any,
                 ctx: RequestContext, handler: Any, windows: tuple[int, ...] = ()) -> None:
        self.version = version
        self.size = len(frame)
        self.windows = windows
        if windows:
            self.tail = frame[8:windows[0]]
            ends = (*windows[1:], len(frame))
            self.rest: tuple[tuple[int, bytes], ...] | None = tuple(
                (at + 8, frame[at + 8:end]) for at, end in zip(windows, ends, strict=True))
        else:
            self.tail = frame[8:]
            self.rest = None
        self.api_codec = api_codec
        self.body = body
        self.ctx = ctx
        self.handler = handler

    def rest_matches(self, frame: bytes) -> bool:
        """Whether ``frame`` (equal to the memo's up to its first window) is equal to it past
        every window too."""
        for at, part in self.rest:  # type: ignore[union-attr]  # the connection calls it only for a windowed memo (rest set)  # noqa: SIM110 - no generator
            if not frame.startswith(part, at):
                return False
        return True

    def values(self, frame: bytes) -> list[int]:
        """The windowed fields of ``frame``, in frame order."""
        unpack = _I64.unpack_from
        return [unpack(frame, at)[0] for at in self.windows]


def windows_of(frame: bytes, values: list[int]) -> tuple[int, ...] | None:
    """The positions of the int64 fields holding ``values`` (in frame order), each found as the
    only occurrence of its 8 bytes in ``frame`` from byte 8 on; None when one is not unique."""
    if not values or len(values) > MAX_WINDOWS:
        return None
    found = []
    start = 8
    for value in values:
        pattern = _I64.pack(value)
        at = frame.find(pattern, 8)
        if at < start or frame.find(pattern, at + 1) != -1:
            return None
        found.append(at)
        start = at + 8
    return tuple(found)
