"""Opening a partition's segments at startup, and the log directory's checkpoint files.

Kafka (LogLoader.recoverLog, LogSegment.recover) trusts what it knows was flushed: after a clean
shutdown (the ``.kafka_cleanshutdown`` marker) nothing is validated, and after an unclean one only
the segments from the ``recovery-point-offset-checkpoint`` on are: each batch's CRC is checked, the
first damaged segment is cut before its first bad batch and every later (also unflushed) segment
is deleted. kafkette does the same, except that it reads every batch header of every segment to
build its in-memory index (Kafka reads its index files). A header that does not parse (bad
length, bad magic, offsets going backwards, a torn batch) in a trusted segment cuts that
segment's tail only: the segments after it are kept, and the offsets in between are a gap that
fetches skip, as after compaction. Damage the checksum alone reveals stays undetected in trusted
segments, as in Kafka (consumers see a CRC error for that batch), the active segment's after a
clean shutdown included; in an unflushed active segment a bad batch cuts that segment's tail.
A trusted segment's record data is not read at all, only its batch headers.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Protocol

from kafkette.protocol.control_records import control_type
from kafkette.protocol.records import BatchHeader

from . import txn_index
from .producer_state import ProducerStateTable
from .segment import Segment, scan_segment, segment_name
from .topic_config import LogConfig


class PartitionLog(Protocol):
    """What recovery reads of the log it loads (storage.log.PartitionLog; no import back)."""

    topic: str
    partition: int
    directory: Path
    config: LogConfig
    producers: ProducerStateTable

log = logging.getLogger("kafkette.storage")

CLEAN_SHUTDOWN = ".kafka_cleanshutdown"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"


# Checkpoint files (Kafka's OffsetCheckpointFile: version, count, "topic partition offset") -------

def read_offset_checkpoint(path: Path) -> dict[tuple[str, int], int]:
    if not path.exists():
        return {}
    out: dict[tuple[str, int], int] = {}
    for line in path.read_text().splitlines()[2:]:
        parts = line.split()
        if len(parts) == 3:
            out[(parts[0], int(parts[1]))] = int(parts[2])
    return out


def offset_checkpoint_text(entries: Iterable[tuple[str, int, int]]) -> str:
    lines = [f"{topic} {partition} {offset}\n" for topic, partition, offset in entries]
    return f"0\n{len(lines)}\n" + "".join(lines)


def write_durably(path: Path, text: str, *, sync_directory: bool = False) -> None:
    """Replace ``path`` atomically with ``text`` (write a temporary file, fsync, rename)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        data = memoryview(text.encode())
        while data:
            data = data[os.write(fd, data):]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if sync_directory:
        sync_dir(path.parent)


def sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# Segment recovery -------------------------------------------------------------------------------

def load_segments(plog: PartitionLog, *, clean_shutdown: bool, recovery_point: int,
                  now: int, names: list[str] | None = None) -> list[Segment]:
    """Open and index every segment of ``plog`` (in a thread, before the log is used);
    ``names``: the directory's file names if the caller listed it already."""
    directory = plog.directory
    name = f"{plog.topic}-{plog.partition}"
    if names is None:
        names = os.listdir(directory)
    present = set(names)
    prefix = os.path.join(directory, "")  # str paths: no pathlib work per partition
    files: list[tuple[int, str]] = []
    for file_name in sorted(names):
        if file_name.endswith(".log") and not file_name.startswith("."):
            with contextlib.suppress(ValueError):
                files.append((int(file_name[:-4]), file_name))
    segments: list[Segment] = []
    for i, (base, file_name) in enumerate(files):
        next_base = files[i + 1][0] if i + 1 < len(files) else None
        unflushed = not clean_shutdown and (next_base is None or next_base > recovery_point)
        seg = Segment(directory, base, now)
        seg.fd = os.open(prefix + file_name, os.O_RDWR)
        segments.append(seg)
        aborted: list[bytes] = []  # .txnindex entries of the ABORT markers in this segment
        valid, problem = scan_segment(seg.fd, verify=unflushed,
                                      on_batch=_indexer(plog, seg, aborted), base_offset=base)
        if aborted or segment_name(base, txn_index.SUFFIX) in present:
            txn_index.rewrite(directory, base, aborted)
        seg.size = valid
        seg.sealed = next_base is not None
        if problem is None:
            if seg.sealed:  # opened again on its first read (Segment.readable_fd)
                os.close(seg.fd)
                seg.fd = None
            continue
        os.ftruncate(seg.fd, valid)
        os.fsync(seg.fd)
        later = files[i + 1:]
        if unflushed:
            log.warning("%s: recovering unflushed segment %s: %s; truncating it to %d bytes and "
                        "deleting the %d later unflushed segment(s): offsets from %d on are cut",
                        name, file_name, problem, valid, len(later), seg.next_offset)
            for later_base, _ in later:
                _unlink_segment(directory, later_base)
            if seg.sealed:  # the active segment again: Kafka keeps no index files for that one
                for suffix in (".index", ".timeindex"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(directory / segment_name(base, suffix))
            seg.sealed = False
            break
        if not seg.sealed:
            log.warning("%s: damaged active segment %s (%s): truncating it to %d bytes: offsets "
                        "from %d on are cut", name, file_name, problem, valid, seg.next_offset)
            continue
        assert next_base is not None  # a sealed segment has a successor
        log.warning("%s: damaged segment %s (%s): truncating it to %d bytes; offsets %d..%d are "
                    "lost, the %d later segment(s) are kept", name, file_name, problem, valid,
                    seg.next_offset, next_base - 1, len(later))
        offsets, times = seg.index_files(plog.config.index_interval_bytes)
        for suffix, data in ((".index", offsets), (".timeindex", times)):
            (directory / segment_name(base, suffix)).write_bytes(data)
    return segments


def _indexer(plog: PartitionLog, seg: Segment, entries: list[bytes]
             ) -> Callable[[BatchHeader, int], None]:
    def on_batch(header: BatchHeader, position: int) -> None:
        seg.add(header.last_offset, position, header.max_timestamp)
        plog.producers.update(header, header.base_offset, header.last_offset)
        if header.is_transactional:
            kind = -1
            if header.is_control:
                assert seg.fd is not None
                kind = control_type(os.pread(seg.fd, min(header.size, 128), position))
            aborted = plog.producers.on_batch(header, header.base_offset, header.last_offset,
                                              kind)
            if aborted is not None:
                first = plog.producers.first_unstable_offset()
                entries.append(txn_index.entry(
                    aborted, header.last_offset + 1 if first is None else first))

    return on_batch


def _unlink_segment(directory: Path, base: int) -> None:
    for suffix in (".log", ".index", ".timeindex", txn_index.SUFFIX):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(directory / segment_name(base, suffix))
