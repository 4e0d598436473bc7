"""The coordinator's view of one ``__consumer_offsets`` partition: append records, read them back.

The broker adapts a storage partition log to this (broker/services/offsets_log.py); tests use ``MemoryLog``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from typing import NamedTuple, Protocol


class TxnRecordKey(NamedTuple):
    """In place of a record's key bytes: a record of producer ``producer_id``'s transaction
    (written in a transactional batch; pending until its marker)."""

    producer_id: int
    producer_epoch: int
    key: bytes


class TxnMarker(NamedTuple):
    """In place of a record's key (value None): the COMMIT/ABORT control batch of a
    transaction. Both keep records 2-tuples, so replay loops unpack them unchanged."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int = 0


# A record's key as the coordinator appends and replays it: the key bytes of a plain record, or
# a TxnRecordKey (a record of a transaction) or TxnMarker (its COMMIT/ABORT control batch).
RecordKey = bytes | TxnRecordKey | TxnMarker
# A ``__consumer_offsets`` record: (key, value bytes or None: a tombstone, or a marker).
RawRecord = tuple[RecordKey, bytes | None]


class CoordinatorLog(Protocol):
    def append(self, records: Sequence[RawRecord]) -> asyncio.Future:
        """Append records as one batch, in call order; the future resolves once they are
        durable (or fails with the write's error)."""

    def append_inline(self, records: Sequence[RawRecord]) -> asyncio.Future | None:
        """``append``, but None when the records are durable already (a write finished inline
        under the flush policy), so the waiters complete without a loop round trip; errors
        are raised. What the runtime calls (a log that never finishes inline returns
        ``append(records)``)."""

    def read(self) -> AsyncIterator[Iterable[RawRecord]]:
        """Every record from the log start, in chunks, in log order."""


class MemoryLog:
    """In-memory log with hooks to hold or fail appends (for tests)."""

    def __init__(self) -> None:
        self.records: list[RawRecord] = []
        self.batches = 0
        self.fail_with: Exception | None = None
        self.gate: asyncio.Event | None = None
        self.inline = False  # answer appends as durable at once (None), as a page-cache write

    def append(self, records: Sequence[RawRecord]) -> asyncio.Future:
        return asyncio.ensure_future(self._append(records))

    def append_inline(self, records: Sequence[RawRecord]) -> asyncio.Future | None:
        if self.inline and self.gate is None:
            if self.fail_with is not None:
                raise self.fail_with
            self.records.extend(records)
            self.batches += 1
            return None
        return self.append(records)

    async def _append(self, records: Sequence[RawRecord]) -> None:
        if self.gate is not None:
            await self.gate.wait()
        if self.fail_with is not None:
            raise self.fail_with
        self.records.extend(records)
        self.batches += 1

    async def read(self) -> AsyncIterator[Sequence[RawRecord]]:
        chunk = 10_000
        for i in range(0, len(self.records), chunk):
            yield self.records[i:i + chunk]
