"""Idempotent-producer state per partition: the last batches of each producer id.

Mirrors Kafka's ProducerStateManager checks for non-transactional producers: a batch equal to
one of the last five of its producer is a duplicate (acknowledged with the original offsets,
not appended again); an epoch older than the current one is fenced; otherwise the first
sequence must follow the last one (any sequence is accepted from a producer the log does not
know, e.g. after its records were deleted).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from kafkette.protocol.records import BatchHeader

MAX_CACHED_BATCHES = 5
_INT32_MAX = 2**31 - 1


class OutOfOrderSequenceError(Exception):
    pass


class InvalidProducerEpochError(Exception):
    pass


@dataclass(slots=True)
class _CachedBatch:
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[_CachedBatch] = field(default_factory=lambda: deque(maxlen=MAX_CACHED_BATCHES))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1


def _in_sequence(last_seq: int, first_seq: int) -> bool:
    return first_seq == last_seq + 1 or (first_seq == 0 and last_seq == _INT32_MAX)


class ProducerStateTable:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def check(self, header: BatchHeader) -> _CachedBatch | None:
        """Validate an incoming idempotent batch; the original batch when it is a duplicate."""
        entry = self.entries.get(header.producer_id)
        if entry is None:
            return None
        epoch = header.producer_epoch
        if epoch < entry.epoch:
            raise InvalidProducerEpochError(
                f"producer {header.producer_id} epoch {epoch} is older than {entry.epoch}")
        first = header.base_sequence
        last = header.last_sequence
        if epoch == entry.epoch:
            for cached in entry.batches:
                if cached.first_seq == first and cached.last_seq == last:
                    return cached
            if entry.batches and not _in_sequence(entry.last_seq, first):
                raise OutOfOrderSequenceError(
                    f"out of order sequence for producer {header.producer_id} epoch {epoch}: "
                    f"got {first}, expected {entry.last_seq + 1}")
        elif first != 0:
            raise OutOfOrderSequenceError(
                f"producer {header.producer_id} new epoch {epoch} must start at sequence 0, got {first}")
        return None

    def update(self, header: BatchHeader, base_offset: int, last_offset: int) -> None:
        if header.producer_id < 0 or header.base_sequence < 0:
            return
        entry = self.entries.get(header.producer_id)
        if entry is None or header.producer_epoch != entry.epoch:
            entry = ProducerEntry(header.producer_epoch)
            self.entries[header.producer_id] = entry
        entry.batches.append(_CachedBatch(header.base_sequence, header.last_sequence, base_offset,
                                          last_offset, header.max_timestamp))

    def truncate(self, next_offset: int) -> None:
        """Forget batches at or beyond ``next_offset`` (the log was truncated)."""
        for pid in list(self.entries):
            entry = self.entries[pid]
            kept = [b for b in entry.batches if b.last_offset < next_offset]
            if not kept:
                del self.entries[pid]
            elif len(kept) != len(entry.batches):
                entry.batches = deque(kept, maxlen=MAX_CACHED_BATCHES)
