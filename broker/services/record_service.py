"""The data plane: appending produced batches and reading, listing and trimming partitions.

Every refusal is a :class:`ServiceError` carrying Kafka's error code and message.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from kafkette.protocol.batch_validation import check_produced_batch
from kafkette.protocol.control_records import marker_batch
from kafkette.protocol.records import (
    CorruptRecordError,
    build_batch,
    decode_records,
    parse_batch_header,
)
from kafkette.protocol.timestamp_validation import TimestampWindow
from kafkette.storage.errors import OffsetOutOfRangeError
from kafkette.storage.log import LEADER_EPOCH, AppendInfo, PartitionLog
from kafkette.storage.log_read import LogSlice
from kafkette.storage.producer_state import ActiveProducer
from kafkette.storage.topics import LogManager, TopicInfo

from ..stats import BrokerStats
from .errors import ServiceError, service_error, unknown_partition

# (topic, partition, producer id, epoch) -> error code (0: the partition is in the transaction)
TxnVerifier = Callable[[str, int, int, int], int]

# Kafka lets only its own admin client (AdminUtils.ADMIN_CLIENT_ID) produce to internal topics.
ADMIN_CLIENT_ID = "__admin_client"
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


# Kafka's fetch.max.bytes default (55 MiB): the most record bytes one Fetch response carries.
FETCH_MAX_BYTES = 57671680


class RecordService:
    def __init__(self, logs: LogManager, stats: BrokerStats | None = None,
                 leads: Callable[[str, int], bool] | None = None,
                 isr: Callable[[str, int], list[int]] | None = None, *,
                 fetch_max_bytes: int = FETCH_MAX_BYTES) -> None:
        self._logs = logs
        # The broker's fetch.max.bytes: a Fetch's MaxBytes is capped at it (Kafka's KafkaApis);
        # the first batch is returned whole even above it, so consumers make progress.
        self.fetch_max_bytes = fetch_max_bytes
        self._stats = stats if stats is not None else BrokerStats(per_request=False)
        # Several nodes in one process (broker/cluster/nodes.py): whether this node leads a partition,
        # and a partition's in-sync replicas (one node alone is the whole ISR).
        self._leads = leads
        self._isr = isr

    def for_node(self, leads: Callable[[str, int], bool],
                 isr: Callable[[str, int], list[int]] | None = None) -> RecordService:
        """This service as one node of several sees it: other nodes' partitions answer
        NOT_LEADER_OR_FOLLOWER, acks=all needs ``isr`` to meet min.insync.replicas."""
        return RecordService(self._logs, self._stats, leads, isr,
                             fetch_max_bytes=self.fetch_max_bytes)

    def _partition(self, topic: str, partition: int) -> PartitionLog:
        plog = self._logs.get_partition(topic, partition)
        if plog is None:
            raise unknown_partition()
        if self._leads is not None and not self._leads(topic, partition):
            raise ServiceError(ErrorCode.not_leader_or_follower,
                               f"This node is not the leader of {topic}-{partition}")
        return plog

    def has_partition(self, topic: str, partition: int) -> bool:
        return self._logs.get_partition(topic, partition) is not None

    # Admin views of the local logs (DescribeLogDirs, DescribeProducers) ---------------------------
    @property
    def log_dir(self) -> str:
        """The absolute path of the log directory."""
        return str(self._logs.directory.absolute())

    def partition_size(self, topic: str, partition: int) -> int | None:
        """Bytes of the partition's segments; None if there is no such partition."""
        plog = self._logs.get_partition(topic, partition)
        return None if plog is None else plog.size_bytes

    def active_producers(self, topic: str, partition: int) -> list[ActiveProducer]:
        """The producers the partition's log tracks (any replica answers, leader or not)."""
        plog = self._logs.get_partition(topic, partition)
        if plog is None:
            raise unknown_partition()
        return plog.producers.active_producers()

    def _internal(self, topic: str) -> bool:
        info = self._logs.topic(topic)
        return info is not None and info.internal

    # Produce -----------------------------------------------------------------------------------
    def append(self, topic: str, partition: int, records: bytes | None, acks: int,
               client_id: str | None, verify_txn: TxnVerifier | None = None
               ) -> AppendInfo | Awaitable[AppendInfo]:
        """Validate and start the append of one partition's batch: its AppendInfo when written
        inline, else an awaitable of it (durable under the flush policy). ``verify_txn``:
        asked before a transactional batch opens a transaction on this partition (Kafka's
        transaction.partition.verification: no hanging transaction from a zombie)."""
        plog = self._partition(topic, partition)
        if self._internal(topic) and client_id != ADMIN_CLIENT_ID:
            raise ServiceError(ErrorCode.invalid_topic_exception,
                               f"Cannot append to internal topic {topic}")
        if not records:
            raise ServiceError(ErrorCode.invalid_record, "Produce request has no record batch")
        cfg = plog.config
        window = TimestampWindow(plog.now_ms(), cfg.timestamp_before_max_ms,
                                 cfg.timestamp_after_max_ms, cfg.log_append_time)
        try:
            records, header, _null_key = check_produced_batch(
                records, window, f"{topic}-{partition}" if cfg.compact else None)
        except CorruptRecordError as exc:
            raise service_error(exc) from None
        if header.attributes & 0x10 and verify_txn is not None and \
                header.producer_id not in plog.producers.ongoing:
            code = verify_txn(topic, partition, header.producer_id, header.producer_epoch)
            if code:
                raise ServiceError(ErrorCode(code), "the partition is not in the producer's "
                                   "ongoing transaction")
        if acks == -1 and cfg.min_insync_replicas > 1:
            # acks=all needs min.insync.replicas in sync (one broker alone is the whole ISR).
            in_sync = self._isr(topic, partition) if self._isr is not None else [1]
            if len(in_sync) < cfg.min_insync_replicas:
                raise ServiceError(
                    ErrorCode.not_enough_replicas,
                    f"The size of the current ISR Set({', '.join(map(str, in_sync))}) is "
                    f"insufficient to satisfy the min.isr requirement of "
                    f"{cfg.min_insync_replicas} for partition {topic}-{partition}")
        try:
            if cfg.compression >= 0 and header.compression != cfg.compression:
                records, header = _recompress(records, header, cfg.compression)
            info, fut = plog.append_nowait(records, [header])
        except Exception as exc:  # noqa: BLE001 - mapped to Kafka's code
            raise service_error(exc) from None
        self._stats.produced(topic, len(records))
        return info if fut is None else _durable(info, fut)

    def append_marker(self, topic: str, partition: int, producer_id: int, producer_epoch: int,
                      commit: bool, coordinator_epoch: int) -> Awaitable[AppendInfo]:
        """Append a COMMIT/ABORT control batch (WriteTxnMarkers, on the partition's leader):
        durable when awaited. A marker older than the producer's epoch on this partition is
        refused INVALID_PRODUCER_EPOCH, as Kafka's ProducerAppendInfo fences it."""
        plog = self._partition(topic, partition)
        known = plog.producers.entries.get(producer_id)
        if known is not None and known.epoch > producer_epoch:
            raise ServiceError(ErrorCode.invalid_producer_epoch,
                               f"marker epoch {producer_epoch} of producer {producer_id} is "
                               f"older than {known.epoch}")
        batch = marker_batch(producer_id, producer_epoch, commit, coordinator_epoch,
                             plog.now_ms())
        try:
            info, fut = plog.append_nowait(batch, [parse_batch_header(batch)])
        except Exception as exc:  # noqa: BLE001 - mapped to Kafka's code
            raise service_error(exc) from None
        return _durable(info, fut) if fut is not None else _done(info)

    # Fetch -------------------------------------------------------------------------------------
    def fetch(self, topics: Sequence[tuple[str | None, uuid.UUID | None, Sequence[Any]]],
              readable: Callable[[str], bool] | None = None) -> FetchSession:
        """Resolve the requested partitions once: (name, or id when name is None, partitions
        with ``partition``, ``fetch_offset`` and ``partition_max_bytes``). A topic for which
        ``readable(name)`` is false is answered TOPIC_AUTHORIZATION_FAILED, existing or not."""
        return FetchSession(self._logs, topics, self._stats, self._leads, readable)

    # ListOffsets / OffsetForLeaderEpoch / DeleteRecords ----------------------------------------
    async def list_offset(self, topic: str, partition: int, timestamp: int,
                          read_committed: bool = False) -> tuple[int, int, int]:
        """(timestamp, offset, leader epoch) as Kafka answers ListOffsets (LATEST of a
        read_committed request: the last stable offset)."""
        plog = self._partition(topic, partition)
        if read_committed and timestamp == LATEST:
            return -1, plog.last_stable_offset, LEADER_EPOCH
        if timestamp >= 0 or timestamp == MAX_TIMESTAMP:
            # Reads a batch from the segment file: keep it off the event loop.
            found = await asyncio.to_thread(_lookup, plog, timestamp)
            if read_committed and found[1] >= plog.last_stable_offset:
                return -1, -1, -1  # Kafka: only offsets below the last fetchable one
            return found
        return _lookup(plog, timestamp)

    def end_offset_for_epoch(self, topic: str, partition: int, current_leader_epoch: int,
                             leader_epoch: int) -> tuple[int, int]:
        """(epoch, end offset): one leader epoch, 0, since offset 0 on a single node."""
        plog = self._partition(topic, partition)
        if current_leader_epoch > LEADER_EPOCH:
            raise ServiceError(ErrorCode.unknown_leader_epoch)
        if leader_epoch == LEADER_EPOCH:
            return LEADER_EPOCH, plog.log_end_offset
        return -1, -1

    async def delete_records(self, topic: str, partition: int, offset: int) -> int:
        """Move the log start offset forward; the new low watermark."""
        self._partition(topic, partition)
        if self._internal(topic):
            raise ServiceError(ErrorCode.invalid_topic_exception,
                               f"Cannot delete records of internal topic {topic}")
        try:
            return await self._logs.delete_records(topic, partition, offset)
        except OffsetOutOfRangeError as exc:
            raise service_error(exc) from None

    async def allocate_producer_id(self) -> int:
        return await self._logs.allocate_producer_id()


