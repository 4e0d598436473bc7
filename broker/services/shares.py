"""Share groups' data plane (KIP-932): ShareFetch and ShareAcknowledge on a partition's leader.

Kafka's SharePartitionManager: the share sessions of each node (``broker/share/sessions.py``),
acquisition through the Fetch path's reads (``RecordService.fetch``, in growing chunks),
acknowledgements, long polls; the share-partitions themselves (``broker/share/
share_partition.py``, one per group x topic-partition) are loaded, written and waited on by
``share_partitions.SharePartitions``:

- an acknowledgement is answered only once its state write is durable; a failed write rolls it
  back and answers the write's error;
- releases (RELEASE, lock expiry, a session's end) are written too, and wake parked fetches;
- a fetch that acquires nothing waits up to MaxWaitMs for an append to one of its partitions or
  a release, then answers with empty partitions.

The persister is the one constructor argument that decides durability: the broker gives the
share-state coordinator over ``__share_group_state``; without one, ``InMemoryPersister``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.coordinator.runtime.clock import Clock
from kafkette.coordinator.share.persister import (
    Persister,
    SharePartitionKey,
)
from kafkette.storage.topics import TopicInfo

from ..share.log_batches import log_batches
from ..share.memory_persister import InMemoryPersister
from ..share.sessions import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    SHARE_SESSION_LIMIT_REACHED,
    ShareSession,
    ShareSessionCache,
)
from ..share.share_partition import INVALID_REQUEST, AcquiredRange, SharePartition
from .cluster import ClusterInfo
from .record_service import EARLIEST, RecordService
from .share_partitions import PartitionRead, SharePartitions, SharePartitionSnapshot
from .topic_service import TopicService

log = logging.getLogger("kafkette.share")

UNKNOWN_TOPIC_OR_PARTITION = 3
NOT_LEADER_OR_FOLLOWER = 6
COORDINATOR_NOT_AVAILABLE = 15
UNKNOWN_TOPIC_ID = 100
TOPIC_AUTHORIZATION_FAILED = 29
FENCED_STATE_EPOCH = 124
LEADER_EPOCH = 0
_FIRST_READ_BYTES = 64 * 1024

# Broker configs (Kafka's names) and their defaults when unset.
BROKER_DEFAULTS = {
    "group.share.delivery.count.limit": 5,
    "group.share.partition.max.record.locks": 2000,
    "group.share.max.share.sessions": 2000,
    "group.share.record.lock.duration.ms": 30000,
}

# (topic id, partition, acknowledgement batches as (first, last, types))
AckBatch = tuple[int, int, Sequence[int]]
PartitionAcks = tuple[uuid.UUID, int, Sequence[AckBatch]]
# Registers a callback run when the request's connection closes, under a key (a new
# registration under the same key replaces the old one).
WhenClosed = Callable[[Hashable, Callable[[], object]], object]
# topic name -> whether the request's principal may READ it (None: no authorizer)
MayRead = Callable[[str], bool] | None


@dataclass(slots=True)
class PartitionAnswer:
    topic_id: uuid.UUID
    partition: int
    error: int = 0
    ack_error: int = 0
    leader_id: int = -1
    records: bytes = b""  # never None on the wire: librdkafka drops a null Records response
    acquired: list[AcquiredRange] = field(default_factory=list)


@dataclass(slots=True)
class ShareAnswer:
    """What ShareFetch / ShareAcknowledge answer (the handler encodes it)."""

    error: int = 0
    error_message: str | None = None
    lock_ms: int = 0
    partitions: list[PartitionAnswer] = field(default_factory=list)
    endpoints: dict[int, tuple[str, int]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ShareFetchParams:
    group_id: str
    member_id: str
    epoch: int
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    max_records: int
    batch_size: int
    topics: Sequence[PartitionAcks]  # every partition named, with its acks (maybe none)
    forgotten: Sequence[tuple[uuid.UUID, int]] = ()
    # A session partition of a topic it may not READ answers TOPIC_AUTHORIZATION_FAILED (its
    # acknowledgements too) and is neither fetched nor waited on, as Kafka's KafkaApis.
    may_read: MayRead = None


class ShareService:
    def __init__(self, config: Any, topics: TopicService, clock: Clock,
                 group_config: Callable[[str], dict[str, str]],
                 persister: Persister | None = None) -> None:
        self._config = config
        self._topics = topics
        self._clock = clock
        self._group_config = group_config  # group id -> its own share.* configs
        self._sessions: dict[int, ShareSessionCache] = {}  # node id -> its sessions
        self.partitions = SharePartitions(
            clock, persister if persister is not None else InMemoryPersister(),
            self._has_sessions)

    @property
    def persister(self) -> Persister:
        return self.partitions.persister

    def snapshot(self, group_id: str | None = None) -> list[SharePartitionSnapshot]:
        """The loaded share-partitions' figures (see ``SharePartitions.snapshot``)."""
        return self.partitions.snapshot(group_id)

    def _has_sessions(self, group_id: str) -> bool:
        return any(cache.has_group(group_id) for cache in self._sessions.values())

    # Configs ---------------------------------------------------------------------------------------
    def _broker_int(self, key: str) -> int:
        value = self._config.get(key)
        return int(value) if value is not None else BROKER_DEFAULTS[key]

    def _group(self, group_id: str, key: str) -> str | None:
        return self._group_config(group_id).get(key)

    def lock_ms(self, group_id: str) -> int:
        own = self._group(group_id, "share.record.lock.duration.ms")
        return int(own) if own else self._broker_int("group.share.record.lock.duration.ms")

    def _delivery_limit(self, group_id: str) -> int:
        own = self._group(group_id, "share.delivery.count.limit")
        return int(own) if own else self._broker_int("group.share.delivery.count.limit")

    def _read_committed(self, group_id: str) -> bool:
        return self._group(group_id, "share.isolation.level") == "read_committed"

    def sessions(self, node_id: int) -> ShareSessionCache:
        cache = self._sessions.get(node_id)
        if cache is None:
            cache = self._sessions[node_id] = ShareSessionCache(
                self._broker_int("group.share.max.share.sessions"))
        return cache

    # ShareFetch ------------------------------------------------------------------------------------
    async def fetch(self, cluster: ClusterInfo, records: RecordService, req: ShareFetchParams,
                    when_closed: WhenClosed | None = None) -> ShareAnswer:
        cache = self.sessions(cluster.node_id)
        group, member = req.group_id, req.member_id
        lock_ms = self.lock_ms(group)
        named = [(tid, p) for tid, p, _ in req.topics]
        with_acks = [t for t in req.topics if t[2]]
        if req.epoch == INITIAL_EPOCH:
            if with_acks:
                return ShareAnswer(INVALID_REQUEST, "Acknowledge data present in Initial Fetch "
                                   "Request", lock_ms)
            session = cache.open(group, member)
            if session is None:
                await asyncio.sleep(req.max_wait_ms / 1000)
                return ShareAnswer(SHARE_SESSION_LIMIT_REACHED, None, lock_ms)
            if when_closed is not None:
                when_closed(("share-session", group, member),
                            partial(self.session_closed, cluster.node_id, session))
        else:
            code, found = cache.check(group, member, req.epoch)
            if found is None:
                return ShareAnswer(code, None, lock_ms)
            session = found
            if req.epoch != FINAL_EPOCH:
                session.bump()
        if req.epoch != FINAL_EPOCH:
            session.add(named)
            session.forget(list(req.forgotten))
        answer = ShareAnswer(lock_ms=lock_ms)
        answers: dict[tuple[uuid.UUID, int], PartitionAnswer] = {}
        await self._acknowledge(cluster, group, member, with_acks, answers, answer,
                                req.may_read)
        if req.epoch == FINAL_EPOCH:
            self._end(cache, session)
            answer.partitions = list(answers.values())
            return answer
        order = list(session.partitions)
        if order:
            shift = req.epoch % len(order)
            order = order[shift:] + order[:shift]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + req.max_wait_ms / 1000
        while True:
            got, waits_on = await self._acquire(cluster, records, group, member, order, req,
                                                lock_ms, answers, answer)
            failed = any(a.error for a in answers.values()
                         if a.error != TOPIC_AUTHORIZATION_FAILED)
            if got or failed or loop.time() >= deadline or (not waits_on and answers):
                break
            await self.partitions.wait(records, waits_on, deadline - loop.time())
            if cache.get(group, member) is not session:
                break  # the session ended meanwhile (connection closed, replaced)
        answer.partitions = list(answers.values())
        return answer

    async def _acquire(self, cluster: ClusterInfo, records: RecordService, group: str,
                       member: str, order: list[tuple[uuid.UUID, int]], req: ShareFetchParams,
                       lock_ms: int, answers: dict[tuple[uuid.UUID, int], PartitionAnswer],
                       answer: ShareAnswer) -> tuple[int, list[tuple[TopicInfo, int]]]:
        """One pass over the session's partitions: (records acquired, partitions to wait on)."""
        remaining = max(req.max_records, 1)
        remaining_bytes = max(req.max_bytes, 1)
        read_committed = self._read_committed(group)
        delivery_limit = self._delivery_limit(group)
        taken = 0
        waits_on: list[tuple[TopicInfo, int]] = []
        for tid, p in order:
            ans = answers.get((tid, p))
            if ans is None:
                ans = answers[(tid, p)] = PartitionAnswer(tid, p)
            topic = self._resolve(cluster, records, tid, p, ans, answer)
            if topic is None:
                continue
            if req.may_read is not None and not req.may_read(topic.name):
                ans.error = TOPIC_AUTHORIZATION_FAILED
                continue
            waits_on.append((topic, p))
            if remaining <= 0:
                continue
            sp = await self.partitions.load(
                SharePartitionKey(group, tid, p), topic, records,
                reset=self._group(group, "share.auto.offset.reset") or "latest",
                delivery_limit=delivery_limit,
                max_in_flight=self._broker_int("group.share.partition.max.record.locks"))
            if sp is None:
                ans.error = COORDINATOR_NOT_AVAILABLE
                continue
            sp.delivery_limit = delivery_limit  # the group's config as of this fetch
            count, used_bytes = await self._acquire_from(
                sp, records, topic, p, ans, member, remaining, remaining_bytes,
                max(req.batch_size, 1), lock_ms, read_committed)
            remaining -= count
            remaining_bytes -= used_bytes
            taken += count
        return taken, waits_on

    async def _acquire_from(self, sp: SharePartition, records: RecordService, topic: TopicInfo,
                            p: int, ans: PartitionAnswer, member: str, max_records: int,
                            max_bytes: int, batch_size: int, lock_ms: int,
                            read_committed: bool) -> tuple[int, int]:
        """Acquire up to ``max_records`` (whole batches) of one partition for ``member``:
        (records acquired, bytes of them). The log is read in growing chunks (64 KiB first),
        so a fetch of a few hundred records does not read MaxBytes of the log."""
        taken = 0
        used = 0
        limit = min(max_bytes, _FIRST_READ_BYTES)
        parts: list[bytes] = []
        while taken < max_records and used < max_bytes:
            offset = sp.next_fetch_offset()
            if offset is None:
                break
            read = records.fetch([(None, topic.topic_id, [PartitionRead(p, offset, limit)])])
            reads, _total, _error = read.read(limit, read_committed)
            got = reads[0][0]
            if got.error == ErrorCode.offset_out_of_range:
                _, start, _ = await records.list_offset(topic.name, p, EARLIEST)
                self.partitions.persist_soon(sp, sp.skip_to(start))
                break
            if got.error:
                ans.error = got.error.value
                break
            if got.records is None:
                break
            data = got.records.read()
            batches = log_batches(data, got.aborted if read_committed else None)
            if not batches:
                break
            acquired = sp.acquire(member, batches, max_records=max_records - taken,
                                  batch_size=batch_size, lock_ms=lock_ms, read_from=offset)
            if acquired.changes:
                self.partitions.persist_soon(sp, acquired.changes)
            if acquired.ranges:
                chunk = data[acquired.byte_start:acquired.byte_end]
                parts.append(chunk)
                ans.acquired.extend(acquired.ranges)
                taken += acquired.count
                used += len(chunk)
            elif not acquired.changes:
                break  # nothing moved: the window is full or nothing is AVAILABLE here
            end = got.high_watermark if got.last_stable_offset < 0 else got.last_stable_offset
            if batches[-1].last_offset + 1 >= end:
                break  # read to the end of what is visible
            limit = min(max_bytes - used, limit * 4)
        if parts:
            ans.records = parts[0] if len(parts) == 1 else b"".join(parts)
        return taken, used

    def _resolve(self, cluster: ClusterInfo, records: RecordService, tid: uuid.UUID, p: int,
                 ans: PartitionAnswer, answer: ShareAnswer) -> TopicInfo | None:
        """The topic of a partition this node leads; else the partition's error is set."""
        topic = self._topics.get_by_id(tid)
        if topic is None:
            ans.error = UNKNOWN_TOPIC_ID
            return None
        if not records.has_partition(topic.name, p):
            ans.error = UNKNOWN_TOPIC_OR_PARTITION
            return None
        leader = cluster.leader(topic.name, p)
        if leader != cluster.node_id:
            ans.error = NOT_LEADER_OR_FOLLOWER
            ans.leader_id = leader
            address = cluster.address_of(leader) if leader >= 0 else None
            if address is not None:
                answer.endpoints[leader] = address
            return None
        return topic

    # ShareAcknowledge ------------------------------------------------------------------------------
    async def acknowledge(self, cluster: ClusterInfo, group: str, member: str, epoch: int,
                          acks: Sequence[PartitionAcks], may_read: MayRead = None
                          ) -> ShareAnswer:
        cache = self.sessions(cluster.node_id)
        lock_ms = self.lock_ms(group)
        if epoch == INITIAL_EPOCH:
            return ShareAnswer(123, None, lock_ms)  # INVALID_SHARE_SESSION_EPOCH
        code, session = cache.check(group, member, epoch)
        if session is None:
            return ShareAnswer(code, None, lock_ms)
        if epoch != FINAL_EPOCH:
            session.bump()
        answer = ShareAnswer(lock_ms=lock_ms)
        answers: dict[tuple[uuid.UUID, int], PartitionAnswer] = {}
        await self._acknowledge(cluster, group, member, [a for a in acks if a[2]], answers,
                                answer, may_read)
        for tid, p, _ in acks:  # every partition named is answered
            answers.setdefault((tid, p), PartitionAnswer(tid, p))
        if epoch == FINAL_EPOCH:
            self._end(cache, session)
        answer.partitions = list(answers.values())
        return answer

    async def _acknowledge(self, cluster: ClusterInfo, group: str, member: str,
                           acks: Sequence[PartitionAcks],
                           answers: dict[tuple[uuid.UUID, int], PartitionAnswer],
                           answer: ShareAnswer, may_read: MayRead = None) -> None:
        """Apply each partition's acknowledgements and wait until they are durable; a partition
        that fails keeps its records as they were (its ack error says why)."""
        merged: dict[tuple[uuid.UUID, int], list[AckBatch]] = {}
        for tid, p, batches in acks:  # a topic may be named twice: merged
            merged.setdefault((tid, p), []).extend(batches)
        writes = []
        for (tid, p), batches in merged.items():
            ans = answers.get((tid, p))
            if ans is None:
                ans = answers[(tid, p)] = PartitionAnswer(tid, p)
            topic = self._topics.get_by_id(tid)
            if topic is None:
                ans.ack_error = UNKNOWN_TOPIC_ID
                continue
            if may_read is not None and not may_read(topic.name):
                ans.ack_error = TOPIC_AUTHORIZATION_FAILED
                continue
            leader = cluster.leader(topic.name, p)
            if leader != cluster.node_id:
                ans.ack_error = NOT_LEADER_OR_FOLLOWER
                ans.leader_id = leader
                address = cluster.address_of(leader) if leader >= 0 else None
                if address is not None:
                    answer.endpoints[leader] = address
                continue
            key = SharePartitionKey(group, tid, p)
            sp = self.partitions.get(key)
            if sp is None:
                ans.ack_error = UNKNOWN_TOPIC_OR_PARTITION
                continue
            code, outcome = sp.acknowledge(member, batches)
            if outcome is None:
                ans.ack_error = code
                continue
            writes.append((ans, sp, outcome))
        if not writes:
            return
        codes = await asyncio.gather(*(self.partitions.write(sp, outcome.changes,
                                                             outcome.start_offset)
                                       for _, sp, outcome in writes))
        for (ans, sp, outcome), code in zip(writes, codes, strict=True):
            if code:
                sp.rollback(outcome)
                ans.ack_error = code
            else:
                sp.commit()
            self.partitions.wake(sp.key)

    # Releases --------------------------------------------------------------------------------------
    def session_closed(self, node_id: int, session: ShareSession) -> None:
        """The connection that opened ``session`` closed: its member's records are free now."""
        self._end(self.sessions(node_id), session)

    def _end(self, cache: ShareSessionCache, session: ShareSession) -> None:
        """``session`` is over: its member's records in its partitions are released."""
        if cache.remove(session):
            self.partitions.release(session.group_id, session.member_id, session.partitions)
            self.partitions.maybe_unload(session.group_id)

    def member_left(self, group_id: str, member_id: str) -> None:
        """A share group member left or was fenced (the group coordinator's listener).

        Its records held under a live share session stay held: librdkafka leaves (heartbeat
        epoch -1) *before* its closing ShareAcknowledge (epoch -1) carries the last acks, and
        Kafka's fencing does not touch records; that session's end, or the locks, free them.
        Records it holds outside any live session are released now."""
        kept: set[tuple[uuid.UUID, int]] = set()
        for cache in self._sessions.values():
            session = cache.get(group_id, member_id)
            if session is not None:
                kept.update(session.partitions)
        self.partitions.release_except(group_id, member_id, kept)

    def unload_group(self, group_id: str) -> None:
        """Drop the group's share-partitions from memory (their durable state was reset or
        deleted: Alter/DeleteShareGroupOffsets, DeleteGroups); the next fetch reloads them."""
        self.partitions.unload_group(group_id)

    async def stop(self) -> None:
        await self.partitions.stop()
