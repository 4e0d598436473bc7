"""broker/request_memo.py: where a windowed field lies, and when a frame matches past it."""

from __future__ import annotations

import struct

from kafkette.broker.request_memo import RequestMemo, windows_of


def _frame(*offsets: int, tail: bytes = b"end") -> bytes:
    out = b"\x00\x08\x00\x09\x00\x00\x00\x01" + b"head"
    for o in offsets:
        out += b"\x00\x00\x00\x00" + struct.pack(">q", o)
    return out + tail


def test_windows_are_the_unique_places_of_the_values():
    frame = _frame(300, 7000)
    assert windows_of(frame, [300, 7000]) == (16, 28)
    assert windows_of(frame, [7000, 300]) is None  # not in frame order
    assert windows_of(_frame(5, 5), [5, 5]) is None  # the same 8 bytes twice
    assert windows_of(frame, [301]) is None  # not there
    assert windows_of(frame, []) is None
    # 8 bytes that also occur across other fields are not a window
    assert windows_of(_frame(0), [0]) is None


def test_a_frame_matches_only_when_equal_outside_the_windows():
    frame = _frame(300, 7000)
    memo = RequestMemo(9, frame, None, None, None, None, windows_of(frame, [300, 7000]))
    moved = _frame(301, 2**40)
    assert moved.startswith(memo.tail, 8) and memo.rest_matches(moved)
    assert memo.values(moved) == [301, 2**40]
    other_tail = _frame(301, 7001, tail=b"enD")
    assert not memo.rest_matches(other_tail)
    between = bytearray(_frame(301, 7001))
    between[24] = 1  # the 4 bytes between the two windows
    assert not memo.rest_matches(bytes(between))
