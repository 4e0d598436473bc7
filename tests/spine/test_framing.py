"""Unit tests of framing and headers."""

from __future__ import annotations

import struct

import pytest

from kafkette.protocol.framing import FrameError, FrameReader, frame
from kafkette.protocol.headers import HeaderError, HeaderParser, peek_api


def test_frames_split_across_reads_and_coalesced():
    reader = FrameReader(1024)
    data = frame(b"abc") + frame(b"") + frame(b"defgh")
    assert reader.feed(data[:2]) == []
    assert reader.feed(data[2:11]) == [b"abc", b""]
    assert reader.feed(data[11:]) == [b"defgh"]
    assert reader.buffered == 0


@pytest.mark.parametrize("size", [-1, 1025])
def test_bad_sizes_raise(size):
    with pytest.raises(FrameError):
        FrameReader(1024).feed(struct.pack(">i", size))


def test_header_v1_and_v2():
    raw = struct.pack(">hhih", 12, 4, 99, 3) + b"cli" + b"\x00" + b"BODY"
    assert peek_api(raw) == (12, 4, 99)
    client_id, pos = HeaderParser().parse(raw, flexible=True)
    assert client_id == "cli" and raw[pos:] == b"BODY"
    client_id, pos = HeaderParser().parse(struct.pack(">hhih", 3, 1, 5, -1) + b"X", flexible=False)
    assert client_id is None and pos == 10


def test_header_with_tagged_fields_is_skipped():
    raw = struct.pack(">hhih", 12, 4, 1, -1) + b"\x01\x05\x02zz" + b"B"
    _, pos = HeaderParser().parse(raw, flexible=True)
    assert raw[pos:] == b"B"


@pytest.mark.parametrize("raw", [b"\x00\x01", struct.pack(">hhih", 1, 1, 1, 50) + b"short"])
def test_truncated_headers_raise(raw):
    with pytest.raises(HeaderError):
        HeaderParser().parse(raw, flexible=False)
