"""Background log maintenance: time/size retention and key compaction.

Compaction reads and rewrites sealed segments in a worker thread; only the final swap of
segment objects happens on the event loop, so requests are never held up by it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

from kafkette.protocol.control_records import ABORT, COMMIT, control_type
from kafkette.protocol.records import BatchHeader, build_batch, decode_records, iter_batches
from kafkette.protocol.txn_index import encode_entry

from . import txn_index
from .log import PartitionLog
from .segment import Segment, segment_name
from .writer import DiskWriter

log = logging.getLogger("kafkette.storage")


def expired_segments(plog: PartitionLog, now_ms: int) -> list[Segment]:
    """Leading sealed segments that retention.ms / retention.bytes say to delete."""
    cfg = plog.config
    if not cfg.delete:
        return []
    sealed = plog.segments[:-1]
    out: list[Segment] = []
    if cfg.retention_ms >= 0:
        for seg in sealed:
            if seg.max_timestamp < now_ms - cfg.retention_ms:
                out.append(seg)
            else:
                break
    if cfg.retention_bytes >= 0:
        total = plog.size_bytes - sum(s.size for s in out)
        for seg in sealed[len(out) :]:
            if total - seg.size >= cfg.retention_bytes:
                out.append(seg)
                total -= seg.size
            else:
                break
    return out


def apply_retention(plog: PartitionLog, now_ms: int) -> int:
    expired = expired_segments(plog, now_ms)
    plog.delete_old_segments(expired, "retention")
    return len(expired)


def dirty_ratio(plog: PartitionLog, cleanable: list[Segment]) -> float:
    """Kafka's cleanable ratio: bytes not yet compacted over all bytes of the cleanable segments
    (everything before the active segment and ``min.compaction.lag.ms``)."""
    total = sum(s.size for s in cleanable)
    dirty = sum(s.size for s in cleanable if s.next_offset > plog.cleaned_upto)
    return dirty / total if total else 0.0


async def compact(plog: PartitionLog, writer: DiskWriter, now_ms: int) -> bool:
    """Keep only the last record of each key in the sealed segments once their dirty ratio
    reaches ``min.cleanable.dirty.ratio``. True if it rewrote any."""
    cfg = plog.config
    if not cfg.compact or plog.closed:
        return False
    sealed = plog.segments[:-1]
    # min.compaction.lag.ms: leave recent segments (and everything after them) alone.
    cutoff = now_ms - cfg.min_compaction_lag_ms
    for i, seg in enumerate(sealed):
        if seg.max_timestamp > cutoff:
            sealed = sealed[:i]
            break
    # Nothing at or past the last stable offset: an open transaction may still abort.
    lso = plog.last_stable_offset
    while sealed and sealed[-1].next_offset > lso:
        sealed = sealed[:-1]
    if not sealed:
        return False
    horizon = plog.marker_delete_horizon
    markers_due = horizon is not None and horizon <= now_ms
    if not markers_due and (sealed[-1].next_offset <= plog.cleaned_upto
                            or dirty_ratio(plog, sealed) < cfg.min_cleanable_dirty_ratio):
        return False
    new, markers = await asyncio.to_thread(_clean, plog, sealed, now_ms)
    current = plog.segments
    if plog.closed or any(s not in current for s in sealed):
        await asyncio.to_thread(_discard, new)
        return False

    def swap_files() -> None:
        for seg in new:
            cleaned = seg.path.with_name(segment_name(seg.base_offset, ".log.cleaned"))
            os.replace(cleaned, seg.path)
            seg.fd = os.open(seg.path, os.O_RDWR)
            offsets, times = seg.index_files(cfg.index_interval_bytes)
            seg.path.with_name(segment_name(seg.base_offset, ".index")).write_bytes(offsets)
            seg.path.with_name(segment_name(seg.base_offset, ".timeindex")).write_bytes(times)
            if markers.dropped_aborts:
                _drop_index_entries(plog.directory, seg.base_offset, markers.dropped_aborts)
        dir_fd = os.open(plog.directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    await writer.call(swap_files)
    plog.replace_segments(sealed, new)
    plog.cleaned_upto = max(plog.cleaned_upto, sealed[-1].next_offset)
    plog.marker_delete_horizon = markers.next_horizon
    if markers.dropped_aborts:
        plog.producers.aborted = [a for a in plog.producers.aborted
                                  if a.last_offset not in markers.dropped_aborts]
    before = sum(s.size for s in sealed)
    after = sum(s.size for s in new)
    log.info("%s-%d: compacted %d segment(s) from %d to %d bytes", plog.topic, plog.partition,
             len(sealed), before, after)
    return True


class _MarkerCleaning:
    """Which transaction markers one cleaning pass may drop (Kafka's CleanedTransactionMetadata
    with KIP-534's delete horizon). A marker whose transaction left no data in the log is
    eligible: a COMMIT once no batch of its producer was traversed since the previous marker,
    an ABORT once its aborted batches were removed by an earlier pass. An eligible marker first
    gets a delete horizon (now + ``delete.retention.ms``, stored in the batch); a pass after
    that horizon drops it, and an ABORT's entry leaves the aborted-transaction index with it."""

    def __init__(self, now_ms: int, retention_ms: int) -> None:
        self.now_ms = now_ms
        self.retention_ms = retention_ms
        self.committed_data: set[int] = set()  # producers with data traversed since a marker
        self.aborted_data: set[int] = set()  # producers whose aborted data this pass removed
        self.dropped_aborts: set[int] = set()  # offsets of ABORT markers dropped
        self.next_horizon: int | None = None  # earliest horizon still ahead

    def on_data(self, header: BatchHeader, aborted: bool) -> None:
        if header.is_transactional:
            (self.aborted_data if aborted else self.committed_data).add(header.producer_id)

    def on_marker(self, header: BatchHeader, raw: bytes) -> bytes | None:
        """The marker's bytes to keep (with a horizon once eligible), or None to drop it."""
        pid = header.producer_id
        kind = control_type(raw)
        if kind == COMMIT:
            eligible = pid not in self.committed_data
        elif kind == ABORT:
            eligible = pid not in self.aborted_data
        else:
            eligible = False
        self.committed_data.discard(pid)
        self.aborted_data.discard(pid)
        if not eligible:
            return raw
        horizon = header.delete_horizon_ms
        if horizon is not None and horizon <= self.now_ms:
            if kind == ABORT:
                self.dropped_aborts.add(header.last_offset)
            return None
        if horizon is None:
            horizon = self.now_ms + self.retention_ms
            raw = build_batch(
                decode_records(raw), base_offset=header.base_offset,
                producer_id=pid, producer_epoch=header.producer_epoch,
                transactional=True, control=True, timestamp_type=header.timestamp_type,
                partition_leader_epoch=header.partition_leader_epoch,
                delete_horizon_ms=horizon)
        if self.next_horizon is None or horizon < self.next_horizon:
            self.next_horizon = horizon
        return raw


def _drop_index_entries(directory: Path, base_offset: int, marker_offsets: set[int]) -> None:
    """Writer thread: remove the aborted transactions of dropped ABORT markers from a
    segment's .txnindex."""
    path = directory / segment_name(base_offset, txn_index.SUFFIX)
    if not path.exists():
        return
    kept = [encode_entry(*e) for e in txn_index.read(path)
            if e[2] not in marker_offsets]
    txn_index.rewrite(directory, base_offset, kept)


def _clean(plog: PartitionLog, sealed: list[Segment], now_ms: int
           ) -> tuple[list[Segment], _MarkerCleaning]:
    cfg = plog.config
    latest: dict[bytes, int] = {}
    upper = sealed[-1].next_offset
    aborted = _aborted_ranges(plog)
    for header, data in plog.iter_batches(0):
        if header.base_offset >= upper:
            break
        if header.is_control or (aborted and _is_aborted(aborted, header)):
            continue
        for rec in decode_records(data):
            if rec.key is not None:
                latest[rec.key] = rec.offset
    horizon = now_ms - cfg.delete_retention_ms
    markers = _MarkerCleaning(now_ms, cfg.delete_retention_ms)
    out: list[Segment] = []
    for seg in sealed:
        seg_fd = seg.readable_fd()
        new = Segment(seg.path.parent, seg.base_offset, seg.created_ms)
        new.sealed = True
        cleaned = seg.path.with_name(segment_name(seg.base_offset, ".log.cleaned"))
        fd = os.open(cleaned, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            pos = 0
            data = os.pread(seg_fd, seg.size, 0)
            for header, view in iter_batches(data):
                raw = bytes(view)
                if header.is_control:
                    kept_marker = markers.on_marker(header, raw)
                    if kept_marker is None:
                        continue
                    kept_bytes = kept_marker
                    last, max_ts = header.last_offset, header.max_timestamp
                elif aborted and _is_aborted(aborted, header):
                    markers.on_data(header, aborted=True)
                    continue  # records of an aborted transaction: never read_committed
                else:
                    markers.on_data(header, aborted=False)
                    records = decode_records(raw)
                    keep = [r for r in records if r.key is None or (
                        latest.get(r.key) == r.offset
                        and not (r.value is None and r.timestamp < horizon))]
                    if not keep:
                        continue
                    if len(keep) == len(records):
                        kept_bytes = raw
                        last, max_ts = header.last_offset, header.max_timestamp
                    else:
                        kept_bytes = build_batch(
                            keep, base_offset=header.base_offset, compression=header.compression,
                            producer_id=header.producer_id, producer_epoch=header.producer_epoch,
                            base_sequence=header.base_sequence,
                            transactional=header.is_transactional,
                            timestamp_type=header.timestamp_type,
                            partition_leader_epoch=header.partition_leader_epoch)
                        last = keep[-1].offset
                        max_ts = max(r.timestamp for r in keep)
                os.write(fd, kept_bytes)
                new.add(last, pos, max_ts)
                pos += len(kept_bytes)
            new.size = pos
            os.fsync(fd)
        finally:
            os.close(fd)
        out.append(new)
    return out, markers


def _aborted_ranges(plog: PartitionLog) -> dict[int, list[tuple[int, int]]]:
    """(first offset, marker offset) of each aborted transaction, by producer id."""
    out: dict[int, list[tuple[int, int]]] = {}
    for txn in plog.producers.aborted:
        out.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    return out


def _is_aborted(aborted: dict[int, list[tuple[int, int]]], header: BatchHeader) -> bool:
    if not header.is_transactional:
        return False
    offset = header.base_offset
    return any(first <= offset < last for first, last in aborted.get(header.producer_id, ()))


def _discard(segments: list[Segment]) -> None:
    for seg in segments:
        Path(seg.path.with_name(segment_name(seg.base_offset, ".log.cleaned"))).unlink(missing_ok=True)
