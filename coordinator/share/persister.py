"""What a share partition reads and writes of its durable state (Kafka's share ``Persister``).

The broker's share partitions call these; the share-state coordinator implements them over
``__share_group_state`` (Kafka's InitializeShareGroupState / ReadShareGroupState /
WriteShareGroupState / DeleteShareGroupState / ReadShareGroupStateSummary, kept in-process).
Every call completes only once what it wrote is durable; errors come back as Kafka error codes.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Protocol

# DeliveryState bytes of a persisted state batch (Kafka's RecordState ids)
AVAILABLE = 0
ACQUIRED = 1
ACKNOWLEDGED = 2
ARCHIVED = 4

# start offset of a share-partition initialised but never fetched: the first fetch picks the
# offset by share.auto.offset.reset
UNINITIALIZED_START_OFFSET = -1


@dataclass(frozen=True, slots=True)
class StateBatch:
    """Records first_offset..last_offset (inclusive) in one delivery state and count."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    group_id: str
    topic_id: uuid.UUID
    partition: int


@dataclass(slots=True)
class ShareState:
    """A share-partition's durable state as ReadShareGroupState answers it."""

    state_epoch: int = 0
    leader_epoch: int = -1
    start_offset: int = UNINITIALIZED_START_OFFSET
    state_batches: list[StateBatch] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class StateSummary:
    """ReadShareGroupStateSummary: what DescribeShareGroupOffsets needs."""

    state_epoch: int
    leader_epoch: int
    start_offset: int
    # offsets at or past start_offset already ACKNOWLEDGED/ARCHIVED (KIP-1226; -1 unknown):
    # DescribeShareGroupOffsets v1's lag is high watermark - start_offset - this
    delivery_complete_count: int = -1


class Persister(Protocol):
    async def initialize(self, key: SharePartitionKey, state_epoch: int,
                         start_offset: int) -> int:
        """Create (or reset) the state with no batches; returns an error code (0 = durable)."""
        ...

    async def read(self, key: SharePartitionKey, leader_epoch: int) -> tuple[int, ShareState | None]:
        """(error code, state); state is None when the share-partition has never been initialised."""
        ...

    async def write(self, key: SharePartitionKey, state: ShareState) -> int:
        """Write the start offset and the batches that changed; returns once durable.

        ``state.state_batches`` holds only the batches this write changes (Kafka's ShareUpdate);
        the coordinator merges them into its snapshot. Returns FENCED_STATE_EPOCH (124) for an
        older state epoch, FENCED_LEADER_EPOCH (74) for an older leader epoch than recorded
        (-1: not checked), 0 on success.
        """
        ...

    async def delete(self, key: SharePartitionKey) -> int:
        """Forget the share-partition's state (DeleteShareGroupState); returns an error code."""
        ...

    async def read_summary(self, key: SharePartitionKey) -> tuple[int, StateSummary | None]:
        """(error code, summary); summary is None when there is no state."""
        ...