async def _durable(info: AppendInfo, fut: asyncio.Future) -> AppendInfo:
    await fut
    return info


async def _done(info: AppendInfo) -> AppendInfo:
    return info


def _recompress(records: bytes, header: Any, codec: int) -> tuple[bytes, Any]:
    """A topic with compression.type other than 'producer' stores batches in its own codec."""
    batch = build_batch(decode_records(records), base_offset=header.base_offset,
                        compression=codec, producer_id=header.producer_id,
                        producer_epoch=header.producer_epoch,
                        base_sequence=header.base_sequence,
                        transactional=header.is_transactional,
                        timestamp_type=header.timestamp_type,
                        partition_leader_epoch=header.partition_leader_epoch)
    return batch, parse_batch_header(batch)


def _lookup(plog: PartitionLog, timestamp: int) -> tuple[int, int, int]:
    if timestamp == LATEST:
        return -1, plog.log_end_offset, LEADER_EPOCH
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, plog.log_start_offset, LEADER_EPOCH
    if timestamp == LATEST_TIERED:
        return -1, -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = plog.max_timestamp_offset()
    elif timestamp < 0:
        raise ServiceError(ErrorCode.invalid_request)
    else:
        found = plog.offset_for_timestamp(timestamp)
    if found is None:
        return -1, -1, -1
    offset, ts = found
    return ts, offset, LEADER_EPOCH


