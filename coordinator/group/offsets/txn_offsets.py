"""Pending transactional offsets of one shard (Kafka's pendingTransactionalOffsets and
openTransactions in OffsetMetadataManager).

A TxnOffsetCommit record waits here, by producer id, until its transaction's marker: COMMIT
materialises it unless a plain commit of the same partition was replayed after it (the later
record wins, as Kafka decides by record offset), ABORT drops it. A partition stays "open"
(OffsetFetch require_stable: UNSTABLE_OFFSET_COMMIT) until the marker or a tombstone.
"""

from __future__ import annotations

from kafkette.protocol.group_records import OffsetCommitKey

Partition = tuple[str, str, int]  # group, topic, partition


class PendingTxnOffsets:
    def __init__(self) -> None:
        # producer id -> key bytes -> (key, value; None once a later plain commit superseded it)
        self.pending: dict[int, dict[bytes, tuple[OffsetCommitKey, bytes | None]]] = {}
        self.open: dict[Partition, set[int]] = {}  # partition -> producers with a pending commit
        self.open_prefixes: dict[bytes, int] = {}  # key prefix -> open partitions under it
        self.producer_epochs: dict[int, int] = {}  # latest epoch seen per producer

    def __bool__(self) -> bool:
        return bool(self.open)

    def add(self, producer_id: int, epoch: int, key: OffsetCommitKey, key_bytes: bytes,
            value: bytes | None) -> bytes | None:
        """Replay a transactional offset record; the key prefix that must leave replay's
        fast path (plain commits under it are checked against the pending ones)."""
        self.see_epoch(producer_id, epoch)
        entries = self.pending.setdefault(producer_id, {})
        entries[key_bytes] = (key, value)
        producers = self.open.setdefault((key.group, key.topic, key.partition), set())
        if producer_id in producers:
            return None
        producers.add(producer_id)
        prefix = key_bytes[:-4]
        self.open_prefixes[prefix] = self.open_prefixes.get(prefix, 0) + 1
        return prefix

    def is_open_prefix(self, prefix: bytes) -> bool:
        return prefix in self.open_prefixes

    def supersede(self, key: OffsetCommitKey, key_bytes: bytes, drop: bool = False) -> None:
        """A plain commit (or, with ``drop``, a tombstone) of the partition was replayed after
        the pending ones: they never materialise."""
        partition = (key.group, key.topic, key.partition)
        for pid in self.open.get(partition, ()):
            entries = self.pending.get(pid)
            if entries is not None and key_bytes in entries:
                entries[key_bytes] = (key, None)
        if drop:
            for pid in self.open.pop(partition, set()):
                self.pending.get(pid, {}).pop(key_bytes, None)
            self._close_prefix(key_bytes[:-4])

    def end(self, producer_id: int, epoch: int) -> list[tuple[OffsetCommitKey, bytes, bytes]]:
        """The marker of ``producer_id``'s transaction: what a COMMIT materialises."""
        self.see_epoch(producer_id, epoch)
        out = []
        for key_bytes, (key, value) in self.pending.pop(producer_id, {}).items():
            partition = (key.group, key.topic, key.partition)
            producers = self.open.get(partition)
            if producers is not None and producer_id in producers:
                producers.discard(producer_id)
                if not producers:
                    del self.open[partition]
                self._close_prefix(key_bytes[:-4])
            if value is not None:
                out.append((key, key_bytes, value))
        return out

    def _close_prefix(self, prefix: bytes) -> None:
        count = self.open_prefixes.get(prefix, 0) - 1
        if count > 0:
            self.open_prefixes[prefix] = count
        else:
            self.open_prefixes.pop(prefix, None)

    def unstable(self, group_id: str) -> set[tuple[str, int]]:
        """(topic, partition) of the group with a transactional commit still open."""
        return {(topic, p) for group, topic, p in self.open if group == group_id}

    def see_epoch(self, producer_id: int, epoch: int) -> None:
        if epoch > self.producer_epochs.get(producer_id, -1):
            self.producer_epochs[producer_id] = epoch

    def fenced(self, producer_id: int, epoch: int) -> bool:
        """A producer older than the last epoch this partition saw."""
        return epoch < self.producer_epochs.get(producer_id, -1)
