"""Kafka's ``.txnindex`` files: one 34-byte entry per aborted transaction (version 0, producer
id, first offset, last offset = the ABORT marker's, last stable offset when it was written),
kept beside the segment that holds the marker. The broker rebuilds the aborted transactions
from the log when it starts, so these files are for tools that read a log directory; startup
rewrites them from that scan."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from kafkette.protocol.txn_index import SUFFIX, parse_entries
from kafkette.protocol.txn_index import encode_entry as _encode_entry

from .producer_state import AbortedTxn
from .segment import segment_name

__all__ = ["SUFFIX", "append", "entry", "read", "rewrite"]


def entry(txn: AbortedTxn, last_stable_offset: int) -> bytes:
    return _encode_entry(txn.producer_id, txn.first_offset, txn.last_offset, last_stable_offset)


def append(path: Path, data: bytes) -> None:
    """Writer thread: add one entry."""
    with open(path, "ab") as fh:
        fh.write(data)


def rewrite(directory: Path, base_offset: int, entries: list[bytes]) -> None:
    """Startup: make a segment's index hold exactly ``entries`` (none: no file)."""
    path = directory / segment_name(base_offset, SUFFIX)
    data = b"".join(entries)
    if not data:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    with contextlib.suppress(FileNotFoundError):
        if path.read_bytes() == data:
            return
    path.write_bytes(data)


def read(path: Path) -> list[tuple[int, int, int, int]]:
    """(producer id, first offset, last offset, last stable offset) of each entry."""
    return parse_entries(path.read_bytes())
