"""A fast encoder for Produce v3-12 response bodies.

kio's generic writer costs ~100 us per Produce response, which dominates small produces; this
writes the same bytes from the same kio ``ProduceResponse`` object (checked against kio in
tests/dataplane/test_wire.py). kafkette never sets the tagged fields
(``current_leader``, ``node_endpoints``); they are written empty.
"""

from __future__ import annotations

import struct
from datetime import datetime, timedelta
from typing import Any

from .varint import encode_uvarint

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_PART = struct.Struct(">ihqq")  # index, error code, base offset, log append time
_I64 = struct.Struct(">q")
_MS = timedelta(milliseconds=1)


def _string(value: str | None, flexible: bool) -> bytes:
    if value is None:
        return b"\x00" if flexible else b"\xff\xff"
    raw = value.encode()
    return (encode_uvarint(len(raw) + 1) if flexible else _I16.pack(len(raw))) + raw


def _millis(value: datetime | None) -> int:
    return -1 if value is None else round(value.timestamp() * 1000)


def encode_produce_response(version: int, response: Any) -> bytes:
    """The body of a Produce response of ``version`` (3-12) holding ``response``."""
    flexible = version >= 9

    def count(n: int) -> bytes:
        return encode_uvarint(n + 1) if flexible else _I32.pack(n)

    out = bytearray(count(len(response.responses)))
    for topic in response.responses:
        out += _string(topic.name, flexible)
        out += count(len(topic.partition_responses))
        for part in topic.partition_responses:
            out += _PART.pack(part.index, part.error_code.value, part.base_offset,
                              _millis(part.log_append_time))
            if version >= 5:
                out += _I64.pack(part.log_start_offset)
            if version >= 8:
                out += count(len(part.record_errors))
                for error in part.record_errors:
                    out += _I32.pack(error.batch_index)
                    out += _string(error.batch_index_error_message, flexible)
                    if flexible:
                        out.append(0)
                out += _string(part.error_message, flexible)
            if flexible:
                out.append(0)
        if flexible:
            out.append(0)
    out += _I32.pack(response.throttle_time // _MS if response.throttle_time else 0)
    if flexible:
        out.append(0)
    return bytes(out)

