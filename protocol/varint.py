"""Every varint of the protocol: unsigned (request headers, compact lengths, tagged fields) and
zigzag-signed (record fields). One module, so there is one reader and one writer of each kind.

Imports nothing heavy: the early listener (broker/api_versions.py) reads ApiVersions requests with
these before any codec is loaded.

Hot callers and what they rely on:

* ``read_varint`` is called per record field by record decoding, batch validation and offset
  replay (the one-byte case is inlined by the hottest of them; this is the general path);
* ``encode_varint`` serves record building from ``SMALL_VARINTS``: the zigzag encodings of
  0..8191, so that building a record of small fields is a tuple index per field;
* ``encode_uvarint`` serves compact lengths from ``ONE_BYTE_UVARINTS`` the same way.

Not here: protocol/validate.py's bounded reader is generated into the request checker (its
error is the checker's) and pipeline/fastdecode.py decodes whole columns of varints with numpy.
"""

from __future__ import annotations

from .record_errors import CorruptRecordError


class HeaderError(Exception):
    """The request header (or a compact field read like one) could not be parsed."""


# Unsigned varints ---------------------------------------------------------------------------

def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it) of the unsigned varint at ``pos``: at most 5 bytes."""
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


# Zigzag varints (record fields) -------------------------------------------------------------

def write_varint(out: bytearray, value: int) -> None:
    """Append the zigzag varint of ``value`` (the varlong range covers varints too)."""
    value = (value << 1) ^ (value >> 63)
    value &= 0xFFFFFFFFFFFFFFFF
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def read_varint(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(value, position after it) of the zigzag varint at ``pos``; IndexError past the end."""
    shift = 0
    result = 0
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptRecordError("varint too long")
    return (result >> 1) ^ -(result & 1), pos


def varint_bytes(value: int) -> bytes:
    """The zigzag varint of ``value``, computed."""
    out = bytearray()
    write_varint(out, value)
    return bytes(out)


# zigzag(n) = 2n: one byte below 64, two bytes below 8192 (built from ranges, not through
# varint_bytes: this table is a sizeable part of the broker's import time otherwise).
SMALL_VARINTS = tuple([bytes((z,)) for z in range(0, 128, 2)]
                      + [bytes(((z & 0x7F) | 0x80, z >> 7)) for z in range(128, 16384, 2)])


def encode_varint(value: int) -> bytes:
    """The zigzag varint of ``value``: from ``SMALL_VARINTS`` for 0..8191."""
    return SMALL_VARINTS[value] if 0 <= value < 8192 else varint_bytes(value)
