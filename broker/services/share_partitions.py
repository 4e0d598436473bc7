"""The share-partitions this broker leads (Kafka's SharePartitionManager, its partition half):
loaded from the share ``Persister`` on first use, written back, waited on by long polls.

- Loading: the persisted start offset and ranges; a share-partition never initialised, or
  initialised without a start offset, starts where ``share.auto.offset.reset`` says (the log
  start for ``earliest``, the end for ``latest``) and that start is written at once.
- Writing: every change (acknowledgement, release, lock expiry) is one state write of the
  changed ranges and the start offset. A write answered FENCED_STATE_EPOCH means the state was
  re-initialised (an offsets reset): the share-partition is dropped and reloaded on next use.
- Unloading: when its group has no share session left on this broker, a share-partition with
  nothing acquired and no write under way is dropped from memory (reloaded when fetched again).
- Waiting: a fetch that acquired nothing waits for an append to one of its partitions' logs or a
  release on one of its share-partitions.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass
from functools import partial

from kafkette.coordinator.runtime.clock import Clock
from kafkette.coordinator.share.persister import (
    UNINITIALIZED_START_OFFSET,
    Persister,
    SharePartitionKey,
    ShareState,
    StateBatch,
)
from kafkette.storage.topics import TopicInfo

from ..share.share_partition import SharePartition, StateCounts
from .record_service import EARLIEST, LATEST, RecordService

log = logging.getLogger("kafkette.share")

COORDINATOR_NOT_AVAILABLE = 15
FENCED_STATE_EPOCH = 124
LEADER_EPOCH = 0


@dataclass(slots=True)
class PartitionRead:
    """One partition read as ``RecordService.fetch`` takes it."""

    partition: int
    fetch_offset: int
    partition_max_bytes: int


@dataclass(frozen=True, slots=True)
class SharePartitionSnapshot:
    """A loaded share-partition's figures at one moment: its start offset (SPSO), the end of
    its in-flight window (one past the SPEO) and its in-flight records by state."""

    key: SharePartitionKey
    start_offset: int
    end_offset: int
    counts: StateCounts


class SharePartitions:
    def __init__(self, clock: Clock, persister: Persister,
                 has_sessions: Callable[[str], bool]) -> None:
        self._clock = clock
        self.persister = persister
        self._has_sessions = has_sessions  # group id -> it has a share session on this broker
        self._partitions: dict[SharePartitionKey, SharePartition] = {}
        self._loading: dict[SharePartitionKey, asyncio.Future] = {}
        self._state_epochs: dict[SharePartitionKey, int] = {}
        self._waiters: dict[Hashable, set[asyncio.Future]] = {}
        self._writes: set[asyncio.Future] = set()
        self._pending_writes: dict[SharePartitionKey, int] = {}

    def get(self, key: SharePartitionKey) -> SharePartition | None:
        return self._partitions.get(key)

    def snapshot(self, group_id: str | None = None) -> list[SharePartitionSnapshot]:
        """Read-only figures of the share-partitions loaded in memory (of one group, or all)."""
        return [SharePartitionSnapshot(key, sp.start_offset, sp.end_offset, sp.state_counts())
                for key, sp in list(self._partitions.items())
                if group_id is None or key.group_id == group_id]

    # Loading ---------------------------------------------------------------------------------------
    async def load(self, key: SharePartitionKey, topic: TopicInfo, records: RecordService, *,
                   reset: str, delivery_limit: int, max_in_flight: int
                   ) -> SharePartition | None:
        """The share-partition, loaded once however many fetches ask at the same time; None if
        its state cannot be read."""
        sp = self._partitions.get(key)
        if sp is not None:
            return sp
        loading = self._loading.get(key)
        if loading is None:
            loading = self._loading[key] = asyncio.ensure_future(
                self._load(key, topic, records, reset, delivery_limit, max_in_flight))
            loading.add_done_callback(partial(self._loaded, key))
        return await asyncio.shield(loading)

    def _loaded(self, key: SharePartitionKey, _fut: asyncio.Future) -> None:
        self._loading.pop(key, None)

    async def _load(self, key: SharePartitionKey, topic: TopicInfo, records: RecordService,
                    reset: str, delivery_limit: int, max_in_flight: int
                    ) -> SharePartition | None:
        code, state = await self.persister.read(key, LEADER_EPOCH)
        if code:
            log.warning("share state read of %s answered error %d", key, code)
            return None
        if state is None or state.start_offset == UNINITIALIZED_START_OFFSET:
            where = EARLIEST if reset == "earliest" else LATEST
            _, start, _ = await records.list_offset(topic.name, key.partition, where)
            epoch = state.state_epoch if state is not None else 0
            if state is None:
                code = await self.persister.initialize(key, epoch, start)
            else:
                code = await self.persister.write(key, ShareState(epoch, LEADER_EPOCH, start))
            if code:
                log.warning("share state initialisation of %s answered error %d", key, code)
                return None
            state = ShareState(epoch, LEADER_EPOCH, start)
        if key in self._partitions:  # loaded meanwhile
            return self._partitions[key]
        sp = SharePartition(key, self._clock, start_offset=state.start_offset,
                            delivery_limit=delivery_limit, max_in_flight=max_in_flight,
                            state_batches=state.state_batches, on_change=self.persist_soon)
        self._partitions[key] = sp
        self._state_epochs[key] = state.state_epoch
        log.info("share-partition %s-%s of group %s loaded at start offset %d", topic.name,
                 key.partition, key.group_id, sp.start_offset)
        return sp

    def _drop(self, key: SharePartitionKey) -> None:
        sp = self._partitions.pop(key, None)
        if sp is not None:
            sp.close()
        self._state_epochs.pop(key, None)

    def maybe_unload(self, group_id: str) -> None:
        """Drop the group's idle share-partitions if it has no share session left here."""
        if self._has_sessions(group_id):
            return
        for key, sp in list(self._partitions.items()):
            if key.group_id == group_id and not sp.has_acquired and \
                    not self._pending_writes.get(key):
                self._drop(key)

    def unload_group(self, group_id: str) -> None:
        """Drop the group's share-partitions from memory now (their durable state was reset
        or deleted: Alter/DeleteShareGroupOffsets, DeleteGroups); held records are forgotten."""
        for key in [k for k in self._partitions if k.group_id == group_id]:
            self._drop(key)

    # Releases --------------------------------------------------------------------------------------
    def release(self, group_id: str, member_id: str,
                partitions: Collection[tuple[uuid.UUID, int]]) -> None:
        """The member's records in ``partitions`` are free (its session ended)."""
        for tid, p in partitions:
            sp = self._partitions.get(SharePartitionKey(group_id, tid, p))
            if sp is not None:
                self.persist_soon(sp, sp.release_member(member_id))

    def release_except(self, group_id: str, member_id: str,
                       kept: Collection[tuple[uuid.UUID, int]]) -> None:
        """The member's records in every share-partition of the group but ``kept`` are free."""
        for key, sp in list(self._partitions.items()):
            if key.group_id == group_id and (key.topic_id, key.partition) not in kept:
                self.persist_soon(sp, sp.release_member(member_id))

    # Waiting ---------------------------------------------------------------------------------------
    async def wait(self, records: RecordService, partitions: list[tuple[TopicInfo, int]],
                   timeout: float) -> None:
        """Until one of ``partitions`` is appended to or releases records, or ``timeout``."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        reads = records.fetch([(topic.name, None, [PartitionRead(p, 0, 0)])
                               for topic, p in partitions])
        for plog in reads.logs:
            plog.add_waiter(fut)
        wanted = {(topic.topic_id, p) for topic, p in partitions}
        keys = [k for k in self._partitions if (k.topic_id, k.partition) in wanted]
        for key in keys:
            self._waiters.setdefault(key, set()).add(fut)
        timer = loop.call_later(max(timeout, 0), _resolve, fut)
        try:
            await fut
        finally:
            timer.cancel()
            for plog in reads.logs:
                plog.remove_waiter(fut)
            for key in keys:
                waiting = self._waiters.get(key)
                if waiting is not None:
                    waiting.discard(fut)
                    if not waiting:
                        del self._waiters[key]

    def wake(self, key: Hashable) -> None:
        waiting = self._waiters.pop(key, None)
        if waiting:
            for fut in waiting:
                _resolve(fut)

    # Durability ------------------------------------------------------------------------------------
    def persist_soon(self, sp: SharePartition, changes: list[StateBatch]) -> None:
        """Write ``changes`` in the background and wake the fetches waiting on ``sp``."""
        if not changes:
            return
        self.wake(sp.key)
        key = sp.key
        assert isinstance(key, SharePartitionKey)
        self._begin_write(key)  # counted now: the share-partition stays loaded until written
        task = asyncio.ensure_future(self._write(sp, changes, sp.start_offset))
        self._writes.add(task)
        task.add_done_callback(partial(self._written, key))

    def _written(self, key: SharePartitionKey, task: asyncio.Future) -> None:
        self._writes.discard(task)
        self._end_write(key)
        self.maybe_unload(key.group_id)

    async def write(self, sp: SharePartition, changes: list[StateBatch], start: int) -> int:
        """Write ``changes`` and the start offset ``start``; the error code once durable."""
        key = sp.key
        assert isinstance(key, SharePartitionKey)
        self._begin_write(key)
        try:
            return await self._write(sp, changes, start)
        finally:
            self._end_write(key)

    def _begin_write(self, key: SharePartitionKey) -> None:
        self._pending_writes[key] = self._pending_writes.get(key, 0) + 1

    def _end_write(self, key: SharePartitionKey) -> None:
        left = self._pending_writes[key] - 1
        if left:
            self._pending_writes[key] = left
        else:
            del self._pending_writes[key]

    async def _write(self, sp: SharePartition, changes: list[StateBatch], start: int) -> int:
        key = sp.key
        assert isinstance(key, SharePartitionKey)
        state = ShareState(self._state_epochs.get(key, 0), LEADER_EPOCH, start, changes)
        try:
            code = await self.persister.write(key, state)
        except Exception:  # noqa: BLE001 - answered as Kafka's code
            log.exception("share state write of %s failed", key)
            return COORDINATOR_NOT_AVAILABLE
        if code:
            log.warning("share state write of %s answered error %d", key, code)
        if code == FENCED_STATE_EPOCH and self._partitions.get(key) is sp:
            self._drop(key)  # re-initialised meanwhile (an offsets reset): reload on next use
        return code

    async def stop(self) -> None:
        for sp in self._partitions.values():
            sp.close()
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)


def _resolve(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)
