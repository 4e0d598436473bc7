"""Committed offsets of one (group, topic), held compactly (at most ~80 B per offset).

Per partition: the offset (``array('q')``), the leader epoch (``array('i')``) and an index
(``array('I')``, 0 = no offset) into a small table of what varies rarely: the value's version,
metadata, commit and expire timestamps. A table entry is an ``OffsetCommitValue`` whose offset
and leader epoch are unused (0 and -1); one commit request's offsets share one entry. Partitions
outside the dense range (negative, or far beyond the partitions held) go to a dict.

Values stay as their record bytes only until stored: ``put`` takes an OffsetCommitValue's bytes,
checks them like replay always did (a known version and that version's fixed fields, else the
previous offset is kept and one line is logged) and splits them into offset, leader epoch and the
rest; the rest is decoded once per distinct byte string. A value that passes the check but does
not decode reads as missing (and expires), as when values were decoded on read.
"""

from __future__ import annotations

import logging
import struct
from array import array
from collections.abc import Iterator

from kafkette.protocol.group_records import (
    OffsetCommitValue,
    RecordDecodeError,
    decode_offset_value,
)

log = logging.getLogger("kafkette.coordinator")

# Shortest OffsetCommitValue per version (empty metadata): v0/v2 offset+metadata+commit time,
# v1 + expire time, v3 + leader epoch, v4 flexible (compact string, tag buffer).
_MIN_VALUE_LENGTH = (20, 28, 20, 24, 24)
# The same keyed by the value's version bytes (2 bytes, big endian).
MIN_LENGTH_BY_VERSION = {v.to_bytes(2, "big"): n for v, n in enumerate(_MIN_VALUE_LENGTH)}
NOT_AN_OFFSET = 1 << 62
# Where the bytes after the leader epoch start, by version bytes (v0-v2 have no epoch).
REST_START = {b"\x00\x00": 10, b"\x00\x01": 10, b"\x00\x02": 10, b"\x00\x03": 14,
              b"\x00\x04": 14}
_ZERO_HEAD = {10: bytes(8), 14: bytes(12)}

# version bytes -> (shortest value, where the bytes after offset/leader epoch start)
_SHAPE = {v: (MIN_LENGTH_BY_VERSION[v], REST_START[v]) for v in REST_START}
_OFFSET_EPOCH = struct.Struct(">qi")
_OFFSET = struct.Struct(">q")

UNDECODABLE = OffsetCommitValue(0, -1, "", 0, None)  # a table entry that reads as missing
_DENSE_SLACK = 1024


def plausible_offset_value(value: bytes) -> bool:
    """What replay checks before storing an offset's value bytes: a known OffsetCommitValue
    version (0-4) and at least that version's fixed fields."""
    return len(value) >= MIN_LENGTH_BY_VERSION.get(value[:2], NOT_AN_OFFSET)


def decode_rest(rest: bytes) -> OffsetCommitValue:
    """The table entry of ``rest`` (version bytes + the value after offset/leader epoch)."""
    head = REST_START[rest[:2]]
    try:
        return decode_offset_value(rest[:2] + _ZERO_HEAD[head] + rest[2:])
    except RecordDecodeError as exc:
        log.warning("undecodable offset value (read as missing): %s", exc)
        return UNDECODABLE


def built_entry(metadata: str, commit_timestamp: int, expire_timestamp: int | None
                ) -> OffsetCommitValue:
    """The table entry of a value ``encode_offset_value`` built (what ``decode_rest`` of its
    rest bytes gives: offset 0, leader epoch 0 for v3 or -1 for v1), without decoding it."""
    return OffsetCommitValue(0, 0 if expire_timestamp is None else -1, metadata,
                             commit_timestamp, expire_timestamp)


