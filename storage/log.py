"""A partition log: ordered segments of v2 record batches in one directory.

Offsets are assigned on the event loop the moment ``append`` is called (so appends are ordered
by call), the bytes go to the writer thread, and the log end offset readers see (the high
watermark on a single node) advances only once the bytes are in the file and, when the flush
policy asks for it, fsynced. A small append with nothing queued ahead of it and no fsync due is
written straight into the page cache from the loop instead: cheaper than the thread round trip.
An append that is due an fsync goes to the thread whole, write and fsync (group commit,
storage/writer.py): written from the loop, it waited on the writeback and the GIL behind the
fsyncs the thread had in flight (measured: ~100 µs wall per append vs ~16 without fsyncs).

The read path is ``LogReads`` (storage/log_read.py), truncation and deletion ``LogRetention``
(storage/log_retention.py), both base classes of ``PartitionLog``; the errors are in
storage/errors.py.
"""

from __future__ import annotations

import asyncio
import logging
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from kafkette.protocol.control_records import control_type
from kafkette.protocol.records import (
    BatchHeader,
    CorruptRecordError,
    iter_batches,
    set_log_append_time,
)

from . import txn_index
from .errors import KafkaStorageError, RecordTooLargeError, describe_os_error
from .log_retention import LogRetention, close_all
from .producer_state import ProducerStateTable
from .rate_limited_log import RateLimitedLog
from .recovery import load_segments
from .segment import Segment, segment_name
from .topic_config import LogConfig
from .writer import DiskWriter, pwritev_all

log = logging.getLogger("kafkette.storage")
# A failing disk fails every write of every partition: one line per kind of failure a while.
failures = RateLimitedLog(log)

_PREFIX = struct.Struct(">qii")  # base offset, batch length, partition leader epoch
LEADER_EPOCH = 0
_INLINE_MAX = 64 * 1024  # appends up to this size are written on the loop (see append_nowait)


@dataclass(frozen=True, slots=True)
class AppendInfo:
    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int = 0
    duplicate: bool = False


