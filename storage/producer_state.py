"""Producer state per partition: the last batches of each producer id, the open transactions
and the aborted-transaction index.

Mirrors Kafka's ProducerStateManager checks for non-transactional producers: a batch equal to
one of the last five of its producer is a duplicate (acknowledged with the original offsets,
not appended again); an epoch older than the current one is fenced; otherwise the first
sequence must follow the last one (any sequence is accepted from a producer the log does not
know, e.g. after its records were deleted).

Transactions (Kafka's ProducerStateManager + TransactionIndex): a transactional batch opens its
producer's transaction at its first offset; a COMMIT/ABORT control batch closes it. The last
stable offset (LSO) is the first offset of the oldest open transaction, else the high
watermark. An aborted transaction is kept as (producer id, first offset, last offset) in log
order: the aborted-transaction index a read_committed fetch consults for its range.
"""

from __future__ import annotations

from bisect import bisect_left
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


@dataclass(slots=True, frozen=True)
class ActiveProducer:
    """One producer the partition knows, as DescribeProducers reports it (Kafka's
    ProducerStateEntry): sequence and timestamp of its last batch (-1: none kept), the first
    offset of its open transaction (-1: none)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    txn_start_offset: int


@dataclass(slots=True, frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset


def _last_offset(txn: AbortedTxn) -> int:
    return txn.last_offset


class ProducerStateTable:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}
        self.ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self.aborted: list[AbortedTxn] = []  # in marker order

    def active_producers(self) -> list[ActiveProducer]:
        """Every producer this partition tracks, by producer id. The coordinator epoch of a
        transaction marker is not kept: -1, Kafka's value before any marker."""
        out = []
        for pid in sorted(self.entries):
            entry = self.entries[pid]
            last = entry.batches[-1] if entry.batches else None
            out.append(ActiveProducer(pid, entry.epoch, entry.last_seq,
                                      last.timestamp if last is not None else -1, -1,
                                      self.ongoing.get(pid, -1)))
        return out

    def first_unstable_offset(self) -> int | None:
        """First offset of the oldest open transaction (None: none is open)."""
        ongoing = self.ongoing
        return min(ongoing.values()) if ongoing else None

    def aborted_in(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions that may have records in [start, end) (Kafka's
        collectAbortedTxns): first offset below ``end`` and marker at or after ``start``."""
        aborted = self.aborted
        if not aborted or aborted[-1].last_offset < start:
            return []
        # In marker order, so sorted by last offset: skip the ones ending before ``start``.
        i = bisect_left(aborted, start, key=_last_offset)
        return [a for a in aborted[i:] if a.first_offset < end]

    def on_batch(self, header: BatchHeader, base_offset: int, last_offset: int,
                 control_type: int) -> AbortedTxn | None:
        """Track the transaction of a transactional batch (``control_type``: -1 for data,
        0 ABORT, 1 COMMIT) after ``update``; the aborted transaction an ABORT marker closes."""
        pid = header.producer_id
        if control_type < 0:
            if pid not in self.ongoing:
                self.ongoing[pid] = base_offset
            return None
        entry = self.entries.get(pid)
        if entry is None or header.producer_epoch > entry.epoch:
            # A marker carries the coordinator's (possibly bumped) epoch: older epochs are fenced.
            self.entries[pid] = ProducerEntry(header.producer_epoch)
        first = self.ongoing.pop(pid, None)
        if control_type == 0 and first is not None:
            txn = AbortedTxn(pid, first, last_offset)
            self.aborted.append(txn)
            return txn
        return None

    def forget_before(self, log_start: int) -> None:
        """Aborted transactions whose marker is below the log start are never fetched again."""
        if self.aborted and self.aborted[0].last_offset < log_start:
            self.aborted = [a for a in self.aborted if a.last_offset >= log_start]

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
        self.ongoing = {p: o for p, o in self.ongoing.items() if o < next_offset}
        self.aborted = [a for a in self.aborted if a.last_offset < next_offset]
        for pid in list(self.entries):
            entry = self.entries[pid]
            kept = [b for b in entry.batches if b.last_offset < next_offset]
            if not kept:
                del self.entries[pid]
            elif len(kept) != len(entry.batches):
                entry.batches = deque(kept, maxlen=MAX_CACHED_BATCHES)
