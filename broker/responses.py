"""What a handler may return, and the one place responses are framed and written.

A handler returns one of:

* a kio response object of the request's version (the usual case);
* a :class:`SplicedResponse`: a body whose record bytes stay in segment files and are sent with
  ``os.sendfile`` (Fetch);
* ``NO_RESPONSE``: answer nothing (Produce with acks=0);
* ``CLOSE_CONNECTION``: close the connection instead of answering (a failed acks=0 Produce:
  Kafka's only signal to such a producer);
* or an ``asyncio.Future`` / awaitable that resolves to one of these; a :class:`ParkedResponse`
  (a parked JoinGroup/SyncGroup answer) is written as soon as it is completed, synchronously.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
from collections.abc import Callable
from typing import Any

from kafkette.protocol.codec import ApiCodec
from kafkette.protocol.produce_response import encode_produce_response
from kafkette.storage.log_read import LogSlice

log = logging.getLogger("kafkette.connection")

NO_RESPONSE = object()
"""Returned by a handler that must not answer (Produce with acks=0)."""

CLOSE_CONNECTION = object()
"""Returned by a handler whose request ends the connection (a failed acks=0 Produce)."""

_I32 = struct.Struct(">i")
_SPLICE_MIN = 64 * 1024  # smaller slices are read and written with the surrounding bytes

# Bodies encoded by hand where kio's generic writer is too slow for the hot path.
_FAST_ENCODERS: dict[int, Callable[[int, Any], bytes]] = {0: encode_produce_response}


class SplicedResponse:
    """A response body of encoded bytes interleaved with log slices sent zero-copy."""

    __slots__ = ("parts", "size")

    def __init__(self, parts: list[bytes | LogSlice], size: int) -> None:
        self.parts = parts
        self.size = size


class ParkedResponse(asyncio.Future):
    """The future of a parked request's response, completed at a coordinator transition (the
    join phase ends, the group's assignment is durable). Kafka answers every awaiting member in
    that one pass, so nothing read afterwards is answered first: besides asyncio's callbacks
    (a later loop turn) it has listeners that run synchronously inside ``set_result`` /
    ``set_exception`` / ``cancel``, through which the connection writes the response at once.
    A listener runs inside whatever completed the future (another connection's request, the
    coordinator runtime's flush): it must not handle further requests there. Its exceptions are
    logged, never raised into the completer."""

    _listeners: list[Callable[[asyncio.Future], None]] | None = None

    def add_listener(self, listener: Callable[[asyncio.Future], None]) -> None:
        """Call ``listener(self)`` when the future completes; at once if it is done already."""
        if self.done():
            _run_listener(listener, self)
        elif self._listeners is None:
            self._listeners = [listener]
        else:
            self._listeners.append(listener)

    def set_result(self, result: Any) -> None:
        super().set_result(result)
        self._completed()

    def set_exception(self, exception: Any) -> None:
        super().set_exception(exception)
        self._completed()

    def cancel(self, msg: Any = None) -> bool:
        cancelled = super().cancel(msg)
        if cancelled:
            self._completed()
        return cancelled

    def _completed(self) -> None:
        listeners = self._listeners
        if listeners:
            self._listeners = None
            for listener in listeners:
                _run_listener(listener, self)


def _run_listener(listener: Callable[[asyncio.Future], None], fut: asyncio.Future) -> None:
    try:
        listener(fut)
    except Exception:
        log.exception("writing a parked response failed")


def frame_response(api_codec: ApiCodec, correlation_id: int, response: Any) -> bytes:
    """Size prefix + response header + the encoded body of a kio response object."""
    fast = _FAST_ENCODERS.get(api_codec.api_key)
    if fast is not None:
        return api_codec.frame(correlation_id, fast(api_codec.version, response))
    return api_codec.encode_response(correlation_id, response)


def write_spliced(transport: Any, api_codec: ApiCodec, correlation_id: int,
                  response: SplicedResponse) -> None:
    """Write a framed SplicedResponse; on a socket error the connection is aborted."""
    try:
        _write_spliced(transport, api_codec, correlation_id, response)
    except OSError as exc:
        # Part of the frame may be out already: the connection cannot continue.
        log.warning("response failed mid-write (%s); closing the connection", exc)
        transport.abort()


def _write_spliced(transport: Any, api_codec: ApiCodec, correlation_id: int,
                   response: SplicedResponse) -> None:
    buf = bytearray(api_codec.frame(correlation_id, b""))
    buf[:4] = _I32.pack(len(buf) - 4 + response.size)
    sock = transport.get_extra_info("socket")
    # Splicing bypasses the transport: only on a plain TCP socket, never under TLS.
    plain = sock is not None and transport.get_extra_info("sslcontext") is None
    sock_fd = sock.fileno() if plain else -1
    for part in response.parts:
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
