"""Find kafkette's segment files and cut them into input splits at batch boundaries.

A partition directory is ``<log.dir>/<topic>-<partition>/`` holding ``<20-digit base offset>.log``
segments (RecordBatch v2 back to back, Kafka's on-disk format). No Spark here: the driver plans
splits with these functions and the executors read them.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from kafkette.protocol.records import HEADER_SIZE, LOG_OVERHEAD

_SEGMENT = re.compile(r"^(\d{20})\.log$")
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
_LENGTH = struct.Struct(">qi")

DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Split:
    """Bytes ``[start, end)`` of one segment file; both ends lie on batch boundaries."""

    path: str
    topic: str
    partition: int
    base_offset: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def partition_dirs(log_dirs: Iterable[str], topics: Iterable[str] | None = None
                   ) -> Iterator[tuple[str, str, int]]:
    """Yield (path, topic, partition) for each partition directory, sorted."""
    wanted = set(topics) if topics is not None else None
    found: list[tuple[str, int, str]] = []
    for log_dir in log_dirs:
        if not os.path.isdir(log_dir):
            raise FileNotFoundError(f"log dir {log_dir!r} does not exist")
        for name in os.listdir(log_dir):
            path = os.path.join(log_dir, name)
            match = _PARTITION_DIR.match(name)
            # Kafka renames deleted partitions to "<topic>-<p>.<uuid>-delete": skip those.
            if not match or not os.path.isdir(path):
                continue
            topic, partition = match.group(1), int(match.group(2))
            if wanted is None or topic in wanted:
                found.append((topic, partition, path))
    for topic, partition, path in sorted(found):
        yield path, topic, partition


def segments(partition_dir: str) -> list[tuple[int, str]]:
    """(base offset, path) of each ``.log`` segment in a partition directory, in offset order."""
    out = []
    for name in os.listdir(partition_dir):
        match = _SEGMENT.match(name)
        if match:
            out.append((int(match.group(1)), os.path.join(partition_dir, name)))
    return sorted(out)


def batch_boundaries(path: str, size: int, step: int) -> list[int]:
    """Batch start positions roughly every ``step`` bytes, plus the end of the last whole batch.

    Reads only the 12-byte (baseOffset, batchLength) prefix of each batch. A torn tail (a batch
    still being written) is left out, so a split never ends inside a batch.
    """
    cuts = [0]
    pos = 0
    with open(path, "rb", buffering=0) as f:
        fd = f.fileno()
        while size - pos >= HEADER_SIZE:
            head = os.pread(fd, LOG_OVERHEAD, pos)
            if len(head) < LOG_OVERHEAD:
                break
            _, length = _LENGTH.unpack(head)
            if length < HEADER_SIZE - LOG_OVERHEAD or pos + LOG_OVERHEAD + length > size:
                break
            pos += LOG_OVERHEAD + length
            if pos - cuts[-1] >= step:
                cuts.append(pos)
    if cuts[-1] != pos:
        cuts.append(pos)
    return cuts


def plan_splits(log_dirs: Iterable[str], topics: Iterable[str] | None = None,
                split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[Split]:
    """One split per segment, or per ``split_bytes`` range of a larger segment."""
    splits: list[Split] = []
    for pdir, topic, partition in partition_dirs(log_dirs, topics):
        for base_offset, path in segments(pdir):
            size = os.path.getsize(path)
            if size < HEADER_SIZE:
                continue
            # The reader stops at a torn tail itself, so a small segment needs no scan.
            cuts = [0, size] if size <= split_bytes else batch_boundaries(path, size, split_bytes)
            for start, end in zip(cuts, cuts[1:], strict=False):
                if end > start:
                    splits.append(Split(path, topic, partition, base_offset, start, end))
    return splits
