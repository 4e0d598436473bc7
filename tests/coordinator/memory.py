"""A coordinator partition context over an in-memory log and a manual clock (no sockets, no
files): for tests of the runtime and the shard through the one write path."""

from __future__ import annotations

import asyncio
from typing import Any

from kafkette.coordinator.group.group_config import CoordinatorConfig
from kafkette.coordinator.group.group_shard import GroupCoordinatorShard
from kafkette.coordinator.group.offsets.offset_manager import CommitPartition
from kafkette.coordinator.group.requests import OffsetCommitRequest
from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.runtime.coordinator_log import MemoryLog, RawRecord
from kafkette.coordinator.runtime.coordinator_runtime import PartitionContext
from kafkette.protocol.group_records import encode_key, encode_value


def memory_context(records: list[RawRecord] | tuple = (), **config: Any
                   ) -> tuple[PartitionContext, MemoryLog, ManualClock]:
    """An unloaded context of partition 0 whose log holds ``records``."""
    log, clock = MemoryLog(), ManualClock()
    log.records = list(records)
    cfg = CoordinatorConfig(**{"append_linger_ms": 5, **config})
    ctx = PartitionContext(0, log, clock, lambda c: GroupCoordinatorShard(0, c, cfg),
                           cfg.append_linger_ms, cfg.commit_timeout_ms)
    return ctx, log, clock


async def loaded(records: list[RawRecord] | tuple = (), **config: Any
                 ) -> tuple[PartitionContext, MemoryLog, ManualClock]:
    ctx, log, clock = memory_context(records, **config)
    await ctx.load()
    return ctx, log, clock


def record(key: Any, value: Any) -> RawRecord:
    return encode_key(key), None if value is None else encode_value(value)


def commit(ctx: PartitionContext, group_id: str, *offsets: tuple[str, int, int],
           generation: int = -1, member_id: str = "") -> tuple[list[int], asyncio.Future | None]:
    """Commit (topic, partition, offset)s as a simple consumer would: (errors, write)."""
    parts = [CommitPartition(t, p, o, -1, None) for t, p, o in offsets]
    return ctx.write(GroupCoordinatorShard.commit_offsets,
                     (OffsetCommitRequest(group_id, generation, member_id, None), parts))


async def committed(ctx: PartitionContext, group_id: str) -> list:
    """The group's durable offsets, read as OffsetFetch does."""
    return await ctx.read(lambda s: s.fetch_offsets(group_id, None))


async def reloaded(ctx: PartitionContext) -> None:
    """Wait until a failed context has reloaded its shard from the log."""
    for _ in range(100):
        if ctx.state.value == "active":
            return
        await asyncio.sleep(0)
    raise AssertionError(f"context still {ctx.state}")


def memory_service(records: list[RawRecord] | tuple = (), **config: Any):
    """A one-partition GroupCoordinator service over an in-memory log: (service, log, clock)."""
    from kafkette.coordinator.group.group_service import GroupCoordinator

    log, clock = MemoryLog(), ManualClock()
    log.records = list(records)
    cfg = CoordinatorConfig(**{"append_linger_ms": 5, **config})
    return GroupCoordinator(1, 1, clock, cfg, lambda _p: log), log, clock
