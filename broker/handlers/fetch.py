"""Fetch (key 1), versions 4-17: long-poll for data and send log bytes straight from the files.

The response is framed by hand so each partition's records can be spliced in from its segment
file with ``os.sendfile`` instead of being copied through Python. Fetch sessions are not kept:
every response carries session id 0, which clients treat as "no session, send full fetches".
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import uuid
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.headers import encode_uvarint
from kafkette.storage.log import LogSlice, OffsetOutOfRangeError, PartitionLog

from ..context import RequestContext
from ..registry import api

log = logging.getLogger("kafkette.fetch")

_SPLICE_MIN = 64 * 1024  # smaller slices are read and written with the surrounding bytes
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PART_FIXED = struct.Struct(">ihqqq")  # index, error, high watermark, last stable, log start
_FETCH_SESSION_ID_NOT_FOUND = 70


class FetchResponseWriter:
    """A pre-framed Fetch response: bytes interleaved with log slices."""

    __slots__ = ("parts", "size", "flexible")

    def __init__(self, parts: list[bytes | LogSlice], size: int, flexible: bool) -> None:
        self.parts = parts
        self.size = size
        self.flexible = flexible

    def write_to(self, transport: Any, correlation_id: int, api_codec: Any) -> None:
        try:
            self._write(transport, correlation_id)
        except OSError as exc:
            # Part of the frame may be out already: the connection cannot continue.
            log.warning("fetch response failed mid-write (%s); closing the connection", exc)
            transport.abort()

    def _write(self, transport: Any, correlation_id: int) -> None:
        header = _I32.pack(correlation_id) + (b"\x00" if self.flexible else b"")
        buf = bytearray(_I32.pack(len(header) + self.size) + header)
        sock = transport.get_extra_info("socket")
        # Splicing bypasses the transport: only on a plain TCP socket, never under TLS.
        plain = sock is not None and transport.get_extra_info("sslcontext") is None
        sock_fd = sock.fileno() if plain else -1
        for part in self.parts:
            if isinstance(part, bytes):
                buf += part
                continue
            if part.size < _SPLICE_MIN or sock_fd < 0:
                buf += _read_slice(part)
                continue
            if buf:
                transport.write(bytes(buf))
                buf = bytearray()
            sent = 0
            if transport.get_write_buffer_size() == 0 and not transport.is_closing():
                sent = _sendfile(sock_fd, part)
            if sent < part.size:
                rest = LogSlice(part.fd, part.position + sent, part.size - sent, part.first_offset)
                transport.write(_read_slice(rest))
        if buf:
            transport.write(bytes(buf))


def _read_slice(part: LogSlice) -> bytes:
    data = os.pread(part.fd, part.size, part.position)
    if len(data) < part.size:  # the log was truncated under us; keep the framing intact
        data += b"\x00" * (part.size - len(data))
    return data


def _sendfile(sock_fd: int, part: LogSlice) -> int:
    sent = 0
    while sent < part.size:
        try:
            n = os.sendfile(sock_fd, part.fd, part.position + sent, part.size - sent)
        except (BlockingIOError, InterruptedError):
            break
        except OSError:
            break  # let the transport report the socket error
        if n == 0:
            break
        sent += n
    return sent


class _Builder:
    """Encodes one Fetch response version; records are appended as LogSlices."""

    def __init__(self, version: int) -> None:
        self.v = version
        self.flexible = version >= 12
        self.parts: list[bytes | LogSlice] = []
        self.buf = bytearray()
        self.size = 0

    def raw(self, data: bytes) -> None:
        self.buf += data

    def array_len(self, n: int) -> None:
        self.buf += encode_uvarint(n + 1) if self.flexible else _I32.pack(n)

    def string(self, s: str) -> None:
        b = s.encode()
        self.buf += (encode_uvarint(len(b) + 1) if self.flexible else _I16.pack(len(b))) + b

    def records(self, slice_: LogSlice | None) -> None:
        n = 0 if slice_ is None else slice_.size
        self.buf += encode_uvarint(n + 1) if self.flexible else _I32.pack(n)
        if slice_ is not None and n:
            self._flush()
            self.parts.append(slice_)
            self.size += n

    def tags(self) -> None:
        if self.flexible:
            self.buf.append(0)

    def _flush(self) -> None:
        if self.buf:
            self.parts.append(bytes(self.buf))
            self.size += len(self.buf)
            self.buf = bytearray()

    def finish(self) -> FetchResponseWriter:
        self._flush()
        return FetchResponseWriter(self.parts, self.size, self.flexible)


class _Plan:
    """The partitions of one request, resolved once; ``build`` reads them as of now."""

    def __init__(self, ctx: RequestContext, req: Any) -> None:
        self.version = ctx.api_version
        self.req = req
        logs = ctx.broker.logs
        self.stats = ctx.broker.stats
        self.topics: list[tuple[Any, list[tuple[Any, PartitionLog | None, ErrorCode]]]] = []
        self.logs: list[PartitionLog] = []
        self.has_error = False
        for t in req.topics:
            if self.version >= 13:
                info = logs.topic_by_id(t.topic_id)
                missing = ErrorCode.unknown_topic_id
                key: Any = t.topic_id
            else:
                info = logs.topic(t.topic)
                missing = ErrorCode.unknown_topic_or_partition
                key = t.topic
            entries = []
            for p in t.partitions:
                plog = logs.get_partition(info.name, p.partition) if info is not None else None
                if plog is None:
                    entries.append((p, None, missing if info is None else ErrorCode.unknown_topic_or_partition))
                    self.has_error = True
                else:
                    entries.append((p, plog, ErrorCode.none))
                    self.logs.append(plog)
            self.topics.append((key, entries))

    def build(self) -> tuple[FetchResponseWriter, int, bool]:
        """(response, record bytes, any partition error)."""
        v = self.version
        b = _Builder(v)
        b.raw(_I32.pack(0))  # throttle time
        if v >= 7:
            b.raw(_I16.pack(0) + _I32.pack(0))  # error code, session id (no session)
        b.array_len(len(self.topics))
        remaining = self.req.max_bytes if v >= 3 else 2**31 - 1
        min_one = True
        total = 0
        error = self.has_error
        read_committed = getattr(self.req, "isolation_level", 0) == 1
        self.topic_bytes: dict[str, int] = {}
        for key, entries in self.topics:
            if v >= 13:
                b.raw(key.bytes if isinstance(key, uuid.UUID) else bytes(16))
            else:
                b.string(key)
            b.array_len(len(entries))
            for p, plog, code in entries:
                slice_ = None
                hw = lso = start = -1
                if plog is not None and plog.closed:  # deleted while we waited
                    plog, code = None, ErrorCode.unknown_topic_or_partition
                    error = True
                if plog is not None:
                    try:
                        limit = max(min(p.partition_max_bytes, remaining), 0)
                        slice_ = plog.read(p.fetch_offset, limit, min_one=min_one)
                        hw = lso = plog.log_end_offset
                        start = plog.log_start_offset
                    except OffsetOutOfRangeError:
                        code = ErrorCode.offset_out_of_range
                        error = True
                if slice_ is not None:
                    min_one = False
                    remaining -= slice_.size
                    total += slice_.size
                    self.topic_bytes[plog.topic] = self.topic_bytes.get(plog.topic, 0) + slice_.size
                b.raw(_PART_FIXED.pack(p.partition, code.value, hw, lso, start)[: 22 if v < 5 else 30])
                if read_committed:
                    b.array_len(0)
                else:
                    b.raw(b"\x00" if b.flexible else b"\xff\xff\xff\xff")  # null aborted txns
                if v >= 11:
                    b.raw(_I32.pack(-1))  # preferred read replica
                b.records(slice_)
                b.tags()
            b.tags()
        b.tags()
        return b.finish(), total, error


@api(1, 4, 17)
def handle_fetch(ctx: RequestContext, req: Any):
    if getattr(req, "session_id", 0) != 0:
        return _session_not_found(ctx.api_version)
    plan = _Plan(ctx, req)
    response, total, error = plan.build()
    max_wait = req.max_wait.total_seconds()
    if error or total >= req.min_bytes or max_wait <= 0 or not plan.logs:
        plan.stats.fetched(plan.topic_bytes)
        return response
    return _long_poll(plan, max_wait, req.min_bytes)


async def _long_poll(plan: _Plan, max_wait: float, min_bytes: int) -> FetchResponseWriter:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max_wait
    while True:
        fut = loop.create_future()
        for plog in plan.logs:
            plog.add_waiter(fut)
        timer = loop.call_later(max(deadline - loop.time(), 0), _resolve, fut)
        try:
            await fut
        finally:
            timer.cancel()
            for plog in plan.logs:
                plog.remove_waiter(fut)
        response, total, error = plan.build()
        if error or total >= min_bytes or loop.time() >= deadline or any(p.closed for p in plan.logs):
            plan.stats.fetched(plan.topic_bytes)
            return response


def _resolve(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)


def _session_not_found(version: int) -> FetchResponseWriter:
    b = _Builder(version)
    b.raw(_I32.pack(0) + _I16.pack(_FETCH_SESSION_ID_NOT_FOUND) + _I32.pack(0))
    b.array_len(0)
    b.tags()
    return b.finish()
