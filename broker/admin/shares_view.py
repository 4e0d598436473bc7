"""The one place the admin server reads share groups' partitions (KIP-932).

Per share-partition of a group: its start offset (SPSO), its in-flight records by state and its
lag. A share-partition loaded in memory is read through the share service's public snapshot
(``ShareService.snapshot``); one that is not (no share session on this broker, or state written
by another broker) through the share-state service's ``read_summary``, which has its persisted
start offset and how many records past it are already delivered (acknowledged or archived).

Lag is what is left to deliver: log end offset - SPSO - records past the SPSO already
acknowledged or archived (what Kafka's DescribeShareGroupOffsets v1 calls the
delivery-complete count), never below 0. All of it runs on the broker's event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafkette.coordinator.share.persister import UNINITIALIZED_START_OFFSET, SharePartitionKey


@dataclass(frozen=True, slots=True)
class SharePartitionView:
    topic: str
    partition: int
    start_offset: int  # the SPSO
    log_end_offset: int | None
    lag: int | None
    loaded: bool  # in memory on this broker: the in-flight counts below are known
    in_flight: int | None = None  # records from the SPSO to the SPEO
    available: int | None = None
    acquired: int | None = None
    acknowledged: int | None = None
    archived: int | None = None

    def as_json(self) -> dict[str, Any]:
        return {"topic": self.topic, "partition": self.partition,
                "start_offset": self.start_offset, "log_end_offset": self.log_end_offset,
                "lag": self.lag, "loaded": self.loaded, "in_flight": self.in_flight,
                "available": self.available, "acquired": self.acquired,
                "acknowledged": self.acknowledged, "archived": self.archived}


def _lag(end: int | None, start: int, delivered: int) -> int | None:
    if end is None or start < 0:
        return None
    return max(end - start - max(delivered, 0), 0)


async def share_partitions(broker: Any, group_id: str) -> list[SharePartitionView]:
    """The group's share-partitions, loaded or persisted, sorted by topic and partition."""
    services = broker.services
    topics = services.topics
    views: dict[tuple[str, int], SharePartitionView] = {}
    loaded_keys: set[SharePartitionKey] = set()
    for snap in services.shares.snapshot(group_id):
        info = topics.get_by_id(snap.key.topic_id)
        if info is None:
            continue
        loaded_keys.add(snap.key)
        end = _log_end(broker, info.name, snap.key.partition)
        counts = snap.counts
        views[(info.name, snap.key.partition)] = SharePartitionView(
            info.name, snap.key.partition, snap.start_offset, end,
            _lag(end, snap.start_offset, counts.acknowledged + counts.archived), True,
            snap.end_offset - snap.start_offset, counts.available, counts.acquired,
            counts.acknowledged, counts.archived)
    state = services.share_state
    for key in await state.group_keys(group_id):
        if key in loaded_keys:
            continue
        info = topics.get_by_id(key.topic_id)
        if info is None:
            continue
        code, summary = await state.read_summary(key)
        if code or summary is None or summary.start_offset == UNINITIALIZED_START_OFFSET:
            continue
        end = _log_end(broker, info.name, key.partition)
        views[(info.name, key.partition)] = SharePartitionView(
            info.name, key.partition, summary.start_offset, end,
            _lag(end, summary.start_offset, summary.delivery_complete_count), False)
    return [views[k] for k in sorted(views)]


def _log_end(broker: Any, topic: str, partition: int) -> int | None:
    plog = broker.logs.get_partition(topic, partition)
    return plog.log_end_offset if plog is not None else None
