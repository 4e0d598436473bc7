"""One share-partition's in-flight records (Kafka's SharePartition): states, locks, counts.

A share-partition is (group, topic-partition) on the partition's leader. Records from the start
offset (SPSO) up to ``end_offset`` (one past the SPEO) are *in flight*, each in one state:

- AVAILABLE: may be acquired; acquiring one adds 1 to its delivery count;
- ACQUIRED: locked for one member until its acquisition lock expires (never persisted);
- ACKNOWLEDGED / ARCHIVED: terminal.

ACCEPT acknowledges; REJECT and GAP archive; RELEASE, lock expiry and the end of the member's
session make it AVAILABLE again, or ARCHIVED once it was delivered ``delivery_limit`` times (the
delivery count is kept on session release, as Kafka does since KAFKA-19972). The SPSO moves past
the longest prefix of terminal records. At most ``max_in_flight`` records (terminal ones
included) are in flight: past that, only AVAILABLE records inside the window are acquired.

Acquisition is aligned to the log batches read (``LogBatch``): a batch is taken whole, so
MaxRecords may be exceeded to finish one (ShareFetch v1). States are kept one entry per offset
over the window (it is bounded by ``max_in_flight``). Each acquisition arms one lock timer on the
injected clock; nothing here sleeps, reads or writes: the caller reads the log, persists what
``Change`` lists (the states to write) and wakes waiting fetches.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from kafkette.coordinator.runtime.clock import Clock
from kafkette.coordinator.share.persister import (
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    StateBatch,
)

# Error codes of acknowledgements (Kafka's Errors)
NONE = 0
INVALID_REQUEST = 42
INVALID_RECORD_STATE = 121

# AcknowledgeTypes of ShareFetch / ShareAcknowledge v1
GAP, ACCEPT, RELEASE, REJECT = 0, 1, 2, 3
_ACK_TARGET = {GAP: ARCHIVED, ACCEPT: ACKNOWLEDGED, REJECT: ARCHIVED}
_TERMINAL = (ACKNOWLEDGED, ARCHIVED)

# Whether a session release (connection closed, epoch -1) gives the delivery back: Kafka 4.1
# did ("fetched but not delivered"); KAFKA-19972 keeps it, so a crash-looping consumer cannot
# keep one record forever.
RELEASE_KEEPS_DELIVERY_COUNT = True

_lock_ids = itertools.count(1)
_ACQUIRED_BYTE = bytes([ACQUIRED])
_TERMINAL_BYTES = bytes(_TERMINAL)


class LogBatch(NamedTuple):
    """One log batch of a read: its offsets, its bytes' place in the read, what it holds."""

    base_offset: int
    last_offset: int
    start: int  # byte position in the read
    end: int
    aborted: bool = False  # read_committed: data of an aborted transaction


class StateCounts(NamedTuple):
    """How many in-flight records (start offset to end offset) are in each state."""

    available: int
    acquired: int
    acknowledged: int
    archived: int


class AcquiredRange(NamedTuple):
    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(slots=True)
class Acquisition:
    """What one fetch acquired: the ranges handed to the member, the byte span of the read to
    send (whole log batches), and the changes to persist (aborted records archived)."""

    ranges: list[AcquiredRange] = field(default_factory=list)
    byte_start: int = 0
    byte_end: int = 0
    changes: list[StateBatch] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(r.last_offset - r.first_offset + 1 for r in self.ranges)


class _Undo(NamedTuple):
    """A range of records as they were before an acknowledgement changed them."""

    first_offset: int
    states: bytes
    counts: list[int]
    owners: list[str | None]
    locks: list[int]


@dataclass(slots=True)
class AckOutcome:
    """An accepted acknowledgement: the states to persist (and the start offset once they
    are), and how to undo them if the write fails."""

    changes: list[StateBatch]
    undo: list[_Undo]
    start_offset: int


