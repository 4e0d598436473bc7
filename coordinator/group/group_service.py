"""The group coordinator service (Kafka's GroupCoordinatorService): what the group API handlers
call. Routes a group to its ``__consumer_offsets`` partition, fans multi-group requests out over
the shards, runs ops through the runtime and maps every failure to the Kafka error code the
request answers with. The only place that turns exceptions into codes.

Which node leads each partition is explicit (``owners``; ``resign``/``elect`` move it).

Hot paths: Heartbeat and OffsetCommit
=====================================

Operations. A steady consumer heartbeats every few seconds and commits after every poll; both
arrive over and over with the same group, member and partitions. Per request:

- Heartbeat: broker/handlers/groups.py ``handle_heartbeat`` -> ``GroupCoordinator.heartbeat``
  -> ``PartitionContext.answer(GroupCoordinatorShard.heartbeat, (group, member, instance,
  generation))`` (runtime/coordinator_runtime.py) -> ``GroupCoordinatorShard.heartbeat`` ->
  ``GroupMetadataManager.heartbeat``: a code, answered now (no records) unless a write is
  pending, then a DurableFuture of it.
- OffsetCommit: broker/handlers/offsets.py ``_CommitPlan`` (one per distinct request: the
  ``OffsetCommitRequest`` and the response layout are reused by repeats) ->
  ``GroupCoordinator.commit_offsets`` -> ``PartitionContext.answer(GroupCoordinatorShard.
  commit_offsets, (request, partitions), on_error, plan.build)`` -> ``OffsetMetadataManager.
  commit`` (builds the records and stores them) -> runtime batch -> log append -> the
  DurableFuture completes with ``build(codes)``, the response, in the flush that made it durable.

Goals. No object per request that is not part of the answer: ops are shard methods called by
reference with one request value (no closure, no call by name; a tuple where the request has
several parts: ``answer``'s fixed arity costs ~0.2 µs less than ``*args``), errors map through
C-level partials, the response is mapped once in the runtime (no second future, no loop turn).
No reach-through: the service uses only the runtime's public ``answer``/``write``; the shard
does not know the offset store's byte layout nor the wire response.

Plan (the inline copies, and what must stay equal):

- ``heartbeat`` inlines ``context_for`` (started, partition memo, owner check) and ``_write``
  (CoordinatorError -> ``on_error``); ``context_for`` inlines ``partition_for`` (the memo dict
  of the module function). Changing routing means changing all three.
- ``_commit`` inlines ``_write`` with a ``partial`` error mapping.
- ``PartitionContext.answer`` repeats ``write``'s first lines and inlines ``pending()``: both
  must check state, run the op and reload on a bug the same way.
- ``OffsetMetadataManager._store_built`` (a commit's own records) must store what
  ``replay_records`` stores for the same bytes, and offset_replay.py's bulk path what the
  per-record path stores (tests/coordinator/test_commit_records.py, test_offset_store.py).
- group_manager.py answers heartbeats with prebuilt Results and compares states as module
  globals (``STATE_*``), and ``GroupCoordinatorShard.heartbeat`` routes to consumer groups
  first: the same answers ``ClassicGroup``'s validation would give.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from ..runtime.clock import Clock
from ..runtime.coordinator_log import CoordinatorLog
from ..runtime.coordinator_runtime import PartitionContext, State
from ..runtime.error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    INVALID_GROUP_ID,
    INVALID_REQUEST,
    INVALID_SESSION_TIMEOUT,
    NONE,
    NOT_COORDINATOR,
    UNKNOWN_TOPIC_OR_PARTITION,
    UNSUPPORTED_VERSION,
    CoordinatorError,
    error_code,
)
from ..runtime.leadership import CoordinatorRuntime
from ..runtime.partitioning import partition_for, partitions_memo
from ..runtime.serving import SERVING_NODE
from .group_config import CoordinatorConfig
from .group_shard import GroupCoordinatorShard
from .offsets.offset_manager import FetchedTopic
from .overview import GroupOverview
from .requests import (
    CommitPartition,
    DescribedGroup,
    JoinRequest,
    JoinResult,
    OffsetCommitRequest,
    SyncRequest,
    SyncResult,
)

if TYPE_CHECKING:  # KIP-848 modules: imported when a consumer group first appears
    from .consumer.describe import DescribedGroup as DescribedConsumerGroup
    from .consumer.heartbeat import HeartbeatRequest, HeartbeatResult
    from .share.share_service import ShareGroupService

log = logging.getLogger("kafkette.coordinator")
T = TypeVar("T")
GROUP = 0


def _failed_commit(count: int, map_response: Callable[[list[int]], Any] | None,
                   exc: BaseException) -> Any:
    """What a commit of ``count`` partitions answers when its op or its append fails."""
    codes = [error_code(exc)] * count
    return codes if map_response is None else map_response(codes)


class GroupCoordinator:
    """The service object the broker holds as ``broker.coordinator``."""

    def __init__(self, node_id: int, num_partitions: int, clock: Clock,
                 config: CoordinatorConfig,
                 log_factory: Callable[[int], CoordinatorLog],
                 partition_count: Callable[[str], int] | None = None) -> None:
        self.node_id = node_id
        self.num_partitions = num_partitions
        self._partitions = partitions_memo(num_partitions)  # group id -> partition
        self.clock = clock
        self.config = config
        # partitions of a topic (0: no such topic), for OffsetCommit/OffsetDelete validation
        self._partition_count = partition_count or (lambda _topic: 2**31 - 1)
        self.runtime = CoordinatorRuntime(
            clock, log_factory,
            lambda ctx: GroupCoordinatorShard(ctx.partition, ctx, config),
            config.append_linger_ms, config.commit_timeout_ms)
        self.owners: dict[int, int] = {}
        self.started = False
        self._loads: list[asyncio.Future] = []
        self._share: ShareGroupService | None = None

    # Lifecycle -------------------------------------------------------------------------------
    async def start(self, wait: bool = True) -> None:
        """Become leader of every partition and replay their logs."""
        t0 = time.perf_counter()
        for p in range(self.num_partitions):
            self.owners[p] = self.node_id
        self.started = True
        self._loads = [asyncio.ensure_future(self._load(p)) for p in range(self.num_partitions)]
        if wait:
            counts = await asyncio.gather(*self._loads)
            log.info("group coordinator loaded %d records from %d partitions in %.0f ms",
                     sum(counts), self.num_partitions, (time.perf_counter() - t0) * 1000)

    async def _load(self, partition: int) -> int:
        try:
            return await self.runtime.load(partition)
        except Exception:
            log.exception("loading __consumer_offsets-%d failed", partition)
            raise

    async def stop(self) -> None:
        for task in self._loads:
            task.cancel()
        await self.runtime.close()
        self.started = False

    def resign(self, partition: int, new_owner: int = -1) -> None:
        """Leadership of ``partition`` moves away (tests; the broker's cluster emulation)."""
        self.runtime.unload(partition)
        self.owners[partition] = new_owner

    async def elect(self, partition: int, node_id: int | None = None) -> None:
        """Take over a partition (for ``node_id``, default this node): replay its log again."""
        self.owners[partition] = self.node_id if node_id is None else node_id
        await self.runtime.load(partition)

    def _serving(self) -> int:
        node = SERVING_NODE.get()
        return self.node_id if node is None else node

    # Routing ---------------------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        p = self._partitions.get(group_id)
        return partition_for(group_id, self.num_partitions) if p is None else p

    def coordinator_node(self, group_id: str) -> int | None:
        return self.owners.get(self.partition_for(group_id))

    def context_for(self, group_id: str) -> PartitionContext:
        """The context of a group's partition or CoordinatorError(15/16); its write/read raise
        14/16 when it is (re)loading or closed (Kafka's runtime checks)."""
        if not self.started:
            raise CoordinatorError(COORDINATOR_NOT_AVAILABLE)
        p = self._partitions.get(group_id)  # self.partition_for, inlined
        if p is None:
            p = partition_for(group_id, self.num_partitions)
        ctx = self.runtime.contexts.get(p)
        node = SERVING_NODE.get()  # self._serving(), inlined: every group request comes here
        if ctx is None or self.owners.get(p) != (self.node_id if node is None else node):
            raise CoordinatorError(NOT_COORDINATOR)
        return ctx

    def shard_for(self, group_id: str) -> GroupCoordinatorShard:
        """The group's shard as it is now (tests and tools; requests go through the runtime)."""
        ctx = self.context_for(group_id)
        ctx.check()
        return ctx.shard

    def loading(self) -> bool:
        """True while a partition this node leads is (re)loading its log."""
        return self.runtime.loading()

    def active_shards(self) -> list[GroupCoordinatorShard]:
        """The loaded shards this node leads, as they are now (the admin console's view)."""
        me = self._serving()
        return [ctx.shard for p, ctx in self.runtime.contexts.items()
                if ctx.state is State.ACTIVE and ctx.shard is not None
                and self.owners.get(p) == me]

    def group_overviews(self) -> list[GroupOverview]:
        """Every group of the loaded shards this node leads, of every type, sorted by id."""
        return sorted((g for shard in self.active_shards() for g in shard.group_overviews()),
                      key=lambda g: g.group_id)

    def group_overview(self, group_id: str) -> GroupOverview | None:
        """The group (any type) if this node coordinates it and its shard is loaded."""
        try:
            return self.shard_for(group_id).group_overview(group_id)
        except CoordinatorError:
            return None

    def _write(self, group_id: str, op: Callable[..., Any], *args: Any,
               on_error: Callable[[BaseException], T],
               map_response: Callable[[Any], Any] | None = None) -> Any:
        """Run write op ``op(shard, *args)`` on the group's shard: its response (mapped by
        ``map_response``) now, or a future of it (resolved once durable); a failure becomes
        ``on_error(exception)`` (map it with ``error_code``)."""
        try:
            response, waiter = self.context_for(group_id).write(
                op, *args, on_error=on_error, map_response=map_response)
        except CoordinatorError as exc:
            return on_error(exc)
        return response if waiter is None else waiter

    async def _read(self, group_id: str, op: Callable[[GroupCoordinatorShard], T]) -> T:
        return await self.context_for(group_id).read(op)

    def _by_partition(self, group_ids: list[str]) -> list[list[str]]:
        """``group_ids`` grouped by their partition, each group in request order."""
        by_partition: dict[int, list[str]] = {}
        for gid in group_ids:
            by_partition.setdefault(self.partition_for(gid), []).append(gid)
        return list(by_partition.values())

    async def read_groups(self, group_ids: list[str],
                          op: Callable[[GroupCoordinatorShard, list[str]], list[T]],
                          failed: Callable[[str, CoordinatorError], T]) -> list[T]:
        """One row per group id, in request order, as committed: ``op(shard, ids)`` answers
        the ids of one shard (a row each, in their order), one read per shard; the ids of a
        shard that cannot be read get ``failed(group id, error)``."""
        rows: dict[str, T] = {}
        for ids in self._by_partition(group_ids):
            def read(shard: GroupCoordinatorShard, ids: list[str] = ids) -> list[T]:
                return op(shard, ids)
            try:
                answered = await self._read(ids[0], read)
            except CoordinatorError as exc:
                answered = [failed(g, exc) for g in ids]
            rows.update(zip(ids, answered, strict=True))
        return [rows[g] for g in group_ids]

    # FindCoordinator -------------------------------------------------------------------------
    def find_coordinator(self, key: str, key_type: int) -> tuple[int, int, str, int]:
        """(error, node id, "", -1) of the coordinator of ``key``: the broker fills in that
        node's address as advertised on the listener the request came in on."""
        if key_type != GROUP:  # transactional ids go to the transaction coordinator
            return INVALID_REQUEST, -1, "", -1
        if not self.started:
            return COORDINATOR_NOT_AVAILABLE, -1, "", -1
        node = self.coordinator_node(key)
        if node is None or node < 0:  # a partition without a live leader
            return COORDINATOR_NOT_AVAILABLE, -1, "", -1
        return NONE, node, "", -1

    # Classic membership ----------------------------------------------------------------------
    def join_group(self, request: JoinRequest) -> JoinResult | asyncio.Future:
        """The JoinResult, or a future of it while the member is parked."""
        if not request.group_id:
            return JoinResult(INVALID_GROUP_ID, request.member_id)
        cfg = self.config
        if not cfg.min_session_timeout_ms <= request.session_timeout_ms <= cfg.max_session_timeout_ms:
            return JoinResult(INVALID_SESSION_TIMEOUT, request.member_id)
        return self._parked(request.group_id, lambda s: s.join_group(request),
                            lambda code: JoinResult(code, request.member_id),
                            lambda code: JoinResult(code, ""))

    def sync_group(self, request: SyncRequest) -> SyncResult | asyncio.Future:
        """The SyncResult, or a future of it while the member is parked."""
        if not request.group_id:
            return SyncResult(INVALID_GROUP_ID)
        return self._parked(request.group_id, lambda s: s.sync_group(request), SyncResult,
                            SyncResult)

    def _parked(self, group_id: str, op: Callable[[GroupCoordinatorShard], Any],
                refused: Callable[[int], Any], failed: Callable[[int], Any]) -> Any:
        """Join/Sync: the op's response is a future the state machine completes (not gated on
        the write); a failed write completes it with ``failed(code)`` if still open."""
        answer: list[asyncio.Future] = []

        def on_error(code: int) -> None:
            if answer and not answer[0].done():
                answer[0].set_result(failed(code))
        try:
            parked, _waiter = self.context_for(group_id).write(
                op, on_error=lambda exc: on_error(error_code(exc)))
        except CoordinatorError as exc:
            return refused(exc.code)
        answer.append(parked)
        return parked.result() if parked.done() else parked

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None,
                  generation: int) -> int | asyncio.Future:
        if not group_id:
            return INVALID_GROUP_ID
        try:
            # context_for and _write (as answer), inlined: the hottest group request
            if not self.started:
                raise CoordinatorError(COORDINATOR_NOT_AVAILABLE)
            p = self._partitions.get(group_id)
            if p is None:
                p = partition_for(group_id, self.num_partitions)
            ctx = self.runtime.contexts.get(p)
            node = SERVING_NODE.get()
            if ctx is None or self.owners.get(p) != (self.node_id if node is None else node):
                raise CoordinatorError(NOT_COORDINATOR)
            return ctx.answer(GroupCoordinatorShard.heartbeat,
                              (group_id, member_id, instance_id, generation), _heartbeat_error)
        except CoordinatorError as exc:
            return _heartbeat_error(exc)

    def leave_group(self, group_id: str, members: list[tuple[str, str | None]]
                    ) -> tuple[int, list] | asyncio.Future:
        """(error, [(member id, instance id, error)]) or a future of it."""
        if not group_id:
            return INVALID_GROUP_ID, []
        return self._write(group_id, GroupCoordinatorShard.leave_group, group_id, members,
                           on_error=_failed_with_no_rows)

    async def describe_groups(self, group_ids: list[str], version: int) -> list[DescribedGroup]:
        """Committed state of each group, in request order (one read per shard)."""
        return await self.read_groups(
            group_ids, lambda shard, ids: [shard.describe_group(g, version) for g in ids],
            lambda g, exc: DescribedGroup(g, exc.code, "", "", "", []))

    async def list_groups(self, states: set[str], types: set[str]
                          ) -> tuple[int, list[tuple[str, str, str, str]]]:
        """(error, [(group id, protocol type, state, group type)]) over every led shard."""
        if not self.started:
            return COORDINATOR_NOT_AVAILABLE, []
        if self.loading():
            return COORDINATOR_LOAD_IN_PROGRESS, []
        rows: list[tuple[str, str, str, str]] = []
        me = self._serving()
        for p, ctx in sorted(self.runtime.contexts.items()):
            if self.owners.get(p) != me:
                continue
            try:
                rows.extend(await ctx.read(lambda s: s.list_groups(states, types)))
            except CoordinatorError as exc:
                return exc.code, []
        return NONE, rows

    async def delete_groups(self, group_ids: list[str]) -> dict[str, int]:
        """Error per group id (one write per shard)."""
        errors: dict[str, int] = {}
        for ids in self._by_partition(group_ids):
            def failed(exc: BaseException, ids: list[str] = ids) -> list[tuple[str, int]]:
                return [(g, error_code(exc)) for g in ids]
            result = self._write(ids[0], GroupCoordinatorShard.delete_groups, ids, on_error=failed)
            if isinstance(result, asyncio.Future):
                result = await result
            errors.update(result)
        return errors

    # Consumer groups (KIP-848) ---------------------------------------------------------------
    @property
    def consumer_protocol_enabled(self) -> bool:
        return self.config.consumer.enabled

    def consumer_group_heartbeat(self, request: HeartbeatRequest
                                 ) -> ConsumerHeartbeatAnswer | asyncio.Future:
        """(error, message, result) now or once the heartbeat's records are durable (the
        future completes with it: the runtime maps the op's response as it runs)."""
        if not self.config.consumer.enabled:
            return (UNSUPPORTED_VERSION, "The consumer group protocol is not enabled.", None)
        try:  # _write, as answer: one request value
            return self.context_for(request.group_id or "").answer(
                GroupCoordinatorShard.consumer_group_heartbeat, request,
                _consumer_heartbeat_failed, _heartbeat_answer)
        except CoordinatorError as exc:
            return _consumer_heartbeat_failed(exc)

    async def consumer_group_describe(self, group_ids: list[str]
                                      ) -> list[tuple[str, int, str | None,
                                                      DescribedConsumerGroup | None]]:
        """(group id, error, message, described group) per id, request order, committed."""
        if not self.config.consumer.enabled:
            return [(g, UNSUPPORTED_VERSION, None, None) for g in group_ids]
        return await self.read_groups(group_ids, GroupCoordinatorShard.consumer_group_describe,
                                      lambda g, exc: (g, exc.code, None, None))

    async def fetch_offsets_as_member(self, group_id: str, member_id: str | None,
                                      member_epoch: int, topics: list[tuple[str, list[int]]] | None,
                                      require_stable: bool = False
                                      ) -> tuple[int, list[FetchedTopic]]:
        """OffsetFetch v9 with a member id/epoch: a consumer group checks them first
        (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH), then as ``fetch_offsets``."""
        try:
            code = await self._read(
                group_id, lambda s: s.validate_offset_fetch(group_id, member_id, member_epoch))
        except CoordinatorError as exc:
            code = exc.code
        if code != NONE:
            return code, []
        return await self.fetch_offsets(group_id, topics, require_stable)

    def on_topics_changed(self) -> None:
        """A topic was created, deleted or grew: consumer groups recompute their subscription
        metadata and regexes on their next heartbeat."""
        self.config.topics.changed()

    # Share groups (KIP-932) ------------------------------------------------------------------
    def share_groups(self) -> ShareGroupService:
        """ShareGroupHeartbeat, ShareGroupDescribe and the admin side's share-group queries."""
        if self._share is None:  # share/share_service.py, imported when first needed
            from .share.share_service import ShareGroupService
            self._share = ShareGroupService(self)
        return self._share

    # Offsets ---------------------------------------------------------------------------------
    def commit_offsets(self, request: OffsetCommitRequest, partitions: list[CommitPartition],
                       map_response: Callable[[list[int]], Any] | None = None) -> Any:
        """Error per partition (request order), now or as a future resolved once the offsets
        are durable. ``map_response`` maps the codes to what is returned instead (the
        response): the runtime applies it when the op runs, so its own future carries the
        response, with no further future or loop round trip between durability and the
        answer."""
        count_of = self._partition_count
        topic, count = None, 0
        for p in partitions:  # usually all valid: then no per-partition codes are made
            if p.topic is not topic:
                topic, count = p.topic, count_of(p.topic)
            if not 0 <= p.partition < count:
                break
        else:
            return self._commit(request, partitions, map_response)
        codes: list[int] = []
        accepted: list[CommitPartition] = []
        counts: dict[str, int] = {}
        for p in partitions:
            known = counts.get(p.topic)
            if known is None:
                known = counts[p.topic] = count_of(p.topic)
            if 0 <= p.partition < known:
                codes.append(-1)
                accepted.append(p)
            else:
                codes.append(UNKNOWN_TOPIC_OR_PARTITION)
        if not accepted:
            return codes if map_response is None else map_response(codes)
        return self._commit(request, accepted,
                            lambda answers: (_merge(codes, answers) if map_response is None
                                             else map_response(_merge(codes, answers))))

    def _commit(self, request: OffsetCommitRequest, partitions: list[CommitPartition],
                map_response: Callable[[list[int]], Any] | None) -> Any:
        """The write of ``commit_offsets`` for valid partitions (``_write``, as answer: with a
        C-level error mapping, no closure is built per commit)."""
        on_error = partial(_failed_commit, len(partitions), map_response)
        try:
            return self.context_for(request.group_id).answer(
                GroupCoordinatorShard.commit_offsets, (request, partitions), on_error,
                map_response)
        except CoordinatorError as exc:
            return on_error(exc)

    async def fetch_offsets(self, group_id: str, topics: list[tuple[str, list[int]]] | None,
                            require_stable: bool = False) -> tuple[int, list[FetchedTopic]]:
        """(group error, [(topic, [(partition, offset, epoch, metadata, error)])]); committed
        offsets only (``require_stable``: UNSTABLE_OFFSET_COMMIT where a transactional commit
        is pending). With the group error every asked partition carries it too."""
        try:
            rows = await self._read(group_id, (lambda s: s.fetch_stable_offsets(group_id, topics))
                                    if require_stable
                                    else (lambda s: s.fetch_offsets(group_id, topics)))
        except CoordinatorError as exc:
            return exc.code, [(name, [(p, -1, -1, "", exc.code) for p in parts])
                              for name, parts in (topics or [])]
        return NONE, rows

    # Transactions ----------------------------------------------------------------------------
    async def txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int,
                                 generation: int, member_id: str, instance_id: str | None,
                                 partitions: list[CommitPartition]) -> list[int]:
        """TxnOffsetCommit: error per partition (request order) once the pending offsets are
        durable."""
        codes = [-1 if 0 <= p.partition < self._partition_count(p.topic)
                 else UNKNOWN_TOPIC_OR_PARTITION for p in partitions]
        accepted = [p for p, c in zip(partitions, codes, strict=True) if c == -1]
        if not accepted:
            return codes
        request = OffsetCommitRequest(group_id, generation, member_id, instance_id, -1, 0,
                                      is_transactional=True)
        result = self._write(group_id, GroupCoordinatorShard.txn_commit_offsets, request,
                             producer_id, producer_epoch, accepted,
                             on_error=lambda exc: [error_code(exc)] * len(accepted))
        if isinstance(result, asyncio.Future):
            result = await result
        return _merge(codes, result)

    async def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                                   commit: bool) -> None:
        """Write the COMMIT/ABORT marker of a transaction into ``__consumer_offsets-partition``
        and apply it to the pending offsets; raises CoordinatorError when it cannot."""
        ctx = self.runtime.context(partition)
        _response, waiter = ctx.write(GroupCoordinatorShard.complete_transaction, producer_id,
                                      producer_epoch, commit)
        if waiter is not None:
            await waiter

    async def delete_offsets(self, group_id: str, topics: list[tuple[str, list[int]]]
                             ) -> tuple[int, dict[tuple[str, int], int]]:
        """(group error, error per (topic, partition)) for OffsetDelete."""
        if not group_id:
            return INVALID_GROUP_ID, {}
        per: dict[tuple[str, int], int] = {}
        wanted: dict[str, list[int]] = {}
        for topic, partitions in topics:
            count = self._partition_count(topic)
            for p in partitions:
                if 0 <= p < count:
                    wanted.setdefault(topic, []).append(p)
                else:
                    per[(topic, p)] = UNKNOWN_TOPIC_OR_PARTITION
        result = self._write(group_id, GroupCoordinatorShard.delete_offsets, group_id,
                             list(wanted.items()), on_error=_failed_with_no_rows)
        if isinstance(result, asyncio.Future):
            result = await result
        top, rows = result
        if top != NONE:
            return top, {}
        for name, parts in rows:
            for p, err in parts:
                per[(name, p)] = err
        return NONE, per

    async def on_partitions_deleted(self, topic_partitions: list[tuple[str, int]]) -> None:
        """Delete every group's committed offsets of deleted topic partitions, on every shard
        this node leads (Kafka's GroupCoordinator.onPartitionsDeleted)."""
        if not self.started or not topic_partitions:
            return
        waits: list[Awaitable[Any]] = []
        for ctx in self.runtime.active():
            try:
                _n, waiter = ctx.write(GroupCoordinatorShard.on_partitions_deleted,
                                       topic_partitions)
            except CoordinatorError as exc:
                log.warning("__consumer_offsets-%d: cannot delete offsets of deleted "
                            "partitions: %s", ctx.partition, exc)
                continue
            if waiter is not None:
                waits.append(waiter)
        for outcome in await asyncio.gather(*waits, return_exceptions=True):
            if isinstance(outcome, BaseException):
                log.warning("deleting offsets of deleted partitions failed: %r", outcome)


def _heartbeat_error(exc: BaseException) -> int:
    code = error_code(exc)
    # Kafka answers heartbeats blindly while the partition loads.
    return NONE if code == COORDINATOR_LOAD_IN_PROGRESS else code


def _failed_with_no_rows(exc: BaseException) -> tuple[int, list]:
    return error_code(exc), []


ConsumerHeartbeatAnswer = tuple[int, "str | None", "HeartbeatResult | None"]


def _consumer_heartbeat_failed(exc: BaseException) -> ConsumerHeartbeatAnswer:
    message = exc.message if isinstance(exc, CoordinatorError) else None
    return error_code(exc), message, None


def _heartbeat_answer(answer: Any) -> ConsumerHeartbeatAnswer:
    """A HeartbeatResult (success) or the failure's (error, message, None) as one answer; told
    apart by type, with no import per heartbeat (consumer/heartbeat.py loads lazily)."""
    if type(answer) is tuple:
        return answer
    return NONE, None, answer


def _merge(codes: list[int], answers: list[int]) -> list[int]:
    """Request-order codes with the placeholders (-1) replaced by the shard's answers."""
    it = iter(answers)
    return [next(it) if c == -1 else c for c in codes]
