"""The share-state coordinator service (Kafka's ShareCoordinatorService) and the in-process
``Persister`` the broker's share partitions use.

Routes a share-partition to its ``__share_group_state`` partition by Kafka's key
``"<group>:<topic id>:<partition>"`` (abs Java String.hashCode mod the partition count), runs
the shard's ops through the coordinator runtime and answers each call only once its records
are durable. Failures become Kafka error codes (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS,
COORDINATOR_NOT_AVAILABLE for a failed or timed-out append, ...).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from kafkette.protocol.share_state_records import coordinator_key

from ..runtime.clock import Clock
from ..runtime.coordinator_log import CoordinatorLog
from ..runtime.coordinator_runtime import PartitionContext
from ..runtime.error_codes import (
    COORDINATOR_NOT_AVAILABLE,
    NONE,
    NOT_COORDINATOR,
    CoordinatorError,
    error_code,
)
from ..runtime.leadership import CoordinatorRuntime
from ..runtime.partitioning import partition_for
from .persister import SharePartitionKey, ShareState, StateSummary
from .shard import DEFAULT_UPDATES_PER_SNAPSHOT, ShareCoordinatorShard

log = logging.getLogger("kafkette.share")


class ShareCoordinatorService:
    """Implements ``Persister`` (coordinator/share/persister.py) over the runtime."""

    def __init__(self, node_id: int, num_partitions: int, clock: Clock,
                 log_factory: Callable[[int], CoordinatorLog],
                 updates_per_snapshot: int = DEFAULT_UPDATES_PER_SNAPSHOT,
                 linger_ms: int = 0, write_timeout_ms: int = 5000) -> None:
        self.node_id = node_id
        self.num_partitions = num_partitions
        self.runtime = CoordinatorRuntime(
            clock, log_factory,
            lambda ctx: ShareCoordinatorShard(ctx.partition, ctx, updates_per_snapshot),
            linger_ms, write_timeout_ms)
        self.started = False

    async def start(self) -> None:
        self.started = True
        await self.runtime.load_all(self.num_partitions, "share coordinator", log)

    async def stop(self) -> None:
        await self.runtime.close()
        self.started = False

    # Routing ---------------------------------------------------------------------------------
    def partition_for(self, key: SharePartitionKey) -> int:
        return partition_for(coordinator_key(key.group_id, key.topic_id, key.partition),
                             self.num_partitions)

    def partition_of(self, coordinator_key_: str) -> int:
        """The partition of a FindCoordinator key type 2 key ("group:topicId:partition")."""
        return partition_for(coordinator_key_, self.num_partitions)

    def _context(self, key: SharePartitionKey) -> PartitionContext:
        if not self.started:
            raise CoordinatorError(COORDINATOR_NOT_AVAILABLE)
        return self.runtime.context(self.partition_for(key))

    def find_coordinator(self, coordinator_key_: str) -> int:
        """The error of FindCoordinator(key type 2) for this node (NONE: it leads it)."""
        if not self.started:
            return COORDINATOR_NOT_AVAILABLE
        ctx = self.runtime.contexts.get(self.partition_of(coordinator_key_))
        return NONE if ctx is not None else NOT_COORDINATOR

    async def _write(self, key: SharePartitionKey, op: Callable[..., Any], *args: Any) -> Any:
        """Run ``op(shard, key, *args)``; its response once the records are durable."""
        response, waiter = self._context(key).write(op, key, *args)
        if waiter is not None:
            response = await waiter
        return response

    # Persister -------------------------------------------------------------------------------
    async def initialize(self, key: SharePartitionKey, state_epoch: int,
                         start_offset: int) -> int:
        try:
            return int(await self._write(key, ShareCoordinatorShard.initialize, state_epoch,
                                         start_offset))
        except Exception as exc:  # noqa: BLE001 - answered as its code
            return error_code(exc)

    async def read(self, key: SharePartitionKey,
                   leader_epoch: int) -> tuple[int, ShareState | None]:
        try:
            code, state = await self._write(key, ShareCoordinatorShard.read, leader_epoch)
        except Exception as exc:  # noqa: BLE001 - answered as its code
            return error_code(exc), None
        return code, state

    async def write(self, key: SharePartitionKey, state: ShareState) -> int:
        try:
            return int(await self._write(key, ShareCoordinatorShard.write, state))
        except Exception as exc:  # noqa: BLE001 - answered as its code
            return error_code(exc)

    async def delete(self, key: SharePartitionKey) -> int:
        try:
            return int(await self._write(key, ShareCoordinatorShard.delete))
        except Exception as exc:  # noqa: BLE001 - answered as its code
            return error_code(exc)

    async def group_keys(self, group_id: str) -> list[SharePartitionKey]:
        """Every share-partition of ``group_id`` with state on this node's partitions (the
        offsets admin APIs: what a group has state for)."""
        keys: list[SharePartitionKey] = []
        for ctx in self.runtime.active():
            keys.extend(await ctx.read(lambda shard: shard.keys_of_group(group_id)))
        return keys

    async def snapshot_partition(self, partition: int) -> int:
        """Snapshot every share-partition of ``__share_group_state-<partition>``; returns once
        the snapshots are durable (how many were written). Everything the partition's log
        held before this call is then redundant."""
        response, waiter = self.runtime.context(partition).write(
            ShareCoordinatorShard.snapshot_all)
        if waiter is not None:
            response = await waiter
        return int(response)

    async def read_summary(self, key: SharePartitionKey) -> tuple[int, StateSummary | None]:
        try:
            summary = await self._context(key).read(lambda shard: shard.summary(key))
        except Exception as exc:  # noqa: BLE001 - answered as its code
            return error_code(exc), None
        return NONE, summary