class PartitionLog(LogRetention):
    def __init__(self, topic: str, partition: int, directory: Path, config: LogConfig,
                 writer: DiskWriter, now_ms: Callable[[], int] | None = None) -> None:
        self.topic = topic
        self.partition = partition
        self.directory = directory
        self.config = config
        self._writer = writer
        self._now_ms = now_ms or (lambda: int(time.time() * 1000))
        self._segments: list[Segment] = []
        self._bases: list[int] = []
        self._hw = 0  # visible log end offset
        self._next = 0  # next offset to assign
        self._log_start = 0
        self.recovery_point = 0  # every offset below it is fsynced (Kafka's recovery point)
        self._waiters: set[asyncio.Future] = set()
        self.producers = ProducerStateTable()
        self._unflushed = 0
        self._flush_timer: asyncio.TimerHandle | None = None
        self._last_write: asyncio.Future | None = None
        self._inflight = 0  # jobs (writes, fsyncs) queued to the writer thread and not yet done
        self._failed: BaseException | None = None  # a write failed: appends wait for the rollback
        self._rollback: asyncio.Future | None = None
        self.closed = False
        self.cleaned_upto = -1  # compaction bookkeeping (storage.cleaner)
        self.marker_delete_horizon: int | None = None  # when a kept marker may go (cleaner)
        self._deferred_closes: dict[asyncio.TimerHandle, list[int]] = {}

    def __repr__(self) -> str:
        return f"PartitionLog({self.topic}-{self.partition}, {self._log_start}..{self._hw})"

    # Offsets -----------------------------------------------------------------------------------
    @property
    def log_start_offset(self) -> int:
        return self._log_start

    @property
    def log_end_offset(self) -> int:
        return self._hw

    high_watermark = log_end_offset

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segments(self) -> list[Segment]:
        return list(self._segments)

    def now_ms(self) -> int:
        """The log's clock (wall-clock ms unless a test injected one)."""
        return self._now_ms()

    # Recovery (runs in a thread before the log is used) ------------------------------------------
    def recover(self, *, clean_shutdown: bool = False, recovery_point: int = 0) -> None:
        """Open the segments (storage.recovery says what is validated and cut)."""
        try:
            names = os.listdir(self.directory)  # once: a restart opens every partition
        except FileNotFoundError:  # (created only then: no mkdir per partition on a restart)
            self.directory.mkdir(parents=True, exist_ok=True)
            names = os.listdir(self.directory)
        for name in names:
            if name.endswith(".cleaned"):
                os.unlink(self.directory / name)
            elif name.endswith(".log.swap"):
                os.rename(self.directory / name, self.directory / name[:-5])
        if any(name.endswith((".cleaned", ".log.swap")) for name in names):
            names = os.listdir(self.directory)
        now = self._now_ms()
        self._segments = load_segments(self, clean_shutdown=clean_shutdown,
                                       recovery_point=recovery_point, now=now, names=names)
        if not self._segments:
            seg = Segment(self.directory, 0, now)
            seg.open_in_thread()  # an empty partition has an empty first segment, as in Kafka
            self._segments.append(seg)
        active = self._segments[-1]
        if active.size == 0 and active.fd is not None:
            # Opened again by its first append or read: a topic of thousands of partitions
            # nobody wrote to holds no file descriptors.
            os.close(active.fd)
            active.fd = None
        self._bases = [s.base_offset for s in self._segments]
        self._log_start = self._segments[0].base_offset
        self._next = self._hw = self._segments[-1].next_offset
        self.recovery_point = self._next if clean_shutdown else min(recovery_point, self._next)

    def close_files(self) -> None:
        """Writer thread: fsync and close every segment file."""
        for seg in self._segments:
            if seg.fd is not None:
                try:
                    os.fsync(seg.fd)
                finally:
                    os.close(seg.fd)
                    seg.fd = None

    # Append ---------------------------------------------------------------------------------------
    async def append(self, data: bytes | bytearray | memoryview,
                     headers: list[BatchHeader] | None = None) -> AppendInfo:
        """Append one or more complete v2 batches; resolves once durable under the flush policy."""
        return await self.append_future(data, headers)

    def append_future(self, data: bytes | bytearray | memoryview,
                      headers: list[BatchHeader] | None = None) -> asyncio.Future:
        """``append`` as a future of its AppendInfo (for callers that chain callbacks)."""
        out = asyncio.get_running_loop().create_future()
        try:
            info, write = self.append_nowait(data, headers)
        except Exception as exc:  # noqa: BLE001 - the caller gets it through the future
            out.set_exception(exc)
            return out
        if write is None:
            self._settle(out, info, None)
        else:
            write.add_done_callback(lambda w: self._settle(out, info, w))
        return out

    def append_durable(self, data: bytes | bytearray | memoryview,
                       headers: list[BatchHeader] | None = None) -> asyncio.Future | None:
        """``append_future`` for callers that need only durability: None when the write is
        done already (an inline page-cache write the flush policy allows), so they can
        complete at once instead of a loop round trip later; errors are raised."""
        info, write = self.append_nowait(data, headers)
        if write is None:
            return None
        out = asyncio.get_running_loop().create_future()
        write.add_done_callback(lambda w: self._settle(out, info, w))
        return out

    def _settle(self, out: asyncio.Future, info: AppendInfo, write: asyncio.Future | None) -> None:
        if out.done():
            return
        if write is not None and write.cancelled():
            out.set_exception(KafkaStorageError(
                f"log {self.topic}-{self.partition}: write cancelled"))
        elif write is not None and (failure := write.exception()) is not None:
            out.set_exception(failure)
        elif self._failed is not None:
            out.set_exception(KafkaStorageError(
                f"log {self.topic}-{self.partition} failed: {self._failure()}"))
        else:
            out.set_result(info)

    def append_nowait(self, data: bytes | bytearray | memoryview,
                      headers: list[BatchHeader] | None = None) -> tuple[AppendInfo, asyncio.Future | None]:
        """Assign offsets and queue the write; the future resolves when it is durable."""
        if self.closed:
            raise KafkaStorageError(f"log {self.topic}-{self.partition} is closed")
        if self._failed is not None:
            self._roll_back_when_idle()  # retries a rollback that failed
            raise KafkaStorageError(
                f"log {self.topic}-{self.partition} failed: {self._failure()}")
        view = memoryview(data)
        if headers is None:
            headers = []
            consumed = 0
            for h, _ in iter_batches(view):
                headers.append(h)
                consumed += h.size
            if not headers or consumed != len(view):
                raise CorruptRecordError("append needs complete record batches")
        cfg = self.config
        now = self._now_ms()
        # Idempotence checks before anything is assigned.
        if len(headers) == 1 and headers[0].producer_id >= 0 and headers[0].base_sequence >= 0:
            dup = self.producers.check(headers[0])
            if dup is not None:
                info = AppendInfo(dup.base_offset, dup.last_offset, -1, self._log_start, True)
                return info, self._last_write if self._hw <= dup.last_offset else None
        for h in headers:
            if h.size > cfg.max_message_bytes:
                raise RecordTooLargeError(
                    f"batch of {h.size} bytes exceeds max.message.bytes={cfg.max_message_bytes}")
            # Record timestamps were checked before (protocol/timestamp_validation.py).
        if cfg.log_append_time:
            buf = bytearray(view)
            pos = 0
            for h in headers:
                set_log_append_time(buf, pos, now)
                h.max_timestamp = now
                h.attributes |= 0x08
                pos += h.size
            view = memoryview(buf)

        seg = self._segments[-1]
        first_offset = self._next
        pending: list[tuple[Segment, int, list[Any]]] = []
        buffers: list[Any] = []
        write_pos = seg.size
        pos = 0
        records = 0
        for h in headers:
            size = h.size
            if seg.size > 0 and (seg.size + size > cfg.segment_bytes
                                 or now - seg.created_ms >= cfg.segment_ms):
                if buffers:
                    pending.append((seg, write_pos, buffers))
                    buffers = []
                seg = self._roll(now)
                write_pos = 0
            base = self._next
            last = base + h.last_offset_delta
            buffers.append(_PREFIX.pack(base, h.batch_length, LEADER_EPOCH))
            buffers.append(view[pos + 16 : pos + size])
            seg.add(last, seg.size, h.max_timestamp)
            seg.size += size
            self.producers.update(h, base, last)
            if h.attributes & 0x10:  # transactional
                aborted = self.producers.on_batch(h, base, last, control_type(view[pos:pos + size])
                                                  if h.attributes & 0x20 else -1)
                if aborted is not None:
                    first = self.producers.first_unstable_offset()
                    data = txn_index.entry(aborted, last + 1 if first is None else first)
                    path = seg.path.with_name(segment_name(seg.base_offset, txn_index.SUFFIX))
                    self._writer.call_nowait(partial(txn_index.append, path, data))
            self._next = last + 1
            records += h.records_count
            pos += size
        if buffers:
            pending.append((seg, write_pos, buffers))

        self._unflushed += records
        fsync = self._unflushed >= cfg.flush_messages
        if fsync:
            self._unflushed = 0
        elif cfg.flush_ms < 2**62 and self._flush_timer is None:
            loop = asyncio.get_running_loop()
            self._flush_timer = loop.call_later(cfg.flush_ms / 1000, self._timed_flush)
        next_after = self._next
        log_append_time = now if cfg.log_append_time else -1
        info = AppendInfo(first_offset, next_after - 1, log_append_time, self._log_start)
        if (not fsync and self._inflight == 0 and len(pending) == 1 and pos <= _INLINE_MAX
                and pending[0][0].fd is not None):
            # A small write with nothing in flight: a pwritev into the page cache costs less
            # than the round trip to the writer thread, and keeps order trivially (an unsynced
            # earlier append must not become visible through it).
            s, wpos, bufs = pending[0]
            try:
                pwritev_all(s.fd, bufs, wpos)  # type: ignore[arg-type]  # a segment with pending writes is open (fd set)
            except OSError as exc:
                self._on_error(exc)
                raise KafkaStorageError(f"log {self.topic}-{self.partition}: {exc}") from exc
            s.dirty = True
            self._last_write = None
            self._hw = next_after
            self._wake()
            return info, None
        fut: asyncio.Future | None = None
        for i, (s, wpos, bufs) in enumerate(pending):
            is_last = i == len(pending) - 1
            s.dirty = not fsync
            self._inflight += 1
            fut = self._writer.write(s, wpos, bufs, fsync=fsync,
                                     then=self._on_written(next_after, fsync) if is_last
                                     else self._on_job_error)
        self._last_write = fut
        return info, fut

    def _on_job_error(self, result: Any) -> None:
        self._inflight -= 1
        self._on_error(result)

    def _on_written(self, next_offset: int, synced: bool) -> Callable[[Any], None]:
        def done(result: Any) -> None:
            self._inflight -= 1
            if isinstance(result, BaseException):
                self._on_error(result)
                return
            if self._failed is None and next_offset > self._hw:
                self._hw = next_offset
                if synced:
                    self._synced_upto(next_offset)
                self._wake()
            else:
                self._roll_back_when_idle()

        return done

    def _failure(self) -> str:
        failed = self._failed
        return describe_os_error(failed) if isinstance(failed, OSError) else str(failed)

    def _on_error(self, result: Any) -> None:
        if isinstance(result, BaseException):
            if self._failed is None:
                self._failed = result
                reason = describe_os_error(result) if isinstance(result, OSError) else result
                failures.error(("write", getattr(result, "errno", None)),
                               "%s-%d: log write failed (%s); appends get KAFKA_STORAGE_ERROR "
                               "until the unacknowledged tail from offset %d is dropped",
                               self.topic, self.partition, reason, self._hw)
            self._roll_back_when_idle()

    # Recovery from a failed write (disk full, I/O error) ----------------------------------------
    # Nothing at or above the high watermark was acknowledged; once the writes queued behind the
    # failed one have finished, the log is cut back to the high watermark (file and index) and
    # appends resume. If the disk is still full the next append fails the same way.
    def _roll_back_when_idle(self) -> None:
        if (self._failed is not None and self._inflight == 0 and self._rollback is None
                and not self.closed):
            self._rollback = asyncio.ensure_future(self._roll_back())

    async def _roll_back(self) -> None:
        try:
            await self.truncate_to(self._hw)
        except Exception as exc:  # noqa: BLE001 - stays failed; the next append retries
            failures.error(("rollback-failed", getattr(exc, "errno", None)),
                           "%s-%d: dropping the unacknowledged tail failed: %s", self.topic,
                           self.partition,
                           describe_os_error(exc) if isinstance(exc, OSError) else exc)
        else:
            self._failed = None
            self._last_write = None
            failures.warning("rolled-back", "%s-%d: dropped the unacknowledged tail after a "
                             "failed write; appending again at offset %d", self.topic,
                             self.partition, self._next)
        finally:
            self._rollback = None

    def _roll(self, now: int) -> Segment:
        old = self._segments[-1]
        old.sealed = True
        seg = Segment(self.directory, self._next, now)
        self._segments.append(seg)
        self._bases.append(seg.base_offset)
        interval = self.config.index_interval_bytes
        if old.dirty:
            old.dirty = False
            self._writer.fsync(old, then=partial(self._synced_unless_failed, seg.base_offset))

        def write_indexes(old: Segment = old) -> None:
            offsets, times = old.index_files(interval)
            for suffix, data in ((".index", offsets), (".timeindex", times)):
                (self.directory / segment_name(old.base_offset, suffix)).write_bytes(data)

        self._writer.call_nowait(write_indexes)
        return seg

    def _timed_flush(self) -> None:
        self._flush_timer = None
        if not self.closed:
            asyncio.ensure_future(self.flush()).add_done_callback(self._flush_done)

    def _flush_done(self, task: asyncio.Future) -> None:
        if not task.cancelled() and task.exception() is not None:
            log.error("%s-%d: timed flush failed: %s", self.topic, self.partition, task.exception())

    async def flush(self) -> None:
        """fsync everything appended so far."""
        self._unflushed = 0
        upto = self._next
        futs = []
        for seg in self._segments:
            if seg.dirty or seg is self._segments[-1]:
                seg.dirty = False
                futs.append(self._writer.fsync(seg))
        if futs:
            await asyncio.gather(*futs)
        self._synced_upto(upto)

    def _synced_unless_failed(self, offset: int, result: Any) -> None:
        """A sealed segment's fsync ended: ``result`` is its exception or None."""
        if not isinstance(result, BaseException):
            self._synced_upto(offset)

    def _synced_upto(self, offset: int) -> None:
        """Everything below ``offset`` that was acknowledged is on disk."""
        self.recovery_point = max(self.recovery_point, min(offset, self._hw))

    # Waiting for data ------------------------------------------------------------------------------
    def add_waiter(self, fut: asyncio.Future) -> None:
        self._waiters.add(fut)

    def remove_waiter(self, fut: asyncio.Future) -> None:
        self._waiters.discard(fut)

    def _wake(self) -> None:
        if self._waiters:
            waiters, self._waiters = self._waiters, set()
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    async def close(self) -> bool:
        """Close every file (fsynced first); True when the log ends cleanly (no failed write)."""
        self.closed = True
        if self._flush_timer is not None:
            self._flush_timer.cancel()
        self._wake()
        deferred = self._take_deferred_closes()

        def work() -> None:
            close_all(deferred)
            self.close_files()

        await self._writer.call(work)
        return self._failed is None

    async def delete(self) -> None:
        """Close the log and remove its directory."""
        import shutil

        self.closed = True
        if self._flush_timer is not None:
            self._flush_timer.cancel()
        self._wake()
        segments = self._segments
        deferred = self._take_deferred_closes()

        def work() -> None:
            close_all(deferred)
            for s in segments:
                if s.fd is not None:
                    os.close(s.fd)
                    s.fd = None
            shutil.rmtree(self.directory, ignore_errors=True)

        await self._writer.call(work)

