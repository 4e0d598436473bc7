"""The partitions a node leads (Kafka's CoordinatorRuntime): one context each
(coordinator_runtime.py), created when the node becomes leader of a partition and replaying its
log, unloaded when it resigns, closed when the coordinator stops."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from .clock import Clock
from .coordinator_log import CoordinatorLog
from .coordinator_runtime import PartitionContext, ShardFactory, State
from .error_codes import NOT_COORDINATOR, CoordinatorError


class CoordinatorRuntime:
    """The contexts of the partitions this node leads (Kafka's CoordinatorRuntime)."""

    def __init__(self, clock: Clock, log_factory: Callable[[int], CoordinatorLog],
                 shard_factory: ShardFactory, linger_ms: int, write_timeout_ms: int) -> None:
        self.clock = clock
        self._log_factory = log_factory
        self._shard_factory = shard_factory
        self._linger_ms = linger_ms
        self._write_timeout_ms = write_timeout_ms
        self.contexts: dict[int, PartitionContext] = {}

    def _new_context(self, partition: int) -> PartitionContext:
        ctx = PartitionContext(partition, self._log_factory(partition), self.clock,
                               self._shard_factory, self._linger_ms, self._write_timeout_ms)
        self.contexts[partition] = ctx
        return ctx

    async def load(self, partition: int) -> int:
        """Become leader of ``partition``: replay its log (again, if it was led before)."""
        old = self.contexts.get(partition)
        if old is not None:
            await old.close()
            old.unload()
        return await self._new_context(partition).load()

    async def load_all(self, num_partitions: int, name: str, logger: logging.Logger) -> int:
        """Become leader of partitions ``0 .. num_partitions - 1`` at once and replay their logs;
        logs on ``logger`` how many records ``name`` (e.g. "share coordinator") loaded and in
        how long, and returns that count. The first load that fails raises."""
        t0 = time.perf_counter()
        counts = await asyncio.gather(*(self.load(p) for p in range(num_partitions)))
        loaded = sum(counts)
        logger.info("%s loaded %d records from %d partitions in %.0f ms", name, loaded,
                    num_partitions, (time.perf_counter() - t0) * 1000)
        return loaded

    def unload(self, partition: int) -> None:
        ctx = self.contexts.get(partition)
        if ctx is not None:
            ctx.unload()

    def context(self, partition: int) -> PartitionContext:
        """The context of ``partition`` (NOT_COORDINATOR if none); its write/read check that
        it can take ops."""
        ctx = self.contexts.get(partition)
        if ctx is None:
            raise CoordinatorError(NOT_COORDINATOR)
        return ctx

    def active(self) -> list[PartitionContext]:
        return [c for c in self.contexts.values() if c.state is State.ACTIVE]

    def loading(self) -> bool:
        return any(c.state in (State.LOADING, State.FAILED) for c in self.contexts.values())

    async def close(self) -> None:
        for ctx in self.contexts.values():
            await ctx.close()
            ctx.unload()