# Fetch sessions ----------------------------------------------------------------------------------

@dataclass(slots=True)
class PartitionRead:
    """One partition of a Fetch answer as of now."""

    partition: int
    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    records: LogSlice | None = None
    last_stable_offset: int = -1  # -1: the high watermark (no open transaction)
    aborted: list[Any] | None = None  # read_committed: AbortedTxn of the range


@dataclass(slots=True)
class _Target:
    request: Any  # partition, fetch_offset, partition_max_bytes
    plog: PartitionLog | None
    error: ErrorCode


class FetchSession:
    """The partitions of one Fetch request, resolved once; ``read`` reads them as of now and
    ``wait`` sleeps until one of them is appended to (long poll)."""

    def __init__(self, logs: LogManager,
                 topics: Sequence[tuple[str | None, uuid.UUID | None, Sequence[Any]]],
                 stats: BrokerStats, leads: Callable[[str, int], bool] | None = None,
                 readable: Callable[[str], bool] | None = None) -> None:
        self._stats = stats
        self._topic_bytes: dict[str, int] = {}  # of the last read: counted once it is sent
        self.topics: list[list[_Target]] = []
        self.logs: list[PartitionLog] = []
        self.has_error = False
        for name, topic_id, partitions in topics:
            info: TopicInfo | None
            if name is None:
                info = logs.topic_by_id(topic_id) if topic_id is not None else None
                missing = ErrorCode.unknown_topic_id
            else:
                info = logs.topic(name)
                missing = ErrorCode.unknown_topic_or_partition
            known = name if info is None else info.name
            if readable is not None and known is not None and not readable(known):
                # refused before existence is looked at; not an error that ends a long poll
                self.topics.append([_Target(p, None, ErrorCode.topic_authorization_failed)
                                    for p in partitions])
                continue
            targets = []
            for p in partitions:
                plog = logs.get_partition(info.name, p.partition) if info is not None else None
                if plog is None:
                    self.has_error = True
                    targets.append(_Target(p, None, missing if info is None
                                           else ErrorCode.unknown_topic_or_partition))
                elif info is not None and leads is not None and not leads(info.name, p.partition):
                    self.has_error = True
                    targets.append(_Target(p, None, ErrorCode.not_leader_or_follower))
                else:
                    self.logs.append(plog)
                    targets.append(_Target(p, plog, ErrorCode.none))
            self.topics.append(targets)

    def read(self, max_bytes: int, read_committed: bool = False
             ) -> tuple[list[list[PartitionRead]], int, bool]:
        """(reads per topic, record bytes, any partition error); at least one batch is returned
        even above ``max_bytes`` so consumers make progress (KIP-74). ``read_committed``: up
        to the last stable offset, with the aborted transactions of the range."""
        remaining = max_bytes
        min_one = True
        total = 0
        error = self.has_error
        topic_bytes: dict[str, int] = {}
        self._topic_bytes = topic_bytes
        out: list[list[PartitionRead]] = []
        for targets in self.topics:
            reads = []
            for t in targets:
                p, plog = t.request, t.plog
                if plog is not None and plog.closed:  # deleted while we waited
                    plog = None
                    t.error = ErrorCode.unknown_topic_or_partition
                    error = True
                if plog is None:
                    reads.append(PartitionRead(p.partition, t.error))
                    continue
                lso = plog.last_stable_offset if plog.producers.ongoing else -1
                try:
                    limit = max(min(p.partition_max_bytes, remaining), 0)
                    if read_committed:
                        slice_ = plog.read(p.fetch_offset, limit, min_one=min_one,
                                           upto=None if lso < 0 else lso)
                    else:
                        slice_ = plog.read(p.fetch_offset, limit, min_one=min_one)
                except OffsetOutOfRangeError:
                    reads.append(PartitionRead(p.partition, ErrorCode.offset_out_of_range))
                    error = True
                    continue
                if slice_ is not None:
                    min_one = False
                    remaining -= slice_.size
                    total += slice_.size
                    topic_bytes[plog.topic] = topic_bytes.get(plog.topic, 0) + slice_.size
                read = PartitionRead(p.partition, ErrorCode.none, plog.log_end_offset,
                                     plog.log_start_offset, slice_, lso)
                if read_committed and slice_ is not None and plog.producers.aborted:
                    read.aborted = plog.producers.aborted_in(
                        p.fetch_offset, plog.log_end_offset if lso < 0 else lso)
                reads.append(read)
            out.append(reads)
        return out, total, error

    def sent(self) -> None:
        """The last read is the answer: count its bytes out per topic."""
        self._stats.fetched(self._topic_bytes)

    @property
    def any_closed(self) -> bool:
        return any(p.closed for p in self.logs)

    async def wait(self, timeout: float) -> None:
        """Return when any partition is appended to, or after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        for plog in self.logs:
            plog.add_waiter(fut)
        timer = loop.call_later(max(timeout, 0), _resolve, fut)
        try:
            await fut
        finally:
            timer.cancel()
            for plog in self.logs:
                plog.remove_waiter(fut)


def _resolve(fut: asyncio.Future) -> None:
    if not fut.done():
        fut.set_result(None)
