"""Kafka's ``.txnindex`` entry format: one 34-byte entry per aborted transaction (version 0,
producer id, first offset, last offset = the ABORT marker's, last stable offset when it was
written). Pure: the broker's storage writes these files, tools that read a log directory (the
lag pipeline) parse them."""

from __future__ import annotations

import struct

ENTRY = struct.Struct(">hqqqq")
SUFFIX = ".txnindex"


def encode_entry(producer_id: int, first_offset: int, last_offset: int,
                 last_stable_offset: int) -> bytes:
    return ENTRY.pack(0, producer_id, first_offset, last_offset, last_stable_offset)


def parse_entries(data: bytes) -> list[tuple[int, int, int, int]]:
    """(producer id, first offset, last offset, last stable offset) of each whole entry."""
    return [ENTRY.unpack_from(data, pos)[1:]
            for pos in range(0, len(data) - ENTRY.size + 1, ENTRY.size)]
