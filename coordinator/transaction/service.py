"""The transaction coordinator service (Kafka's TransactionCoordinator front): routes a
transactional id to its ``__transaction_state`` partition, runs ops through the runtime and
maps failures to the error codes the transaction APIs answer."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from ..runtime.clock import Clock
from ..runtime.coordinator_log import CoordinatorLog
from ..runtime.coordinator_runtime import PartitionContext
from ..runtime.error_codes import (
    CONCURRENT_TRANSACTIONS,
    COORDINATOR_NOT_AVAILABLE,
    INVALID_REQUEST,
    NONE,
    NOT_COORDINATOR,
    TRANSACTIONAL_ID_NOT_FOUND,
    CoordinatorError,
    error_code,
)
from ..runtime.leadership import CoordinatorRuntime
from ..runtime.partitioning import partition_for
from .shard import MAX_EPOCH, TransactionShard, TxnConfig, TxnMetadata

log = logging.getLogger("kafkette.transactions")


class TransactionCoordinator:
    def __init__(self, node_id: int, num_partitions: int, clock: Clock, config: TxnConfig,
                 log_factory: Callable[[int], CoordinatorLog],
                 allocate_producer_id: Callable[[], Awaitable[int]],
                 linger_ms: int = 0, write_timeout_ms: int = 5000) -> None:
        self.node_id = node_id
        self.num_partitions = num_partitions
        self.config = config
        self._allocate = allocate_producer_id
        self.runtime = CoordinatorRuntime(
            clock, log_factory, lambda ctx: TransactionShard(ctx.partition, ctx, config),
            linger_ms, write_timeout_ms)
        self.started = False

    async def start(self) -> None:
        self.started = True
        await self.runtime.load_all(self.num_partitions, "transaction coordinator", log)

    async def stop(self) -> None:
        await self.runtime.close()
        self.started = False

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.num_partitions)

    def context_for(self, transactional_id: str) -> PartitionContext:
        if not self.started:
            raise CoordinatorError(COORDINATOR_NOT_AVAILABLE)
        return self.runtime.context(self.partition_for(transactional_id))

    async def _write(self, tid: str, op: Callable[[TransactionShard], Any],
                     on_error: Callable[[int], Any]) -> Any:
        try:
            response, waiter = self.context_for(tid).write(op)
            if waiter is not None:
                response = await waiter
        except Exception as exc:  # noqa: BLE001 - mapped to the API's code
            return on_error(error_code(exc))
        return response

    async def _settled(self, tid: str) -> None:
        """Wait, at most ``settle_wait_ms``, until the PrepareCommit/PrepareAbort of ``tid`` is
        complete. A request arriving while the previous transaction's markers are being written
        (a client sends its next AddPartitionsToTxn/AddOffsetsToTxn right after EndTxn) would
        answer CONCURRENT_TRANSACTIONS and the client would retry after its backoff
        (retry.backoff.ms, 100 ms for librdkafka's AddOffsetsToTxn and Java's InitProducerId);
        Kafka 4.x retries such adds on the server instead (add.partitions.to.txn.retry.backoff
        .max.ms). Here the request waits for the completion itself, then runs as a retry would."""
        ctx = self.runtime.contexts.get(self.partition_for(tid))
        shard = None if ctx is None else ctx.shard
        fut = None if shard is None else shard.completion(tid)
        if fut is None:
            return
        await asyncio.wait([fut], timeout=self.config.settle_wait_ms / 1000)

    # APIs ------------------------------------------------------------------------------------
    async def init_producer_id(self, tid: str, timeout_ms: int, expected_pid: int = -1,
                               expected_epoch: int = -1) -> tuple[int, int, int]:
        """(error, producer id, epoch)."""
        if not tid:
            return INVALID_REQUEST, -1, -1
        await self._settled(tid)
        answer = await self._init_producer_id(tid, timeout_ms, expected_pid, expected_epoch)
        if answer[0] == CONCURRENT_TRANSACTIONS:
            # this init began the abort of a previous instance's transaction: a retry after
            # its completion bumps the epoch again and answers
            await self._settled(tid)
            answer = await self._init_producer_id(tid, timeout_ms, expected_pid, expected_epoch)
        return answer

    async def _init_producer_id(self, tid: str, timeout_ms: int, expected_pid: int,
                                expected_epoch: int) -> tuple[int, int, int]:
        try:
            ctx = self.context_for(tid)
            known = await ctx.read(lambda s: s.transactions.get(tid))
        except CoordinatorError as exc:
            return exc.code, -1, -1
        # A new id, or one whose epoch is about to run out, gets a fresh producer id.
        new_pid = await self._allocate() if known is None or \
            known.producer_epoch >= MAX_EPOCH - 1 else -1
        return await self._write(
            tid, lambda s: s.init_producer_id(tid, timeout_ms, new_pid, expected_pid,
                                              expected_epoch),
            lambda code: (code, -1, -1))

    async def add_partitions(self, tid: str, pid: int, epoch: int,
                             partitions: dict[str, set[int]], tv: int = 1) -> int:
        await self._settled(tid)
        return await self._write(tid, lambda s: s.add_partitions(tid, pid, epoch, partitions, tv),
                                 lambda code: code)

    async def end_txn(self, tid: str, pid: int, epoch: int, commit: bool,
                      tv: int = 1) -> tuple[int, int, int]:
        """(error, producer id, epoch to use next)."""
        await self._settled(tid)
        new_pid = -1
        if tv >= 2:
            try:
                known = await self.context_for(tid).read(lambda s: s.transactions.get(tid))
            except CoordinatorError as exc:
                return exc.code, -1, -1
            if known is not None and known.producer_epoch >= MAX_EPOCH:
                new_pid = await self._allocate()
        return await self._write(tid, lambda s: s.end_txn(tid, pid, epoch, commit, tv, new_pid),
                                 lambda code: (code, -1, -1))

    async def describe(self, tid: str) -> tuple[int, TxnMetadata | None]:
        try:
            md = await self.context_for(tid).read(lambda s: s.describe(tid))
        except CoordinatorError as exc:
            return exc.code, None
        return (NONE, md) if md is not None else (TRANSACTIONAL_ID_NOT_FOUND, None)

    async def list(self) -> list[TxnMetadata]:
        out: list[TxnMetadata] = []
        for ctx in self.runtime.active():
            out.extend(await ctx.read(lambda s: s.list()))
        return out

    def verifier(self, tid: str) -> Callable[[str, int, int, int], int]:
        """For Produce: may (producer id, epoch) of ``tid`` write transactional data into a
        partition? The state in memory is enough: the client produces only once its
        AddPartitionsToTxn was answered (durable)."""
        def verify(topic: str, partition: int, pid: int, epoch: int) -> int:
            ctx = self.runtime.contexts.get(self.partition_for(tid))
            if ctx is None or ctx.shard is None:
                return NOT_COORDINATOR
            return ctx.shard.verify_partition(tid, pid, epoch, topic, partition)
        return verify

    def verify_partitions(self, tid: str, pid: int, epoch: int,
                          partitions: dict[str, set[int]]) -> dict[tuple[str, int], int]:
        """AddPartitionsToTxn v4+ with verify_only: an error for every partition (Kafka's
        handleVerifyPartitionsInTransaction)."""
        ctx = self.runtime.contexts.get(self.partition_for(tid)) if tid else None
        if not tid:
            code = INVALID_REQUEST
        elif ctx is None or ctx.shard is None:
            code = NOT_COORDINATOR
        else:
            return ctx.shard.verify_partitions(tid, pid, epoch, partitions)
        return {(t, p): code for t, ps in partitions.items() for p in ps}

    def find_coordinator(self, tid: str) -> int:
        """The error of FindCoordinator(key type 1) for ``tid`` (NONE: this node)."""
        if not self.started:
            return COORDINATOR_NOT_AVAILABLE
        ctx = self.runtime.contexts.get(self.partition_for(tid))
        return NONE if ctx is not None else NOT_COORDINATOR