class TopicOffsets:
    """Committed offsets of one group for one topic."""

    __slots__ = ("offsets", "epochs", "metas", "sparse", "count", "table", "index")

    def __init__(self) -> None:
        self.offsets = array("q")
        self.epochs = array("i")
        self.metas = array("I")  # table index per partition, 0: no offset
        self.sparse: dict[int, tuple[int, int, int]] | None = None  # p -> offset, epoch, meta
        self.count = 0
        self.table: list[OffsetCommitValue | None] = [None]
        self.index: dict[bytes, int] = {}  # rest bytes -> table index

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __contains__(self, p: object) -> bool:
        if type(p) is int and 0 <= p < len(self.metas):
            return self.metas[p] != 0
        return self.sparse is not None and p in self.sparse

    # Writes ------------------------------------------------------------------------------------
    def meta_index(self, rest: bytes, shared: dict[bytes, OffsetCommitValue] | None = None,
                   entry: OffsetCommitValue | None = None) -> int:
        """The table index of ``rest`` (added if new; ``shared`` maps rest bytes to entries
        other topics decoded already; ``entry``: what ``rest`` decodes to, known already)."""
        i = self.index.get(rest)
        if i is not None:
            return i
        if len(self.table) > 2 * self.count + 16:
            self._compact_table()
        if entry is None and shared is not None:
            entry = shared.get(rest)
        if entry is None:
            entry = decode_rest(rest)
            if shared is not None:
                shared[rest] = entry
        i = len(self.table)
        self.table.append(entry)
        self.index[rest] = i
        return i

    def put(self, p: int, value: bytes, shared: dict[bytes, OffsetCommitValue] | None = None,
            entry: OffsetCommitValue | None = None) -> bool:
        """Store an OffsetCommitValue's bytes for partition ``p``; False (nothing stored) if
        they fail the plausibility check. ``entry``: the table entry of the value's rest bytes
        when the caller knows it (a record this broker just built: nothing to decode)."""
        if entry is not None:  # a value built here: its entry may be stored already
            metas = self.metas
            if 0 <= p < len(metas):
                m = metas[p]
                if m and self.table[m] is entry:
                    if entry.expire_timestamp is None:  # v3: offset and leader epoch
                        self.offsets[p], self.epochs[p] = _OFFSET_EPOCH.unpack_from(value, 2)
                    else:  # v1: no leader epoch
                        self.offsets[p] = _OFFSET.unpack_from(value, 2)[0]
                        self.epochs[p] = -1
                    return True
        version = value[:2]
        shape = _SHAPE.get(version)
        if shape is None or len(value) < shape[0]:
            return False
        head = shape[1]
        rest = version + value[head:]
        meta = self.index.get(rest)
        if meta is None:
            meta = self.meta_index(rest, shared, entry)
        if head == 14:
            offset, epoch = _OFFSET_EPOCH.unpack_from(value, 2)
        else:
            offset, epoch = _OFFSET.unpack_from(value, 2)[0], -1
        metas = self.metas
        if 0 <= p < len(metas):
            if not metas[p]:
                self.count += 1
            self.offsets[p] = offset
            self.epochs[p] = epoch
            metas[p] = meta
        else:
            self.set(p, offset, epoch, meta)
        return True

    def set(self, p: int, offset: int, epoch: int, meta: int) -> None:
        metas = self.metas
        if 0 <= p < len(metas):
            if metas[p] == 0:
                self.count += 1
            self.offsets[p] = offset
            self.epochs[p] = epoch
            metas[p] = meta
        elif 0 <= p < 2 * self.count + _DENSE_SLACK:
            self._grow(p + 1)
            self.set(p, offset, epoch, meta)
        else:
            if self.sparse is None:
                self.sparse = {}
            if p not in self.sparse:
                self.count += 1
            self.sparse[p] = (offset, epoch, meta)

    def restore(self, p: int, offset: int, epoch: int, entry: OffsetCommitValue) -> None:
        """Put back partition ``p`` as it was (an undone commit): ``entry`` is the table entry
        it had, found again (the table may have been compacted since) or added."""
        try:
            meta = self.table.index(entry, 1)
        except ValueError:
            meta = len(self.table)
            self.table.append(entry)
        self.set(p, offset, epoch, meta)

    def set_run(self, first: int, offsets: array, epochs: array, meta: int) -> bool:
        """Partitions ``first``.. get ``offsets``/``epochs`` and one table index (replay of a
        batch of one commit request); False if they do not fit the dense range."""
        end = first + len(offsets)
        if first < 0 or end > max(len(self.metas), 2 * self.count + _DENSE_SLACK):
            return False
        if end > len(self.metas):
            self._grow(end)
        metas = self.metas
        self.count += metas[first:end].count(0)
        self.offsets[first:end] = offsets
        self.epochs[first:end] = epochs
        metas[first:end] = array("I", (meta,)) * len(offsets)
        return True

    def _grow(self, n: int) -> None:
        extra = n - len(self.metas)
        self.offsets.frombytes(bytes(8 * extra))
        self.epochs.frombytes(bytes(4 * extra))
        self.metas.frombytes(bytes(4 * extra))

    def pop(self, p: int) -> bool:
        """Remove partition ``p``'s offset; True if there was one."""
        metas = self.metas
        if 0 <= p < len(metas):
            if metas[p] == 0:
                return False
            metas[p] = 0
        elif self.sparse is None or self.sparse.pop(p, None) is None:
            return False
        self.count -= 1
        return True

    def _compact_table(self) -> None:
        """Drop table entries no partition uses (amortised: the table grows to twice the
        offsets held before this runs)."""
        used = set(self.metas)
        if self.sparse:
            used.update(m for _o, _e, m in self.sparse.values())
        used.discard(0)
        remap = {0: 0}
        table: list[OffsetCommitValue | None] = [None]
        for old in sorted(used):
            remap[old] = len(table)
            table.append(self.table[old])
        self.index = {rest: remap[i] for rest, i in self.index.items() if i in remap}
        self.table = table
        self.metas = array("I", map(remap.__getitem__, self.metas))
        if self.sparse:
            self.sparse = {p: (o, e, remap[m]) for p, (o, e, m) in self.sparse.items()}

    # Reads -------------------------------------------------------------------------------------
    def get(self, p: int) -> tuple[int, int, OffsetCommitValue] | None:
        """(offset, leader epoch, entry) of partition ``p``, None if none or undecodable."""
        metas = self.metas
        if 0 <= p < len(metas):
            m = metas[p]
            if m == 0:
                return None
            entry = self.table[m]
            if entry is UNDECODABLE:
                return None
            return self.offsets[p], self.epochs[p], entry  # type: ignore[return-value]  # UNDECODABLE is the table's only non-value entry and is excluded above
        if self.sparse is None or p not in self.sparse:
            return None
        offset, epoch, m = self.sparse[p]
        entry = self.table[m]
        return None if entry is UNDECODABLE else (offset, epoch, entry)  # type: ignore[return-value]  # UNDECODABLE is the table's only non-value entry and is excluded here

    def partitions(self) -> list[int]:
        """Partitions with an offset (undecodable ones included), ascending."""
        metas = self.metas
        out = [p for p, m in enumerate(metas) if m] if self.count else []
        if self.sparse:
            out = sorted(out + list(self.sparse))
        return out

    def __iter__(self) -> Iterator[int]:
        return iter(self.partitions())

    def items(self) -> Iterator[tuple[int, int, int, OffsetCommitValue | None]]:
        """(partition, offset, leader epoch, entry; None if undecodable) of every offset."""
        for p in self.partitions():
            got = self.get(p)
            if got is None:
                yield p, -1, -1, None
            else:
                yield p, got[0], got[1], got[2]

    def value(self, p: int) -> OffsetCommitValue | None:
        """Partition ``p``'s offset as the OffsetCommitValue it was committed as."""
        got = self.get(p)
        if got is None:
            return None
        offset, epoch, e = got
        return OffsetCommitValue(offset, epoch, e.metadata, e.commit_timestamp,
                                 e.expire_timestamp)

    def nbytes(self) -> int:
        """Approximate memory held (arrays and table), for tests and the memory figure."""
        return (self.offsets.buffer_info()[1] * 8 + self.epochs.buffer_info()[1] * 4
                + self.metas.buffer_info()[1] * 4 + 64 * len(self.table))
