"""The transaction coordinator on ``__transaction_state`` and the local marker writer: COMMIT/
ABORT control batches into the data partitions of a transaction (byte-identical to what
WriteTxnMarkers appends) and, through the group coordinator, into ``__consumer_offsets``."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from kafkette.coordinator.transaction.service import TransactionCoordinator
from kafkette.coordinator.transaction.shard import TxnConfig
from kafkette.protocol.control_records import marker_batch
from kafkette.protocol.records import parse_batch_header

from .offsets_log import OFFSETS_TOPIC, TRANSACTION_TOPIC, PartitionOffsetsLog, internal_topic

if TYPE_CHECKING:
    from kafkette.storage.topics import LogManager

__all__ = ["TRANSACTION_TOPIC", "MarkerWriter", "start_transaction_coordinator"]


class MarkerWriter:
    def __init__(self, logs: LogManager, group_coordinator: Any) -> None:
        self._logs = logs
        self._groups = group_coordinator  # () -> the GroupCoordinator

    async def __call__(self, producer_id: int, epoch: int, commit: bool,
                       partitions: dict[str, set[int]]) -> None:
        writes = []
        for topic, parts in partitions.items():
            for p in parts:
                if topic == OFFSETS_TOPIC:
                    coord = self._groups()
                    if coord is None:
                        raise RuntimeError("the group coordinator is not available")
                    writes.append(coord.complete_transaction(p, producer_id, epoch, commit))
                    continue
                plog = self._logs.get_partition(topic, p)
                if plog is None:  # deleted since it was added: nothing to mark
                    continue
                batch = marker_batch(producer_id, epoch, commit, 0, int(time.time() * 1000))
                writes.append(plog.append_future(batch, [parse_batch_header(batch)]))
        for outcome in await asyncio.gather(*writes, return_exceptions=True):
            if isinstance(outcome, BaseException):
                raise outcome


async def start_transaction_coordinator(logs: LogManager, config: Any, clock: Any,
                                        group_coordinator: Any) -> TransactionCoordinator:
    """Create ``__transaction_state`` if needed and load the coordinator from it."""
    info = await internal_topic(logs, TRANSACTION_TOPIC,
                                config.get_int("transaction.state.log.num.partitions"),
                                config.get_str("transaction.state.log.segment.bytes"),
                                "uncompressed")
    coord = TransactionCoordinator(
        config.node_id, info.partitions, clock,
        TxnConfig(max_timeout_ms=config.get_int("transaction.max.timeout.ms"),
                  markers=MarkerWriter(logs, group_coordinator),
                  id_expiration_ms=config.get_int("transactional.id.expiration.ms"),
                  expiration_check_ms=config.get_int(
                      "transaction.remove.expired.transaction.cleanup.interval.ms"),
                  settle_wait_ms=config.get_int("add.partitions.to.txn.retry.backoff.max.ms")),
        lambda p: PartitionOffsetsLog(logs.partition(TRANSACTION_TOPIC, p)),
        logs.allocate_producer_id,
        write_timeout_ms=config.get_int("offsets.commit.timeout.ms"))
    await coord.start()
    return coord
