"""Adapts a storage PartitionLog of ``__consumer_offsets`` to the coordinator's log interface."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from kafkette.protocol.records import build_batch, key_values, parse_batch_header

OFFSETS_TOPIC = "__consumer_offsets"
_CHUNK_BATCHES = 2000

_CODECS = {"none": 0, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def compression_codec(value: str) -> int:
    """offsets.topic.compression.codec: Kafka takes the numeric id; names are accepted too."""
    value = value.strip().lower()
    return int(value) if value.isdigit() else _CODECS.get(value, 0)


class PartitionOffsetsLog:
    def __init__(self, plog: Any, compression: int = 0) -> None:
        self.plog = plog
        self.compression = compression

    def append(self, records: Sequence[tuple[bytes, bytes | None]]) -> asyncio.Future:
        batch = build_batch(records, compression=self.compression)
        return self.plog.append_future(batch, [parse_batch_header(batch)])

    async def read(self) -> AsyncIterator[Sequence[tuple[bytes, bytes | None]]]:
        batches = self.plog.iter_batches(0)
        while True:
            chunk = await asyncio.to_thread(_decode_some, batches)
            if chunk is None:
                return
            if chunk:
                yield chunk


def _decode_some(batches: Any) -> list[tuple[bytes, bytes | None]] | None:
    out: list[tuple[bytes, bytes | None]] = []
    for i, (header, data) in enumerate(batches):
        if not header.is_control:
            out += [kv for kv in key_values(data) if kv[0] is not None]
        if i + 1 >= _CHUNK_BATCHES:
            return out
    return out or None


def consumer_group_config(config: Any) -> Any:
    """group.consumer.* and group.coordinator.rebalance.protocols, validated (ConfigError)."""
    from kafkette.coordinator.consumer.config import ConsumerGroupConfig

    from .config import ConfigError

    try:
        return ConsumerGroupConfig.from_config(config.__getitem__)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def coordinator_config(config: Any, logs: Any = None) -> Any:
    from kafkette.coordinator.config import CoordinatorConfig

    return CoordinatorConfig(
        consumer=consumer_group_config(config), topics=topic_view(logs),
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


async def start_coordinator(logs: Any, config: Any, clock: Any,
                            advertised: Callable[[], tuple[str, int]]) -> Any:
    """Create ``__consumer_offsets`` if needed, then start the coordinator on its partitions."""
    from kafkette.coordinator.service import GroupCoordinator

    info = logs.topic(OFFSETS_TOPIC)
    if info is None:
        info = await logs.create_topic(
            OFFSETS_TOPIC, config.get_int("offsets.topic.num.partitions"),
            {"cleanup.policy": "compact",
             "segment.bytes": config.get_str("offsets.topic.segment.bytes"),
             "compression.type": "producer"},
            internal=True)
    codec = compression_codec(config.get_str("offsets.topic.compression.codec"))
    coord = GroupCoordinator(
        config.node_id, info.partitions, clock, coordinator_config(config, logs),
        lambda p: PartitionOffsetsLog(logs.partition(OFFSETS_TOPIC, p), codec),
        partition_count=lambda topic: _partition_count(logs, topic),
        advertised=advertised)
    await coord.start()
    return coord


def _partition_count(logs: Any, topic: str) -> int:
    """Partitions of ``topic`` (0 if it does not exist): valid indexes are 0 <= p < count."""
    info = logs.topic(topic)
    return info.partitions if info is not None else 0


def topic_view(logs: Any) -> Any:
    """The coordinator's view of the (non-internal) topics of ``logs``."""
    from kafkette.coordinator.consumer.topics import TopicView

    if logs is None:
        return TopicView()

    def lookup(name: str) -> Any:
        info = logs.topic(name)
        return None if info is None or info.internal else (info.topic_id, info.partitions)

    def name_of(topic_id: Any) -> str | None:
        info = logs.topic_by_id(topic_id)
        return None if info is None else info.name

    return TopicView(lookup, name_of, lambda: [t.name for t in logs.topics() if not t.internal])
