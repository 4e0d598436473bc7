"""Merging state batches (Kafka's PersisterStateBatchCombiner): how a ShareUpdate's batches
combine with the snapshot's, and how many offsets at or past the start offset are delivered.

Batches are inclusive offset ranges, each with one delivery state and count. A newer batch
overwrites the part of any older batch it overlaps; ranges below the start offset are dropped
(a batch straddling it is cut); adjacent batches with the same state and count are joined.
"""

from __future__ import annotations

from collections.abc import Iterable

from kafkette.protocol.share_state_records import PersistedBatch

from .persister import ACKNOWLEDGED, ARCHIVED, UNINITIALIZED_START_OFFSET

TERMINAL = (ACKNOWLEDGED, ARCHIVED)


def combine(current: Iterable[PersistedBatch], newer: Iterable[PersistedBatch],
            start_offset: int = UNINITIALIZED_START_OFFSET) -> list[PersistedBatch]:
    """``current`` overlaid with ``newer`` (later batches of ``newer`` win too), cut at
    ``start_offset`` (-1: not cut), sorted and coalesced."""
    result = sorted(current)
    for batch in newer:
        if batch.last_offset < batch.first_offset:
            continue
        result = _overlay(result, batch)
    if start_offset != UNINITIALIZED_START_OFFSET:
        result = [b if b.first_offset >= start_offset else b._replace(first_offset=start_offset)
                  for b in result if b.last_offset >= start_offset]
    return _coalesce(result)


def _overlay(batches: list[PersistedBatch], batch: PersistedBatch) -> list[PersistedBatch]:
    first, last = batch.first_offset, batch.last_offset
    out: list[PersistedBatch] = []
    placed = False
    for b in batches:
        if b.last_offset < first:
            out.append(b)
            continue
        if b.first_offset > last:
            if not placed:
                out.append(batch)
                placed = True
            out.append(b)
            continue
        # overlaps: keep what sticks out on either side
        if b.first_offset < first:
            out.append(b._replace(last_offset=first - 1))
        if not placed:
            out.append(batch)
            placed = True
        if b.last_offset > last:
            out.append(b._replace(first_offset=last + 1))
    if not placed:
        out.append(batch)
    return out


def _coalesce(batches: list[PersistedBatch]) -> list[PersistedBatch]:
    out: list[PersistedBatch] = []
    for b in batches:
        if out:
            prev = out[-1]
            if (prev.last_offset + 1 == b.first_offset and prev.delivery_state == b.delivery_state
                    and prev.delivery_count == b.delivery_count):
                out[-1] = prev._replace(last_offset=b.last_offset)
                continue
        out.append(b)
    return out


def delivery_complete_count(batches: Iterable[PersistedBatch], start_offset: int) -> int:
    """Offsets at or past ``start_offset`` already ACKNOWLEDGED or ARCHIVED (KIP-1226's
    DeliveryCompleteCount, which the lag of DescribeShareGroupOffsets v1 subtracts); -1 when
    the start offset is not known yet."""
    if start_offset == UNINITIALIZED_START_OFFSET:
        return -1
    total = 0
    for b in batches:
        if b.delivery_state in TERMINAL and b.last_offset >= start_offset:
            total += b.last_offset - max(b.first_offset, start_offset) + 1
    return total
