"""Truncation and deletion of a partition log: truncate (a failed write's rollback), the log
start moving (DeleteRecords, retention), compaction's segment swaps, and the deferred close of
replaced or deleted segment files (in-flight readers may still hold them).

``LogRetention`` is a base class of ``storage.log.PartitionLog``; the files are unlinked,
truncated and closed by the writer thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from bisect import bisect_right
from collections.abc import Callable
from functools import partial
from pathlib import Path

from . import txn_index
from .log_read import LogReads
from .segment import Segment, segment_name
from .writer import DiskWriter

log = logging.getLogger("kafkette.storage")

_CLOSE_DELAY_S = 30.0  # replaced/deleted segment files stay open this long for in-flight readers


class LogRetention(LogReads):
    """Truncation and deletion (``PartitionLog`` inherits them)."""

    directory: Path
    recovery_point: int
    _writer: DiskWriter
    _now_ms: Callable[[], int]
    _next: int
    _last_write: asyncio.Future | None
    _deferred_closes: dict[asyncio.TimerHandle, list[int]]

    async def truncate_to(self, offset: int) -> None:
        """Drop every batch at or after the one holding ``offset``."""
        if offset >= self._next:
            return
        if self._last_write is not None:
            await asyncio.gather(self._last_write, return_exceptions=True)
        now = self._now_ms()
        if offset <= self._segments[0].base_offset:
            dropped = self._segments
            seg = Segment(self.directory, max(offset, 0), now)
            self._segments = [seg]
            self._bases = [seg.base_offset]
            self._log_start = seg.base_offset
            new_next = seg.base_offset
            cut: tuple[Segment, int] | None = None
        else:
            idx = bisect_right(self._bases, offset) - 1
            seg = self._segments[idx]
            dropped = self._segments[idx + 1 :]
            del self._segments[idx + 1 :]
            del self._bases[idx + 1 :]
            i = seg.find(offset)
            new_next = seg.last_offsets[i - 1] + 1 if i > 0 else seg.base_offset
            if i < seg.batch_count:
                seg.truncate_index(i)
            cut = (seg, seg.size)
            seg.sealed = False
        self._next = self._hw = new_next
        self.recovery_point = min(self.recovery_point, new_next)
        self.producers.truncate(new_next)
        for seg_ in dropped:
            seg_.sealed = True

        def work() -> None:
            if cut is not None:
                os.ftruncate(cut[0].open_in_thread(), cut[1])
                os.fsync(cut[0].fd)  # type: ignore[arg-type]  # open_in_thread on the line above set fd
                for suffix in (".index", ".timeindex"):  # it is the active segment again
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(cut[0].path.with_name(segment_name(cut[0].base_offset, suffix)))
            for s in dropped:
                unlink_segment_files(s)

        await self._writer.call(work)
        self._close_later(dropped)

    def advance_log_start(self, offset: int) -> bool:
        """DeleteRecords: records below ``offset`` become unreadable and the segments wholly
        below it are deleted. True if the log start moved (the caller persists it)."""
        self.check_offset(offset)
        if offset <= self._log_start:
            return False
        self._log_start = offset
        doomed = []
        for i, seg in enumerate(self._segments[:-1]):
            if self._segments[i + 1].base_offset <= offset:
                doomed.append(seg)
            else:
                break
        self.delete_old_segments(doomed, f"log start offset advanced to {offset}")
        return True

    def restore_log_start(self, offset: int) -> None:
        """Apply a checkpointed log start offset at startup."""
        if self._log_start < offset <= self._hw:
            self._log_start = offset

    def delete_old_segments(self, segments: list[Segment], reason: str) -> None:
        """Remove leading sealed segments (retention); the log start moves past them."""
        if not segments:
            if reason.startswith("log start"):
                log.info("%s-%d: %s", self.topic, self.partition, reason)
            return
        for s in segments:
            self._segments.remove(s)
        self._bases = [s.base_offset for s in self._segments]
        self._log_start = max(self._log_start, self._segments[0].base_offset)
        self.producers.forget_before(self._log_start)
        log.info("%s-%d: deleted %d segment(s) (%s); log start offset is now %d",
                 self.topic, self.partition, len(segments), reason, self._log_start)
        self._writer.call_nowait(partial(_unlink_all, segments))
        self._close_later(segments)

    def replace_segments(self, old: list[Segment], new: list[Segment]) -> None:
        """Swap cleaned copies in (compaction); the caller renamed the files already."""
        index = self._segments.index(old[0])
        self._segments[index : index + len(old)] = new
        self._bases = [s.base_offset for s in self._segments]
        self._close_later(old)

    def _close_later(self, segments: list[Segment]) -> None:
        fds = [s.fd for s in segments if s.fd is not None]
        for s in segments:
            s.fd = None
        if not fds:
            return

        def close_later() -> None:
            self._deferred_closes.pop(handle, None)
            self._writer.call_nowait(lambda: close_all(fds))

        loop = asyncio.get_running_loop()
        handle = loop.call_later(_CLOSE_DELAY_S, close_later)
        self._deferred_closes[handle] = fds

    def _take_deferred_closes(self) -> list[int]:
        fds = [fd for fds in self._deferred_closes.values() for fd in fds]
        for handle in self._deferred_closes:
            handle.cancel()
        self._deferred_closes.clear()
        return fds


def close_all(fds: list[int]) -> None:
    for fd in fds:
        with contextlib.suppress(OSError):
            os.close(fd)


def _unlink_all(segments: list[Segment]) -> None:
    for seg in segments:
        unlink_segment_files(seg)


def unlink_segment_files(seg: Segment) -> None:
    for suffix in (".log", ".index", ".timeindex", txn_index.SUFFIX):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(seg.path.with_name(segment_name(seg.base_offset, suffix)))