def validate_ack_batches(batches: Sequence[tuple[int, int, Sequence[int]]]) -> int:
    """KafkaApis' checks of one partition's acknowledgement batches: INVALID_REQUEST for a
    reversed or overlapping range, no types, a type count that is neither 1 nor one per
    offset, or an unknown type."""
    previous_last = -1
    for first, last, types in batches:
        if first > last or first < 0 or (previous_last >= 0 and first <= previous_last):
            return INVALID_REQUEST
        if not types or (len(types) > 1 and len(types) != last - first + 1):
            return INVALID_REQUEST
        if any(t not in (GAP, ACCEPT, RELEASE, REJECT) for t in types):
            return INVALID_REQUEST
        previous_last = last
    return NONE


class SharePartition:
    """The in-flight records of one share-partition (see the module docstring)."""

    def __init__(self, key: Hashable, clock: Clock, *, start_offset: int,
                 delivery_limit: int = 5, max_in_flight: int = 2000,
                 state_batches: Sequence[StateBatch] = (),
                 on_change: Callable[[SharePartition, list[StateBatch]], object] | None = None
                 ) -> None:
        self.key = key
        self._clock = clock
        self.delivery_limit = delivery_limit
        self.max_in_flight = max_in_flight
        # Called with what a lock expiry changed (to persist it and wake fetches).
        self.on_change = on_change
        self.start_offset = start_offset
        self.end_offset = start_offset
        # Per offset from start_offset: state, delivery count, owner member id, lock id.
        self._states = bytearray()
        self._counts: list[int] = []
        self._owners: list[str | None] = []
        self._locks: list[int] = []
        self._lock_keys: dict[int, tuple[Hashable, ...]] = {}
        self._restore(state_batches)

    def _restore(self, batches: Sequence[StateBatch]) -> None:
        """Persisted ranges at or past the start offset: ACQUIRED ones come back AVAILABLE,
        holes between them are records never delivered (AVAILABLE, count 0)."""
        for b in sorted(batches, key=lambda b: b.first_offset):
            if b.last_offset < self.start_offset:
                continue
            first = max(b.first_offset, self.end_offset)
            if first > b.last_offset:
                continue
            self._extend(first, AVAILABLE, 0)  # the hole before it, if any
            state = AVAILABLE if b.delivery_state == ACQUIRED else b.delivery_state
            n = b.last_offset - first + 1
            self._states += bytes([state]) * n
            self._counts += [b.delivery_count] * n
            self._owners += [None] * n
            self._locks += [0] * n
            self.end_offset = b.last_offset + 1
        self._advance()

    def _extend(self, upto: int, state: int, count: int) -> None:
        n = upto - self.end_offset
        if n > 0:
            self._states += bytes([state]) * n
            self._counts += [count] * n
            self._owners += [None] * n
            self._locks += [0] * n
            self.end_offset = upto

    # Reading ---------------------------------------------------------------------------------------
    def state_of(self, offset: int) -> int:
        """An offset's state; ARCHIVED below the start offset, AVAILABLE past the end."""
        if offset < self.start_offset:
            return ARCHIVED
        if offset >= self.end_offset:
            return AVAILABLE
        return self._states[offset - self.start_offset]

    def delivery_count(self, offset: int) -> int:
        if self.start_offset <= offset < self.end_offset:
            return self._counts[offset - self.start_offset]
        return 0

    def owner(self, offset: int) -> str | None:
        if self.start_offset <= offset < self.end_offset:
            return self._owners[offset - self.start_offset]
        return None

    def acquired_by(self, member: str) -> int:
        return sum(1 for i, o in enumerate(self._owners)
                   if o == member and self._states[i] == ACQUIRED)

    def state_counts(self) -> StateCounts:
        """The in-flight records by state (read only: the admin console and metrics)."""
        states = self._states
        return StateCounts(states.count(AVAILABLE), states.count(ACQUIRED),
                           states.count(ACKNOWLEDGED), states.count(ARCHIVED))

    @property
    def has_acquired(self) -> bool:
        return self._states.find(ACQUIRED) >= 0

    def next_fetch_offset(self) -> int | None:
        """Where the next read starts: the first AVAILABLE record in flight, else the end; None
        when the window is full and nothing in it is AVAILABLE."""
        i = self._states.find(AVAILABLE)
        if i >= 0:
            return self.start_offset + i
        if self.end_offset - self.start_offset >= self.max_in_flight:
            return None
        return self.end_offset

    @property
    def has_available(self) -> bool:
        return self.next_fetch_offset() is not None

    # Acquisition -----------------------------------------------------------------------------------
    def acquire(self, member: str, batches: Sequence[LogBatch], *, max_records: int,
                batch_size: int, lock_ms: int, read_from: int | None = None) -> Acquisition:
        """Acquire for ``member`` the AVAILABLE records of ``batches`` (whole batches, read from
        ``read_from``, the ``next_fetch_offset()``), stopping after the batch that reaches
        ``max_records``. Offsets the read skipped (no record: compacted, or a gap) are
        archived, so the start offset can move past them."""
        out = Acquisition()
        if max_records <= 0:
            return out
        lock_id = next(_lock_ids)
        taken = 0
        used_first = -1
        used_last = -1
        start = self.start_offset
        expected = read_from if read_from is not None else start
        for index, batch in enumerate(batches):
            if batch.last_offset < start:
                continue
            if batch.base_offset >= self.end_offset and \
                    self.end_offset - self.start_offset >= self.max_in_flight:
                break  # window full: nothing new
            if batch.base_offset > expected:
                self._archive_gap(max(expected, start), batch.base_offset, out.changes)
            expected = batch.last_offset + 1
            if batch.last_offset >= self.end_offset:
                self._extend(batch.last_offset + 1, AVAILABLE, 0)
            first = max(batch.base_offset, start)
            if batch.aborted:
                # read_committed: never handed out, archived now
                for offset in range(first, batch.last_offset + 1):
                    i = offset - start
                    if self._states[i] == AVAILABLE:
                        self._states[i] = ARCHIVED
                        out.changes.append(StateBatch(offset, offset, ARCHIVED, self._counts[i]))
                continue
            got = 0
            i0, i1 = first - start, batch.last_offset + 1 - start
            n = i1 - i0
            counts = self._counts
            if self._states.count(AVAILABLE, i0, i1) == n and _uniform(counts, i0, i1):
                # the common case, a whole batch AVAILABLE with one count: taken at once
                count = counts[i0] + 1
                self._states[i0:i1] = _ACQUIRED_BYTE * n
                counts[i0:i1] = [count] * n
                self._owners[i0:i1] = [member] * n
                self._locks[i0:i1] = [lock_id] * n
                _add_span(out.ranges, first, batch.last_offset, count, batch_size,
                          first == batch.base_offset)
                got = n
            else:
                for offset in range(first, batch.last_offset + 1):
                    i = offset - start
                    if self._states[i] != AVAILABLE:
                        continue
                    count = counts[i] + 1
                    self._states[i] = ACQUIRED
                    counts[i] = count
                    self._owners[i] = member
                    self._locks[i] = lock_id
                    _add_span(out.ranges, offset, offset, count, batch_size,
                              offset == batch.base_offset)
                    got += 1
            if got:
                if used_first < 0:
                    used_first = index
                used_last = index
                taken += got
                if taken >= max_records:
                    break
        if out.changes:
            out.changes = _merge(out.changes)
            self._advance()
        if taken:
            out.byte_start = batches[used_first].start
            out.byte_end = batches[used_last].end
            key = ("share-lock", self.key, lock_id)
            self._lock_keys[lock_id] = key
            self._clock.schedule(key, lock_ms, lambda: self._expire(lock_id))
        return out

    def _archive_gap(self, first: int, end: int, changes: list[StateBatch]) -> None:
        """Offsets ``first``..``end - 1`` hold no record: archived where AVAILABLE."""
        start = self.start_offset
        for offset in range(first, min(end, self.end_offset)):
            i = offset - start
            if self._states[i] == AVAILABLE:
                self._states[i] = ARCHIVED
                changes.append(StateBatch(offset, offset, ARCHIVED, self._counts[i]))
        if end > self.end_offset:
            changes.append(StateBatch(max(first, self.end_offset), end - 1, ARCHIVED, 0))
            self._extend(end, ARCHIVED, 0)

    # Acknowledgement -------------------------------------------------------------------------------
    def acknowledge(self, member: str, batches: Sequence[tuple[int, int, Sequence[int]]]
                    ) -> tuple[int, AckOutcome | None]:
        """Apply ``member``'s acknowledgements of this partition (first, last, types), all or
        nothing: (error code, what changed). On error nothing changes. The caller persists the
        outcome, then calls ``commit`` (the start offset moves) or ``rollback``."""
        code = validate_ack_batches(batches)
        if code:
            return code, None
        start, end = self.start_offset, self.end_offset
        plan: list[tuple[int, int, Sequence[int]]] = []  # (first, last, types) in flight
        for first, last, types in batches:
            if last < start:
                continue  # already archived
            if first >= end:
                return INVALID_RECORD_STATE, None
            if last >= end:
                return INVALID_REQUEST, None
            lo = max(first, start)
            i0, i1 = lo - start, last + 1 - start
            if self._states.count(ACQUIRED, i0, i1) != i1 - i0 or \
                    self._owners[i0:i1].count(member) != i1 - i0:
                return INVALID_RECORD_STATE, None
            plan.append((lo, last, types if len(types) == 1 else types[lo - first:]))
        undo: list[_Undo] = []
        changes: list[StateBatch] = []
        for lo, last, types in plan:
            i0, i1 = lo - start, last + 1 - start
            n = i1 - i0
            undo.append(_Undo(lo, bytes(self._states[i0:i1]), self._counts[i0:i1],
                              self._owners[i0:i1], self._locks[i0:i1]))
            target = _ACK_TARGET.get(types[0]) if len(types) == 1 else None
            if target is not None:  # one type, not RELEASE: the whole range at once
                self._states[i0:i1] = bytes([target]) * n
                self._owners[i0:i1] = [None] * n
                self._locks[i0:i1] = [0] * n
                changes += _runs(lo, self._counts[i0:i1], target)
                continue
            for k in range(n):
                i = i0 + k
                ack = types[0] if len(types) == 1 else types[k]
                state = _ACK_TARGET.get(ack)
                if state is None:  # RELEASE
                    state = self._released_state(i)
                self._set(i, state)
                changes.append(StateBatch(lo + k, lo + k, state, self._counts[i]))
        return NONE, AckOutcome(_merge(changes), undo, self.start_offset + self._terminal_head())

    def commit(self) -> None:
        """An acknowledgement's write is durable: the start offset moves past it."""
        self._advance()

    def rollback(self, outcome: AckOutcome) -> None:
        """The write of ``outcome`` failed: its records are ACQUIRED again where still in flight
        (a lock that expired meanwhile releases them at once)."""
        expired: set[int] = set()
        for u in outcome.undo:
            lo = max(u.first_offset, self.start_offset)
            last = min(u.first_offset + len(u.states) - 1, self.end_offset - 1)
            if lo > last:
                continue
            k0, k1 = lo - u.first_offset, last + 1 - u.first_offset
            i0, i1 = lo - self.start_offset, last + 1 - self.start_offset
            self._states[i0:i1] = u.states[k0:k1]
            self._counts[i0:i1] = u.counts[k0:k1]
            self._owners[i0:i1] = u.owners[k0:k1]
            self._locks[i0:i1] = u.locks[k0:k1]
            expired.update(lock for lock in u.locks[k0:k1] if lock not in self._lock_keys)
        for lock in expired:
            self._expire(lock)

    def _released_state(self, i: int) -> int:
        return ARCHIVED if self._counts[i] >= self.delivery_limit else AVAILABLE

    def _set(self, i: int, state: int) -> None:
        self._states[i] = state
        self._owners[i] = None
        self._locks[i] = 0

    # Release -----------------------------------------------------------------------------------------
    def release_member(self, member: str) -> list[StateBatch]:
        """The member's session ended: every record it holds is AVAILABLE again (ARCHIVED at the
        delivery limit). Returns the changes to persist."""
        changes = []
        for i, owner in enumerate(self._owners):
            if owner == member and self._states[i] == ACQUIRED:
                if not RELEASE_KEEPS_DELIVERY_COUNT:
                    self._counts[i] -= 1
                self._set(i, self._released_state(i))
                changes.append(StateBatch(self.start_offset + i, self.start_offset + i,
                                          self._states[i], self._counts[i]))
        if changes:
            self._advance()
            self._drop_unused_locks()
        return _merge(changes)

    def _expire(self, lock_id: int) -> None:
        """The acquisition lock ``lock_id`` ran out: its records still ACQUIRED are released."""
        self._lock_keys.pop(lock_id, None)
        changes = []
        for i, lock in enumerate(self._locks):
            if lock == lock_id and self._states[i] == ACQUIRED:
                self._set(i, self._released_state(i))
                changes.append(StateBatch(self.start_offset + i, self.start_offset + i,
                                          self._states[i], self._counts[i]))
        if changes:
            self._advance()
            if self.on_change is not None:
                self.on_change(self, _merge(changes))

    def _drop_unused_locks(self) -> None:
        live = set(self._locks)
        for lock_id in [k for k in self._lock_keys if k not in live]:
            self._clock.cancel(self._lock_keys.pop(lock_id))

    def close(self) -> None:
        """Stop every lock timer (the share-partition is unloaded)."""
        for key in self._lock_keys.values():
            self._clock.cancel(key)
        self._lock_keys.clear()

    # The start offset -------------------------------------------------------------------------------
    def _advance(self) -> None:
        """Move the SPSO past the terminal records at the head of the window."""
        n = self._terminal_head()
        if n:
            del self._states[:n]
            del self._counts[:n]
            del self._owners[:n]
            del self._locks[:n]
            self.start_offset += n
        if n and self._lock_keys:
            self._drop_unused_locks()

    def _terminal_head(self) -> int:
        """How many records at the head of the window are terminal."""
        states = self._states
        return len(states) - len(states.lstrip(_TERMINAL_BYTES))

    def skip_to(self, offset: int) -> list[StateBatch]:
        """The log now starts at ``offset`` (retention, DeleteRecords): AVAILABLE records below
        it are archived and the window moves up to it."""
        if offset <= self.start_offset:
            return []
        changes = []
        for i in range(min(offset, self.end_offset) - self.start_offset):
            if self._states[i] == AVAILABLE:
                self._states[i] = ARCHIVED
                changes.append(StateBatch(self.start_offset + i, self.start_offset + i,
                                          ARCHIVED, self._counts[i]))
        if self.end_offset < offset:
            if self._states.find(ACQUIRED) < 0:
                self._states.clear()
                self._counts.clear()
                self._owners.clear()
                self._locks.clear()
                self.start_offset = self.end_offset = offset
            else:
                self._extend(offset, ARCHIVED, 0)
        self._advance()
        return _merge(changes)


