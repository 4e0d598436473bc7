"""One log segment: ``<base offset, 20 digits>.log`` holding v2 record batches back to back,
plus an in-memory index of every batch (last offset, file position, max timestamp).

The in-memory index is what lets a fetch at offset N seek without scanning; it is rebuilt from
batch headers when the segment is opened. Kafka-format ``.index``/``.timeindex`` files are
written when a segment is sealed so tools that read Kafka's layout find them.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
import threading
from array import array
from bisect import bisect_left
from collections.abc import Callable
from pathlib import Path

from kafkette.protocol.records import HEADER_SIZE, LOG_OVERHEAD, BatchHeader, verify_crc

_HEADER = struct.Struct(">qiibIhiqqqhii")
_SCAN_CHUNK = 4 << 20
# A scan that checks no CRC reads only headers: at the first batch, and after one at least this
# big, it reads this much (a page) instead of a whole chunk of record data it would not look at.
_PEEK = 4096


def segment_name(base_offset: int, suffix: str = ".log") -> str:
    return f"{base_offset:020d}{suffix}"


class Segment:
    __slots__ = ("base_offset", "directory", "fd", "size", "last_offsets", "positions",
                 "max_timestamps", "created_ms", "dirty", "sealed")

    def __init__(self, directory: Path, base_offset: int, created_ms: int) -> None:
        self.base_offset = base_offset
        self.directory = directory
        self.fd: int | None = None
        self.size = 0  # bytes assigned (written or queued for writing)
        self.last_offsets = array("q")
        self.positions = array("q")
        self.max_timestamps = array("q")
        self.created_ms = created_ms
        self.dirty = False  # written since the last fsync was queued
        self.sealed = False

    @property
    def path(self) -> Path:
        """The ``.log`` file (built when asked: a restart opens a segment per partition by the
        name it listed, and most never need the Path)."""
        return self.directory / segment_name(self.base_offset)

    # File handle --------------------------------------------------------------------------------
    def open_in_thread(self) -> int:
        """The file descriptor, opening (creating) the file on first use; writer thread only."""
        if self.fd is None:
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        return self.fd

    def readable_fd(self) -> int:
        """The file descriptor for reading: a restart leaves sealed segments closed and opens
        each on its first read (a partition of thousands of old segments costs no descriptors
        until they are read). Raises OSError (EMFILE when out of descriptors)."""
        fd = self.fd
        if fd is None:
            fd = self.fd = os.open(self.path, os.O_RDWR)
        return fd

    # Index ------------------------------------------------------------------------------------------
    def add(self, last_offset: int, position: int, max_timestamp: int) -> None:
        self.last_offsets.append(last_offset)
        self.positions.append(position)
        self.max_timestamps.append(max_timestamp)

    @property
    def batch_count(self) -> int:
        return len(self.last_offsets)

    @property
    def next_offset(self) -> int:
        return self.last_offsets[-1] + 1 if self.last_offsets else self.base_offset

    @property
    def max_timestamp(self) -> int:
        return max(self.max_timestamps) if self.max_timestamps else -1

    def find(self, offset: int) -> int:
        """Index of the first batch whose last offset is >= offset."""
        return bisect_left(self.last_offsets, offset)

    def batch_end(self, i: int) -> int:
        return self.positions[i + 1] if i + 1 < len(self.positions) else self.size

    def truncate_index(self, i: int) -> None:
        """Forget batches i.. (their bytes are cut by the caller)."""
        self.size = self.positions[i] if i < len(self.positions) else self.size
        del self.last_offsets[i:]
        del self.positions[i:]
        del self.max_timestamps[i:]

    def index_files(self, interval_bytes: int) -> tuple[bytes, bytes]:
        """Kafka's sparse offset index (relative offset i32, position i32) and time index
        (timestamp i64, relative offset i32): one entry per ``interval_bytes`` of log."""
        offsets = bytearray()
        times = bytearray()
        since = interval_bytes
        best_ts = -1
        for i in range(len(self.positions)):
            ts = self.max_timestamps[i]
            rel = self.last_offsets[i] - self.base_offset
            if since >= interval_bytes:
                offsets += struct.pack(">ii", rel, self.positions[i])
                since = 0
            if ts > best_ts:
                best_ts = ts
                times += struct.pack(">qi", ts, rel)
            since += self.batch_end(i) - self.positions[i]
        return bytes(offsets), bytes(times)


def scan_segment(fd: int, verify: bool, on_batch: Callable[[BatchHeader, int], None],
                 base_offset: int = 0) -> tuple[int, str | None]:
    """Walk the batches of an open segment file, calling ``on_batch(header, position)``.

    Returns (valid size, problem): ``problem`` describes why scanning stopped before the end of
    the file (torn write, bad length or magic, offsets below ``base_offset`` or going backwards,
    CRC mismatch). With ``verify`` every batch's CRC is checked.
    """
    file_size = os.fstat(fd).st_size
    next_offset = base_offset
    pos = 0
    chunk = b""
    chunk_start = 0
    size = _PEEK  # the first read is a peek too
    while pos < file_size:
        rel = pos - chunk_start
        if rel < 0 or rel + HEADER_SIZE > len(chunk):
            chunk = os.pread(fd, _PEEK if not verify and size >= _PEEK else _SCAN_CHUNK, pos)
            chunk_start = pos
            rel = 0
        if len(chunk) - rel < HEADER_SIZE:
            return pos, f"torn batch header at position {pos} ({file_size - pos} trailing bytes)"
        header = BatchHeader(*_HEADER.unpack_from(chunk, rel))
        size = header.batch_length + LOG_OVERHEAD
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or header.magic != 2:
            return pos, f"invalid batch header at position {pos} (magic {header.magic}, length {header.batch_length})"
        if pos + size > file_size:
            return pos, f"torn batch at position {pos}: {size} bytes declared, {file_size - pos} present"
        if header.base_offset < next_offset or header.last_offset_delta < 0:
            return pos, (f"batch at position {pos} has offsets {header.base_offset}.."
                         f"{header.last_offset}, expected {next_offset} or later")
        if verify:
            data = chunk[rel:rel + size] if rel + size <= len(chunk) else os.pread(fd, size, pos)
            if not verify_crc(data):
                return pos, f"CRC mismatch in batch at offset {header.base_offset} (position {pos})"
        on_batch(header, pos)
        next_offset = header.last_offset + 1
        pos += size
    return pos, None


def read_region(fd: int, position: int, size: int, *, nowait: bool = False) -> bytes | None:
    """``size`` bytes at ``position``. With ``nowait`` only what the page cache holds is read
    (RWF_NOWAIT: safe on the event loop) and None is returned unless that is all of it; else
    it may block on the disk (call it in a thread)."""
    if nowait:
        if _RWF_NOWAIT is None:
            return None
        try:
            view = memoryview(_scratch(size))[:size]
        except OSError:  # no memory for the buffer: the caller reads in a thread
            return None
        try:
            n = os.preadv(fd, [view], position, _RWF_NOWAIT)
            return bytes(view) if n == size else None
        except OSError:  # EAGAIN (not cached), EOPNOTSUPP (file system)...
            return None
        finally:
            view.release()
    data = os.pread(fd, size, position)
    while len(data) < size:  # a short read
        more = os.pread(fd, size - len(data), position + len(data))
        if not more:
            raise OSError(errno.EIO, f"fd {fd}: segment shorter than its index")
        data += more
    return data


_RWF_NOWAIT: int | None = getattr(os, "RWF_NOWAIT", None)
_local = threading.local()


def _scratch(size: int) -> mmap.mmap:
    """This thread's page-aligned buffer of at least ``size`` bytes for ``read_region``'s
    page-cache reads, kept for the next one (4 MiB of address space; the pages a 1 MiB
    region touches stay resident). Reading into it, then copying out, costs less CPU than
    reading into a new bytearray each time (the kernel copies into aligned pages faster;
    a restart replaying 73 MB of ``__consumer_offsets`` on the event loop: ~35-40 vs
    ~45-50 ms in read_region)."""
    buf = getattr(_local, "buf", None)
    if buf is None or len(buf) < size:
        buf = _local.buf = mmap.mmap(-1, max(size, 4 << 20))
    return buf
