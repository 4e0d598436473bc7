"""The read path of a partition log: fetch slices, replay regions, timestamp lookups.

``LogReads`` is a base class of ``storage.log.PartitionLog``: it only reads the log's state
(segments, high watermark, log start), which the append path and retention maintain.
"""

from __future__ import annotations

import asyncio
import os
from bisect import bisect_left, bisect_right
from collections.abc import Iterator
from dataclasses import dataclass

from kafkette.protocol.records import (
    HEADER_SIZE,
    BatchHeader,
    decode_records,
    iter_batches,
    parse_batch_header,
)

from .errors import KafkaStorageError, OffsetOutOfRangeError, describe_os_error
from .producer_state import ProducerStateTable
from .segment import Segment


@dataclass(frozen=True, slots=True)
class LogSlice:
    """Whole batches ``[position, position + size)`` of one segment file, ready to send."""

    fd: int
    position: int
    size: int
    first_offset: int

    def read(self) -> bytes:
        data = os.pread(self.fd, self.size, self.position)
        if len(data) != self.size:
            raise KafkaStorageError(f"short read: {len(data)} of {self.size} bytes")
        return data


class LogReads:
    """The reads of a partition log (``PartitionLog`` inherits them)."""

    topic: str
    partition: int
    producers: ProducerStateTable
    _segments: list[Segment]
    _bases: list[int]
    _hw: int
    _log_start: int

    def check_offset(self, offset: int) -> None:
        if offset < self._log_start or offset > self._hw:
            raise OffsetOutOfRangeError(
                f"offset {offset} is out of range [{self._log_start}, {self._hw}] for "
                f"{self.topic}-{self.partition}")

    @property
    def last_stable_offset(self) -> int:
        """The LSO: below it no transaction is open (the high watermark when none is)."""
        first = self.producers.first_unstable_offset()
        return self._hw if first is None or first > self._hw else first

    def read(self, offset: int, max_bytes: int, *, min_one: bool = True,
             upto: int | None = None) -> LogSlice | None:
        """Whole batches from the one holding ``offset``, up to ``max_bytes`` (at least one batch
        when ``min_one``) and only below the high watermark (or ``upto``, the LSO of a
        read_committed fetch); None when there is nothing yet."""
        self.check_offset(offset)
        hw = self._hw if upto is None else min(upto, self._hw)
        if offset >= hw:
            return None
        idx = max(bisect_right(self._bases, offset) - 1, 0)
        for seg in self._segments[idx:]:
            visible = bisect_left(seg.last_offsets, hw)
            i = seg.find(offset)
            if i >= visible:
                continue
            start = seg.positions[i]
            limit = start + max_bytes
            end_visible = seg.positions[visible] if visible < len(seg.positions) else seg.size
            if end_visible <= limit:
                end = end_visible
            else:
                k = bisect_right(seg.positions, limit, i + 1, visible)
                if k - 1 > i:
                    end = seg.positions[k - 1]
                elif min_one:
                    end = seg.batch_end(i)
                else:
                    return None
            fd = seg.fd
            if fd is None:
                fd = self._open_segment(seg)
            first = seg.last_offsets[i - 1] + 1 if i > 0 else seg.base_offset
            return LogSlice(fd, start, end - start, first)
        return None

    async def read_bytes(self, offset: int, max_bytes: int) -> bytes:
        """Like ``read`` but returns the bytes (read in a thread); b"" at the end of the log."""
        slice_ = self.read(offset, max_bytes)
        if slice_ is None:
            return b""
        return await asyncio.to_thread(slice_.read)

    def iter_batches(self, start_offset: int = 0) -> Iterator[tuple[BatchHeader, bytes]]:
        """Every visible batch whose last offset is >= ``start_offset``, for replay.

        Reads the files synchronously: iterate it in a thread (or before serving requests)."""
        hw = self._hw
        for seg in list(self._segments):
            visible = bisect_left(seg.last_offsets, hw)
            i = seg.find(start_offset)
            if i >= visible:
                continue
            pos = seg.positions[i]
            end = seg.positions[visible] if visible < len(seg.positions) else seg.size
            fd = self._open_segment(seg)
            while pos < end:
                chunk = os.pread(fd, min(4 << 20, end - pos), pos)
                if len(chunk) < HEADER_SIZE:
                    chunk = os.pread(fd, end - pos, pos)
                consumed = 0
                for h, view in iter_batches(chunk):
                    if h.last_offset >= start_offset:
                        yield h, bytes(view)
                    consumed += h.size
                if consumed == 0:  # one batch larger than the chunk
                    h = parse_batch_header(chunk)
                    data = os.pread(fd, h.size, pos)
                    if h.last_offset >= start_offset:
                        yield h, data
                    consumed = h.size
                pos += consumed

    def replay_regions(self, max_bytes: int = 1 << 20) -> Iterator[tuple[int, int, int]]:
        """Every visible batch from the log start as (fd, position, size) regions of whole
        batches (about ``max_bytes`` each, one batch at least), cut where the segment index
        says batches start, for ``read_region``: replay walks the batches itself, no header
        object or copy per batch. Cheap (no I/O): iterate it on the loop."""
        hw = self._hw
        for seg in list(self._segments):
            visible = bisect_left(seg.last_offsets, hw)
            if visible == 0:
                continue
            fd = self._open_segment(seg)
            positions = seg.positions
            end = positions[visible] if visible < len(positions) else seg.size
            i = 0
            while i < visible:
                pos = positions[i]
                i = bisect_right(positions, pos + max_bytes, i + 1, visible)
                yield fd, pos, (positions[i] if i < visible else end) - pos

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with timestamp >= ``timestamp``. Reads one
        batch synchronously (page cache); None when no record qualifies."""
        hw = self._hw
        for seg in self._segments:
            visible = bisect_left(seg.last_offsets, hw)
            for i in range(visible):
                if seg.max_timestamps[i] >= timestamp:
                    for rec in self._batch_records(seg, i):
                        if rec.timestamp >= timestamp:
                            return rec.offset, rec.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (first one on ties)."""
        hw = self._hw
        best: tuple[int, Segment, int] | None = None
        for seg in self._segments:
            visible = bisect_left(seg.last_offsets, hw)
            for i in range(visible):
                if best is None or seg.max_timestamps[i] > best[0]:
                    best = (seg.max_timestamps[i], seg, i)
        if best is None:
            return None
        ts, seg, i = best
        for rec in self._batch_records(seg, i):
            if rec.timestamp == ts:
                return rec.offset, ts
        return seg.last_offsets[i], ts

    def _batch_records(self, seg: Segment, i: int):
        data = os.pread(self._open_segment(seg), seg.batch_end(i) - seg.positions[i],
                        seg.positions[i])
        return decode_records(data)

    def _open_segment(self, seg: Segment) -> int:
        """The segment's descriptor, opened if needed; KafkaStorageError when it cannot be."""
        try:
            return seg.readable_fd()
        except OSError as exc:
            raise KafkaStorageError(f"{self.topic}-{self.partition}: cannot open segment "
                                    f"{seg.base_offset}: {describe_os_error(exc)}") from exc
