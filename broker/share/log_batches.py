"""The log batches of a read, as a share-partition acquires them (whole batches)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kafkette.protocol.records import iter_batches

from .share_partition import LogBatch


class AbortedTransaction(Protocol):
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset


def log_batches(data: bytes, aborted: Sequence[AbortedTransaction] | None = None
                ) -> list[LogBatch]:
    """Every complete batch of ``data`` with its byte span; with ``aborted`` (a read_committed
    read), the data batches of those transactions are marked aborted."""
    out = []
    pos = 0
    for header, _view in iter_batches(data):
        end = pos + header.size
        is_aborted = False
        if aborted and header.is_transactional and not header.is_control:
            pid, base = header.producer_id, header.base_offset
            is_aborted = any(t.producer_id == pid and t.first_offset <= base <= t.last_offset
                             for t in aborted)
        out.append(LogBatch(header.base_offset, header.last_offset, pos, end, is_aborted))
        pos = end
    return out