def _add_span(ranges: list[AcquiredRange], first: int, last: int, count: int, batch_size: int,
              batch_start: bool) -> None:
    """Grow the last AcquiredRecords range to ``last``, or start one: at a gap, a different
    delivery count, or a log batch boundary once the range holds ``batch_size`` records."""
    if ranges:
        prev = ranges[-1]
        if prev.last_offset + 1 == first and prev.delivery_count == count and not (
                batch_start and prev.last_offset - prev.first_offset + 1 >= batch_size):
            ranges[-1] = AcquiredRange(prev.first_offset, last, count)
            return
    ranges.append(AcquiredRange(first, last, count))


def _uniform(values: list[int], i0: int, i1: int) -> bool:
    """``values[i0:i1]`` all equal."""
    first = values[i0]
    return all(v == first for v in values[i0 + 1:i1]) if i1 - i0 < 8 else \
        values[i0:i1].count(first) == i1 - i0


def _runs(first: int, counts: list[int], state: int) -> list[StateBatch]:
    """Offsets from ``first`` in ``state`` with ``counts``, as ranges of one count each."""
    out = []
    run_start = 0
    for k in range(1, len(counts) + 1):
        if k == len(counts) or counts[k] != counts[run_start]:
            out.append(StateBatch(first + run_start, first + k - 1, state, counts[run_start]))
            run_start = k
    return out


def _merge(changes: list[StateBatch]) -> list[StateBatch]:
    """Adjacent single-offset changes of one state and count as ranges."""
    out: list[StateBatch] = []
    for c in sorted(changes, key=lambda c: c.first_offset):
        if out:
            last = out[-1]
            if last.last_offset + 1 == c.first_offset and last.delivery_state == \
                    c.delivery_state and last.delivery_count == c.delivery_count:
                out[-1] = StateBatch(last.first_offset, c.last_offset, c.delivery_state,
                                     c.delivery_count)
                continue
        out.append(c)
    return out
