"""The group coordinator shard of one ``__consumer_offsets`` partition (Kafka's
GroupCoordinatorShard): one method per request kind returning a Result (writes) or a value
(reads), ``replay`` dispatching records by type to the group and offset managers, load/unload
hooks and the offsets-retention timer. The runtime (runtime/coordinator_runtime.py) runs these
and owns the log; the service calls the request methods by reference
(``GroupCoordinatorShard.heartbeat``...).

Groups are reached one way each: classic groups in ``group_manager.groups``, consumer groups
(KIP-848) in ``consumer_groups``, share groups (KIP-932) in ``share_groups``; the consumer- and
share-group managers through ``consumer_manager()`` / ``share_manager()``, which create them
(and import their modules) on first use. One group id names one group of one type.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kafkette.protocol import group_records
from kafkette.protocol.group_records import GroupMetadataKey, OffsetCommitKey, RecordDecodeError

from ..runtime.coordinator_log import RawRecord, TxnMarker, TxnRecordKey
from ..runtime.coordinator_runtime import ShardContext
from ..runtime.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    GROUP_ID_NOT_FOUND,
    INCONSISTENT_GROUP_PROTOCOL,
    NON_EMPTY_GROUP,
    NONE,
    PRODUCER_FENCED,
    UNSTABLE_OFFSET_COMMIT,
    CoordinatorError,
)
from ..runtime.result import Result
from .classic.classic_group import GroupState
from .classic.group_manager import GroupMetadataManager
from .events import GroupEventLog
from .group_config import CoordinatorConfig
from .offsets.offset_manager import CommitPartition, FetchedTopic, OffsetMetadataManager
from .offsets.offset_replay import RawBatches
from .overview import GroupOverview, OverviewSource
from .record_builders import group_tombstone
from .requests import (
    ClassicHeartbeat,
    DescribedGroup,
    JoinRequest,
    JoinResult,
    OffsetCommit,
    OffsetCommitRequest,
    SyncRequest,
    SyncResult,
)

if TYPE_CHECKING:
    from .consumer.consumer_group_state import ConsumerGroup
    from .consumer.consumer_manager import ConsumerGroupManager
    from .consumer.describe import DescribedGroup as DescribedConsumerGroup
    from .consumer.heartbeat import HeartbeatRequest
    from .share.share_group import ShareGroup
    from .share.share_heartbeat import ShareHeartbeatRequest
    from .share.share_manager import DescribedShareGroup, ShareGroupManager

log = logging.getLogger("kafkette.coordinator")

__all__ = ["CommitPartition", "CoordinatorConfig", "DescribedGroup", "GroupCoordinatorShard",
           "JoinRequest", "JoinResult", "SyncRequest", "SyncResult"]


class GroupCoordinatorShard:
    def __init__(self, partition: int, context: ShardContext, config: CoordinatorConfig) -> None:
        self.partition = partition
        self.context = context
        self.config = config
        self.group_manager = GroupMetadataManager(context, config)
        self.offset_manager = OffsetMetadataManager(partition, config.offset_metadata_max_bytes)
        # KIP-848 consumer groups: the manager is created (and its modules imported) on the
        # first consumer-group record or request; classic and simple groups never need it
        self.consumer: ConsumerGroupManager | None = None
        # group id -> consumer group: the manager's (this empty one until there is a manager)
        self.consumer_groups: dict[str, ConsumerGroup] = {}
        # KIP-932 share groups: likewise, created on the first share-group record or request
        self.share: ShareGroupManager | None = None
        self.share_groups: dict[str, ShareGroup] = {}

    def consumer_manager(self) -> ConsumerGroupManager:
        """The consumer-group manager, created on first use."""
        manager = self.consumer
        if manager is None:
            from .consumer.consumer_manager import ConsumerGroupManager

            manager = ConsumerGroupManager(self.context, self.config, self.group_manager)
            self.consumer = manager
            self.consumer_groups = manager.groups
        return manager

    def share_manager(self) -> ShareGroupManager:
        """The share-group manager, created on first use."""
        manager = self.share
        if manager is None:
            from .share.share_manager import ShareGroupManager

            manager = ShareGroupManager(self.context, self.config, self._other_type)
            self.share = manager
            self.share_groups = manager.groups
        return manager

    def _other_type(self, group_id: str) -> bool:
        """True when a classic or consumer group has this id."""
        return group_id in self.group_manager.groups or group_id in self.consumer_groups

    @property
    def groups(self) -> dict:
        return self.group_manager.groups

    @property
    def events(self) -> GroupEventLog:
        return self.group_manager.events

    @property
    def _retention_key(self) -> tuple[str, int]:
        return ("offsets-expiration", self.partition)

    # Lifecycle -------------------------------------------------------------------------------
    def on_loaded(self) -> None:
        self.events.loaded()
        self.group_manager.on_loaded()
        if self.consumer is not None:
            self.consumer.on_loaded()
        if self.share is not None:
            self.share.on_loaded()
        self._schedule_retention_check()

    def on_unloaded(self, error: int) -> None:
        self.context.cancel(self._retention_key)
        self.group_manager.on_unloaded(error)

    # Replay ----------------------------------------------------------------------------------
    def replay_all(self, records: Iterable[RawRecord] | RawBatches) -> int:
        """Apply records in log order (load and live writes alike); returns how many. The
        offset manager stores the offset records it knows the layout of and hands every
        other record to ``replay``."""
        return self.offset_manager.replay_records(records, self.replay)

    def replay(self, key: Any, value: bytes | None) -> None:
        """Apply one ``__consumer_offsets`` record (value None: a tombstone), by record type
        (Kafka's GroupCoordinatorShard.replay)."""
        if type(key) is not bytes:  # TxnRecordKey / TxnMarker (runtime/coordinator_log.py)
            self._replay_transactional(key, value)
            return
        try:
            decoded: Any
            if key[:1] == b"\x00" and key[1:2] in _CLASSIC_TYPES:
                decoded = group_records.decode_key(key)  # what consumer_group_records hands on
            elif key[:1] == b"\x00" and key[1:2] in _SHARE_TYPES:
                from kafkette.protocol import share_group_records as sgr

                share_key = sgr.decode_key(key)
                self.share_manager().replay(share_key, sgr.decode_value(share_key, value))
                return
            else:  # a consumer-group record type (3-8, 16), or unknown
                from kafkette.protocol import consumer_group_records as cgr

                decoded = cgr.decode_key(key)
                if type(decoded) in cgr.RECORD_TYPES:
                    self.consumer_manager().replay(
                        decoded, cgr.decode_value(decoded, value))  # type: ignore[arg-type]  # the record key's type fixes the value's type
                    return
            if isinstance(decoded, GroupMetadataKey):
                group_value = None if value is None else group_records.decode_value(decoded, value)
                self.group_manager.replay_group(decoded.group, group_value)  # type: ignore[arg-type]  # the record key's type fixes the value's type
                if value is None:
                    self.offset_manager.forget_prefixes()
                return
        except RecordDecodeError as exc:
            log.warning("skipping undecodable __consumer_offsets-%d record: %s", self.partition, exc)
            return
        if not isinstance(decoded, OffsetCommitKey):
            log.warning("skipping __consumer_offsets-%d record of unknown type %d",
                        self.partition, decoded.version)
            return
        if value is None:
            self.offset_manager.replay_tombstone(decoded, key)
            return
        if decoded.group not in self.consumer_groups:
            self.group_manager.ensure_group(decoded.group)
        self.offset_manager.replay_commit(decoded, key, value)

    def _replay_transactional(self, key: object, value: bytes | None) -> None:
        """A transactional offset commit stays pending until its marker: COMMIT materialises
        it as a plain commit, ABORT drops it (Kafka's replayEndTransactionMarker)."""
        if isinstance(key, TxnMarker):
            for group_id in self.offset_manager.end_transaction(key.producer_id,
                                                                key.producer_epoch, key.commit):
                self.group_manager.ensure_group(group_id)
            return
        if not isinstance(key, TxnRecordKey):
            return
        try:
            decoded = _decode_any_key(key.key)
        except RecordDecodeError as exc:
            log.warning("skipping undecodable __consumer_offsets-%d record: %s", self.partition,
                        exc)
            return
        if isinstance(decoded, OffsetCommitKey):
            # Kafka creates the simple group on a transactional offset record too.
            if value is not None and decoded.group not in self.consumer_groups:
                self.group_manager.ensure_group(decoded.group)
            self.offset_manager.replay_txn_offset(key.producer_id, key.producer_epoch, decoded,
                                                  key.key, value)

    # Classic group membership (writes) -------------------------------------------------------
    def join_group(self, request: JoinRequest) -> Result:
        group = self.consumer_groups.get(request.group_id)
        if group is None and request.group_id in self.share_groups:
            answer = self.context.new_future()  # Kafka: a share group's id is not for JoinGroup
            answer.set_result(JoinResult(INCONSISTENT_GROUP_PROTOCOL, request.member_id))
            return Result((), answer)
        if group is None:
            return self.group_manager.join_group(request)
        consumer = self.consumer_manager()
        if not group.is_empty():  # a classic member in a consumer group (mixed group)
            return consumer.classic_join(request)
        tombstones = consumer.downgrade_empty(request.group_id)
        result = self.group_manager.join_group(request)
        return Result(tombstones + list(result.records), result.response, replay=False,
                      on_durable=result.on_durable)

    # Consumer groups (KIP-848) ---------------------------------------------------------------
    def consumer_group_heartbeat(self, request: HeartbeatRequest) -> Result:
        if self.share_groups and request.group_id in self.share_groups:
            raise CoordinatorError(GROUP_ID_NOT_FOUND,
                                   f"Group {request.group_id} is not a consumer group.")
        return self.consumer_manager().heartbeat(request)

    def consumer_group_describe(self, group_ids: list[str]
                                ) -> list[tuple[str, int, str | None,
                                                DescribedConsumerGroup | None]]:
        consumer = self.consumer_manager()
        return [(gid, GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.", None)
                if gid in self.share_groups else (gid, *consumer.describe(gid))
                for gid in group_ids]

    # Share groups (KIP-932) ------------------------------------------------------------------
    def share_group_heartbeat(self, request: ShareHeartbeatRequest) -> Result:
        return self.share_manager().heartbeat(request)

    def share_group_describe(self, group_ids: list[str]
                             ) -> list[tuple[str, int, str | None, DescribedShareGroup | None]]:
        share = self.share_manager()
        return [(gid, *share.describe(gid)) for gid in group_ids]

    def sync_group(self, request: SyncRequest) -> Result:
        if request.group_id in self.consumer_groups:
            return self.consumer_manager().classic_sync(request)
        return self.group_manager.sync_group(request)

    def heartbeat(self, beat: ClassicHeartbeat) -> Result:
        group_id, member_id, instance_id, generation = beat
        if group_id in self.consumer_groups:
            return self.consumer_manager().classic_heartbeat(group_id, member_id, instance_id,
                                                             generation)
        return self.group_manager.heartbeat(group_id, member_id, instance_id, generation)

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]) -> Result:
        if group_id in self.consumer_groups:
            return self.consumer_manager().classic_leave(group_id, members)
        return self.group_manager.leave_group(group_id, members)

    # Offsets (writes) ------------------------------------------------------------------------
    def commit_offsets(self, commit: OffsetCommit) -> Result:
        """Response: the error of each partition (request order)."""
        request, partitions = commit
        group_id = request.group_id
        consumer_group = self.consumer_groups.get(group_id)
        # While appends fail, a commit can be undone (else a failure reloads the partition).
        undoable = self.context.writes_failing
        if consumer_group is not None:
            return self.offset_manager.commit(consumer_group, request, partitions,
                                              self.context.now_ms(), undoable=undoable)
        gm = self.group_manager
        group = gm.groups.get(group_id)
        if group is None and group_id in self.share_groups:  # share groups commit no offsets
            return Result((), [GROUP_ID_NOT_FOUND] * len(partitions))
        result = self.offset_manager.commit(group, request, partitions, self.context.now_ms(),
                                            undoable=undoable)
        if result.records:
            if group is None:
                gm.ensure_group(group_id)  # a simple group
                result.undo = self._undo_simple_group(group_id, result.undo)
            elif group.members:  # a simple group has none to touch
                gm.touch_member(group, request.member_id)
            gm.events.committed(group_id, len(result.records))
        return result

    def _undo_simple_group(self, group_id: str, undo_offsets: Callable[[], None] | None
                           ) -> Callable[[], None] | None:
        """A failed first commit of a simple group: its offsets, then the group, undone."""
        if undo_offsets is None:
            return None

        def undo() -> None:
            undo_offsets()
            group = self.groups.get(group_id)
            if group is not None and not group.members \
                    and group_id not in self.offset_manager.offsets:
                del self.groups[group_id]
        return undo

    def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]) -> Result:
        """Response: (group error, [(topic, [(partition, error)])])."""
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:  # allowed in any state
            records, out = self.offset_manager.delete(consumer_group, topics)
            return Result(records, (NONE, out))
        group = self.groups.get(group_id)
        if group is None or group.is_in(GroupState.DEAD):
            return Result((), (GROUP_ID_NOT_FOUND, []))
        if group.is_in(GroupState.STABLE, GroupState.PREPARING_REBALANCE,
                       GroupState.COMPLETING_REBALANCE) and not group.uses_consumer_protocol():
            return Result((), (NON_EMPTY_GROUP, []))
        records, out = self.offset_manager.delete(group, topics)
        return Result(records, (NONE, out))

    def delete_groups(self, group_ids: list[str]) -> Result:
        """Response: [(group id, error)]."""
        results = []
        records: list[RawRecord] = []
        for gid in group_ids:
            share_group = self.share_groups.get(gid)
            if share_group is not None:
                share_records: list[RawRecord] = []
                code = self.share_manager().delete(share_group, share_records)
                if code == NONE:
                    records.extend(share_records)
                results.append((gid, code))
                continue
            consumer_group = self.consumer_groups.get(gid)
            if consumer_group is not None:
                group_records: list[RawRecord] = []
                code = self.consumer_manager().delete(consumer_group, group_records)
                if code == NONE:
                    self.offset_manager.delete_all(gid, records)
                    records.extend(group_records)
                results.append((gid, code))
                continue
            group = self.groups.get(gid)
            if group is None or group.is_in(GroupState.DEAD):
                results.append((gid, GROUP_ID_NOT_FOUND))
            elif not group.is_in(GroupState.EMPTY):
                results.append((gid, NON_EMPTY_GROUP))
            else:
                self.offset_manager.delete_all(gid, records)
                records.append(group_tombstone(gid))
                results.append((gid, NONE))
        return Result(records, results)

    def on_partitions_deleted(self, topic_partitions: list[tuple[str, int]]) -> Result:
        """Tombstones for every group's committed offsets of deleted topic partitions."""
        records: list[RawRecord] = []
        self.offset_manager.delete_partitions(topic_partitions, records)
        if records:
            log.info("__consumer_offsets-%d: deleting %d offsets of deleted partitions",
                     self.partition, len(records))
        return Result(records, len(records))

    # Transactions (writes) -------------------------------------------------------------------
    def txn_commit_offsets(self, request: OffsetCommitRequest, producer_id: int,
                           producer_epoch: int, partitions: list[CommitPartition]) -> Result:
        """TxnOffsetCommit: checked like OffsetCommit, written in the producer's transaction
        (pending until its marker). Response: per-partition errors."""
        if self.offset_manager.txn.fenced(producer_id, producer_epoch):
            return Result((), [PRODUCER_FENCED] * len(partitions))
        # TxnOffsetCommit v0-2 carry no member or generation: Kafka accepts them unchecked.
        legacy = request.generation < 0 and not request.member_id and request.instance_id is None
        group_id = request.group_id
        consumer_group = self.consumer_groups.get(group_id)
        if consumer_group is not None:  # KIP-848 group: the generation is the member epoch
            result = self.offset_manager.commit(consumer_group, request, partitions,
                                                self.context.now_ms(), validate=not legacy,
                                                store=False)
        else:
            group = self.groups.get(group_id)
            if group is not None and group.is_in(GroupState.DEAD):
                return Result((), [COORDINATOR_NOT_AVAILABLE] * len(partitions))
            result = self.offset_manager.commit(group, request, partitions,
                                                self.context.now_ms(),
                                                validate=not (legacy and group is not None),
                                                store=False)
        records: list[RawRecord] = [(TxnRecordKey(producer_id, producer_epoch, k), v)
                                    for k, v in result.records
                                    if isinstance(k, bytes)]  # all are: offset keys
        return Result(records, result.response)

    def complete_transaction(self, producer_id: int, producer_epoch: int, commit: bool) -> Result:
        """The transaction's marker on this partition (Kafka's scheduleTransactionCompletion)."""
        return Result([(TxnMarker(producer_id, producer_epoch, commit), None)], None)

    def fetch_stable_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None
                             ) -> list[FetchedTopic]:
        """fetch_offsets with require_stable: a partition with a pending transactional commit
        answers UNSTABLE_OFFSET_COMMIT."""
        rows = self.fetch_offsets(group_id, topics)
        unstable = self.offset_manager.txn.unstable(group_id)
        if not unstable:
            return rows
        return [(topic, [(p, -1, -1, "", UNSTABLE_OFFSET_COMMIT) if (topic, p) in unstable
                         else (p, o, ep, md, err) for p, o, ep, md, err in parts])
                for topic, parts in rows]

    # Reads -----------------------------------------------------------------------------------
    def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None
                      ) -> list[FetchedTopic]:
        """[(topic, [(partition, offset, leader_epoch, metadata, error)])]; all if topics is None.
        A share group commits no offsets: GROUP_ID_NOT_FOUND, as Kafka answers."""
        if self.share_groups and group_id in self.share_groups:
            raise CoordinatorError(GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
        return self.offset_manager.fetch(
            group_id, topics, group_id in self.groups or group_id in self.consumer_groups)

    def validate_offset_fetch(self, group_id: str, member_id: str | None,
                              member_epoch: int) -> int:
        """OffsetFetch v9's member id/epoch against a consumer group (others: no check)."""
        group = self.consumer_groups.get(group_id)
        if group is None:
            return NONE
        try:
            group.validate_offset_fetch(member_id, member_epoch)
        except CoordinatorError as exc:
            return exc.code
        return NONE

    def describe_group(self, group_id: str, version: int) -> DescribedGroup:
        if group_id in self.consumer_groups or group_id in self.share_groups:
            # KIP-1099: not a classic group
            if version >= 6:
                return DescribedGroup(group_id, GROUP_ID_NOT_FOUND, "Dead", "", "", [],
                                      f"Group {group_id} is not a classic group.")
            return DescribedGroup(group_id, NONE, "Dead", "", "", [])
        return self.group_manager.describe_group(group_id, version)

    # Overviews (the admin console and /metrics) -------------------------------------------------
    def overview_sources(self) -> list[OverviewSource]:
        """The managers whose groups this shard holds, one per group type in use."""
        sources: list[OverviewSource] = [self.group_manager]
        if self.consumer is not None:
            sources.append(self.consumer)
        if self.share is not None:
            sources.append(self.share)
        return sources

    def group_overview(self, group_id: str) -> GroupOverview | None:
        """The group, whatever its type; None if this shard has no such group."""
        for source in self.overview_sources():
            found = source.overview(group_id)
            if found is not None:
                return found
        return None

    def group_overviews(self) -> list[GroupOverview]:
        """Every group of this shard, of every type."""
        return [g for source in self.overview_sources() for g in source.overviews()]

    def list_groups(self, states: set[str], types: set[str]) -> list[tuple[str, str, str, str]]:
        consumer = self.consumer
        rows = self.group_manager.list_groups(states, types)
        if consumer is not None:
            rows = rows + consumer.list_groups(states, types)
        if self.share is not None:
            rows = rows + self.share.list_groups(states, types)
        return rows

    # Offsets retention -----------------------------------------------------------------------
    def _schedule_retention_check(self) -> None:
        self.context.schedule(self._retention_key, self.config.retention_check_interval_ms,
                              lambda _s: self.cleanup_group_metadata())

    def cleanup_group_metadata(self) -> Result:
        """Expired offsets, and Empty groups left without offsets, as tombstones."""
        records: list[RawRecord] = []
        now = self.context.now_ms()
        for gid, group in list(self.groups.items()):
            if self.offset_manager.expire(group, now, self.config.offsets_retention_ms, records) \
                    and group.is_in(GroupState.EMPTY):
                records.append(group_tombstone(gid))
        for consumer_group in list(self.consumer_groups.values()):
            if self.offset_manager.expire(consumer_group, now,
                                          self.config.offsets_retention_ms, records) \
                    and consumer_group.is_empty():
                self.consumer_manager().delete(consumer_group, records)
        if records:
            log.info("offsets retention: writing %d tombstones for __consumer_offsets-%d",
                     len(records), self.partition)
        self._schedule_retention_check()
        return Result(records, None)


# Key types group_records decodes (offset commits v0/v1, group metadata): consumer_group_records
# hands these to it, so decoding them there gives the same keys without loading that module.
_CLASSIC_TYPES = (b"\x00", b"\x01", b"\x02")
# Share group record types 10-15 (share_group_records; type 9 existed in Kafka 4.0 only).
_SHARE_TYPES = tuple(bytes((t,)) for t in range(10, 16))


def _decode_any_key(data: bytes) -> Any:
    """consumer_group_records.decode_key, importing that module only for its own record types."""
    if data[:1] == b"\x00" and data[1:2] in _CLASSIC_TYPES:
        return group_records.decode_key(data)
    from kafkette.protocol import consumer_group_records as cgr

    return cgr.decode_key(data)
