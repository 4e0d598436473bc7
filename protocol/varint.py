"""Unsigned varints and tagged-field skipping, as in request headers and compact fields.

Imports nothing: the early listener (broker/api_versions.py) reads ApiVersions requests with
these before any codec is loaded; protocol/headers.py re-exports them.
"""

from __future__ import annotations


class HeaderError(Exception):
    """The request header could not be parsed."""


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise HeaderError("truncated varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise HeaderError("varint too long")


ONE_BYTE_UVARINTS = tuple(bytes([n]) for n in range(0x80))


def encode_uvarint(n: int) -> bytes:
    """Unsigned varint, as in compact lengths and tagged-field counts."""
    if 0 <= n < 0x80:
        return ONE_BYTE_UVARINTS[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


MAX_HEADER_TAGS = 10_000  # bounds the loop below: a 100 MiB header of empty tags is a freeze


def skip_tagged_fields(buf: bytes, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    if count > MAX_HEADER_TAGS or count * 2 > len(buf) - pos:
        raise HeaderError(f"{count} tagged fields in {len(buf) - pos} bytes")
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > len(buf):
            raise HeaderError("truncated tagged field")
    return pos
