"""The group coordinator: shards by ``__consumer_offsets`` partition, loading, routing.

Which node leads each partition is explicit (``owners``) so several nodes can share the
partitions later; today every partition is led by this node.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from functools import lru_cache

from . import errors as E
from .clock import Clock
from .errors import CoordinatorError
from .log import CoordinatorLog
from .shard import CoordinatorConfig, Shard

log = logging.getLogger("kafkette.coordinator")


def java_string_hashcode(s: str) -> int:
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= (1 << 31) else h


def kafka_abs(n: int) -> int:
    return 0 if n == -(1 << 31) else abs(n)


@lru_cache(maxsize=65536)
def partition_for(group_id: str, num_partitions: int) -> int:
    # Cached: every group request needs it, and hashing in Python costs ~1 µs per character.
    return kafka_abs(java_string_hashcode(group_id)) % num_partitions


class GroupCoordinator:
    def __init__(self, node_id: int, num_partitions: int, clock: Clock,
                 config: CoordinatorConfig,
                 log_factory: Callable[[int], CoordinatorLog]) -> None:
        self.node_id = node_id
        self.num_partitions = num_partitions
        self.clock = clock
        self.config = config
        self._log_factory = log_factory
        self.shards: dict[int, Shard] = {}
        self.owners: dict[int, int] = {}
        self.started = False
        self._loads: list[asyncio.Task] = []

    async def start(self, wait: bool = True) -> None:
        """Become leader of every partition and replay their logs."""
        t0 = time.perf_counter()
        for p in range(self.num_partitions):
            self.owners[p] = self.node_id
            self.shards[p] = Shard(p, self._log_factory(p), self.clock, self.config)
        self.started = True
        self._loads = [asyncio.ensure_future(self._load(s)) for s in self.shards.values()]
        if wait:
            counts = await asyncio.gather(*self._loads)
            log.info("group coordinator loaded %d records from %d partitions in %.0f ms",
                     sum(counts), self.num_partitions, (time.perf_counter() - t0) * 1000)

    async def _load(self, shard: Shard) -> int:
        try:
            return await shard.load()
        except Exception:
            log.exception("loading __consumer_offsets-%d failed", shard.partition)
            raise

    async def stop(self) -> None:
        for task in self._loads:
            task.cancel()
        for shard in self.shards.values():
            await shard.close()
            if shard.active:
                shard.unload()
        self.started = False

    # Routing ---------------------------------------------------------------------------------
    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def coordinator_node(self, group_id: str) -> int | None:
        return self.owners.get(self.partition_for(group_id))

    def shard_for(self, group_id: str) -> Shard:
        """The active shard of a group or CoordinatorError(15/16/14), Kafka's runtime checks."""
        if not self.started:
            raise CoordinatorError(E.COORDINATOR_NOT_AVAILABLE)
        p = self.partition_for(group_id)
        shard = self.shards.get(p)
        if shard is None or self.owners.get(p) != self.node_id:
            raise CoordinatorError(E.NOT_COORDINATOR)
        if shard.loading:
            raise CoordinatorError(E.COORDINATOR_LOAD_IN_PROGRESS)
        if not shard.active:
            raise CoordinatorError(E.NOT_COORDINATOR)
        return shard

    def loading(self) -> bool:
        """True while a partition this node leads is still replaying its log."""
        return any(s.loading for p, s in self.shards.items() if self.owners.get(p) == self.node_id)

    def active_shards(self) -> list[Shard]:
        return [s for p, s in self.shards.items()
                if s.active and not s.loading and self.owners.get(p) == self.node_id]

    # Leadership changes (tests; future multi-node) -------------------------------------------
    def resign(self, partition: int, new_owner: int = -1) -> None:
        shard = self.shards[partition]
        if shard.active:
            shard.unload()
        self.owners[partition] = new_owner

    async def elect(self, partition: int) -> None:
        """Take over a partition: replay its log again."""
        old = self.shards.get(partition)
        if old is not None:
            await old.close()
        shard = Shard(partition, self._log_factory(partition), self.clock, self.config)
        self.shards[partition] = shard
        self.owners[partition] = self.node_id
        await shard.load()
