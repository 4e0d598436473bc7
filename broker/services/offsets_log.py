"""Adapts a storage PartitionLog of ``__consumer_offsets`` to the coordinator's log interface."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from operator import itemgetter
from typing import Any

from kafkette.coordinator.group.offsets.offset_replay import RawBatches
from kafkette.coordinator.runtime.coordinator_log import TxnMarker, TxnRecordKey
from kafkette.protocol.control_records import marker_batch
from kafkette.protocol.records import build_batch, parse_batch_header
from kafkette.storage.segment import read_region

OFFSETS_TOPIC = "__consumer_offsets"
TRANSACTION_TOPIC = "__transaction_state"  # (services/transactions.py runs its coordinator)

_KEY = itemgetter(0)
_PLAIN = {bytes}
_CODECS = {"none": 0, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def compression_codec(value: str) -> int:
    """offsets.topic.compression.codec: Kafka takes the numeric id; names are accepted too."""
    value = value.strip().lower()
    return int(value) if value.isdigit() else _CODECS.get(value, 0)


class PartitionOffsetsLog:
    def __init__(self, plog: Any, compression: int = 0) -> None:
        self.plog = plog
        self.compression = compression

    def append(self, records: Sequence[tuple[Any, bytes | None]]) -> asyncio.Future:
        data, headers = self._encode(records)
        return self.plog.append_future(data, headers)

    def append_inline(self, records: Sequence[tuple[Any, bytes | None]]
                      ) -> asyncio.Future | None:
        """``append``, but None when the records are durable already (a page-cache write the
        flush policy allows: see ``PartitionLog.append_durable``); errors are raised."""
        data, headers = self._encode(records)
        return self.plog.append_durable(data, headers)

    def _encode(self, records: Sequence[tuple[Any, bytes | None]]) -> tuple[bytes, list[Any]]:
        # Plain records only (every key bytes): checked in C, no generator step per record.
        if records and set(map(type, map(_KEY, records))) == _PLAIN:
            batch = build_batch(records, compression=self.compression)
            return batch, [parse_batch_header(batch)]
        batches = list(_transactional_batches(records, self.compression))
        return b"".join(batches), [parse_batch_header(b) for b in batches]

    async def read(self) -> AsyncIterator[Iterable[tuple[Any, bytes | None]]]:
        """The log as RawBatches of about 1 MiB, which the shard walks batch by batch. What
        the page cache holds is read on the loop (RWF_NOWAIT never waits on the disk); the
        rest in a thread (a round trip per chunk doubled the replay time of a cached log)."""
        for fd, position, size in self.plog.replay_regions():
            data = read_region(fd, position, size, nowait=True)
            cached = data is not None
            if data is None:
                data = await asyncio.to_thread(read_region, fd, position, size)
                assert data is not None  # a read that may wait returns the whole region
            yield RawBatches([data])
            del data  # before other partitions' loads run: one chunk held at a time
            if cached:
                await asyncio.sleep(0)  # other work runs between chunks


def _transactional_batches(records: Sequence[tuple[Any, bytes | None]], compression: int
                           ) -> Iterator[bytes]:
    """Plain records, transactional records (TxnRecordKey) and markers (TxnMarker) as the
    batches Kafka writes: consecutive records of one kind share a batch, a marker is its own
    control batch."""
    run: list[tuple[bytes, bytes | None]] = []
    producer: tuple[int, int] | None = None
    for key, value in records:
        if isinstance(key, TxnMarker):
            if run:
                yield _batch(run, producer, compression)
                run, producer = [], None
            yield marker_batch(key.producer_id, key.producer_epoch, key.commit,
                               key.coordinator_epoch, int(time.time() * 1000))
            continue
        this = (key.producer_id, key.producer_epoch) if isinstance(key, TxnRecordKey) else None
        if run and this != producer:
            yield _batch(run, producer, compression)
            run = []
        producer = this
        run.append((key.key if isinstance(key, TxnRecordKey) else key, value))
    if run:
        yield _batch(run, producer, compression)


def _batch(records: list[tuple[bytes, bytes | None]], producer: tuple[int, int] | None,
           compression: int) -> bytes:
    if producer is None:
        return build_batch(records, compression=compression)
    return build_batch(records, compression=compression, producer_id=producer[0],
                       producer_epoch=producer[1], transactional=True)


def consumer_group_config(config: Any) -> Any:
    """group.consumer.* and group.coordinator.rebalance.protocols, validated (ConfigError)."""
    from kafkette.coordinator.group.consumer.consumer_group_config import ConsumerGroupConfig

    from ..config_def import ConfigError

    try:
        return ConsumerGroupConfig.from_config(config.__getitem__)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def share_group_config(config: Any) -> Any:
    """group.share.* and share.version, validated (ConfigError)."""
    from kafkette.coordinator.group.share.share_config import ShareGroupConfig

    from ..config_def import ConfigError

    try:
        return ShareGroupConfig.from_config(config.get)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def coordinator_config(config: Any, logs: Any = None, group_overrides: Any = None,
                       share_overrides: Any = None, share_member_listeners: Any = None) -> Any:
    """``group_overrides`` / ``share_overrides``: the live maps of consumer / share groups' own
    session timeout and heartbeat interval (broker/services/group_configs.py);
    ``share_member_listeners``: the live list of callbacks told of share members leaving."""
    from kafkette.coordinator.group.group_config import CoordinatorConfig

    return CoordinatorConfig(
        consumer=consumer_group_config(config), topics=topic_view(logs),
        group_overrides=group_overrides if group_overrides is not None else {},
        share=share_group_config(config),
        share_overrides=share_overrides if share_overrides is not None else {},
        share_member_listeners=(share_member_listeners if share_member_listeners is not None
                                else []),
        initial_rebalance_delay_ms=config.get_int("group.initial.rebalance.delay.ms"),
        min_session_timeout_ms=config.get_int("group.min.session.timeout.ms"),
        max_session_timeout_ms=config.get_int("group.max.session.timeout.ms"),
        max_group_size=config.get_int("group.max.size"),
        offset_metadata_max_bytes=config.get_int("offset.metadata.max.bytes"),
        offsets_retention_ms=config.get_int("offsets.retention.minutes") * 60_000,
        retention_check_interval_ms=config.get_int("offsets.retention.check.interval.ms"),
        append_linger_ms=config.get_int("group.coordinator.append.linger.ms"),
        commit_timeout_ms=config.get_int("offsets.commit.timeout.ms"),
    )


async def internal_topic(logs: Any, name: str, partitions: int, segment_bytes: str,
                         compression: str) -> Any:
    """The TopicInfo of a compacted internal topic, created first if it does not exist."""
    info = logs.topic(name)
    if info is None:
        info = await logs.create_topic(
            name, partitions, {"cleanup.policy": "compact", "segment.bytes": segment_bytes,
                               "compression.type": compression}, internal=True)
    return info


async def start_coordinator(logs: Any, config: Any, clock: Any, group_overrides: Any = None,
                            share_overrides: Any = None, share_member_listeners: Any = None
                            ) -> Any:
    """Create ``__consumer_offsets`` if needed, then start the coordinator on its partitions."""
    from kafkette.coordinator.group.group_service import GroupCoordinator

    info = await internal_topic(logs, OFFSETS_TOPIC, config.get_int("offsets.topic.num.partitions"),
                                config.get_str("offsets.topic.segment.bytes"), "producer")
    codec = compression_codec(config.get_str("offsets.topic.compression.codec"))
    coord = GroupCoordinator(
        config.node_id, info.partitions, clock,
        coordinator_config(config, logs, group_overrides, share_overrides,
                           share_member_listeners),
        lambda p: PartitionOffsetsLog(logs.partition(OFFSETS_TOPIC, p), codec),
        partition_count=_partition_counter(logs))
    await coord.start()
    return coord


def _partition_counter(logs: Any) -> Callable[[str], int]:
    topic_info = logs.topic  # bound once: every OffsetCommit asks

    def partition_count(topic: str) -> int:
        """Partitions of ``topic`` (0 if it does not exist): valid indexes are 0 <= p < count."""
        info = topic_info(topic)
        return info.partitions if info is not None else 0
    return partition_count


def topic_view(logs: Any) -> Any:
    """The coordinator's view of the (non-internal) topics of ``logs``."""
    from kafkette.coordinator.group.consumer.topic_view import TopicView

    if logs is None:
        return TopicView()

    def lookup(name: str) -> Any:
        info = logs.topic(name)
        return None if info is None or info.internal else (info.topic_id, info.partitions)

    def name_of(topic_id: Any) -> str | None:
        info = logs.topic_by_id(topic_id)
        return None if info is None else info.name

    return TopicView(lookup, name_of, lambda: [t.name for t in logs.topics() if not t.internal])
