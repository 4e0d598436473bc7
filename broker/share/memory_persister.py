"""A ``Persister`` kept in memory: share state that lasts as long as the process.

Stands in for the share-state coordinator (``__share_group_state``) where none runs: unit tests,
and the broker until it is given the durable one (``ShareService(persister=...)``). Writes merge
as the coordinator's ShareUpdate replay does: newer ranges overwrite the offsets they cover, a
start offset other than -1 raises the start and drops what lies below it.
"""

from __future__ import annotations

from kafkette.coordinator.share.persister import (
    UNINITIALIZED_START_OFFSET,
    SharePartitionKey,
    ShareState,
    StateBatch,
    StateSummary,
)

FENCED_STATE_EPOCH = 124


class InMemoryPersister:
    def __init__(self) -> None:
        self.states: dict[SharePartitionKey, ShareState] = {}
        self.writes = 0  # how many writes were made (tests)
        self.fail_next_write = 0  # an error code the next write answers (tests)

    async def initialize(self, key: SharePartitionKey, state_epoch: int,
                         start_offset: int) -> int:
        self.states[key] = ShareState(state_epoch=state_epoch, start_offset=start_offset)
        return 0

    async def read(self, key: SharePartitionKey, leader_epoch: int
                   ) -> tuple[int, ShareState | None]:
        state = self.states.get(key)
        if state is None:
            return 0, None
        if leader_epoch > state.leader_epoch:
            state.leader_epoch = leader_epoch
        return 0, ShareState(state.state_epoch, state.leader_epoch, state.start_offset,
                             list(state.state_batches))

    async def write(self, key: SharePartitionKey, state: ShareState) -> int:
        if self.fail_next_write:
            code, self.fail_next_write = self.fail_next_write, 0
            return code
        current = self.states.get(key)
        if current is None:
            current = self.states[key] = ShareState(state.state_epoch, state.leader_epoch)
        elif state.state_epoch < current.state_epoch:
            return FENCED_STATE_EPOCH
        self.writes += 1
        if state.start_offset != UNINITIALIZED_START_OFFSET and \
                state.start_offset > current.start_offset:
            current.start_offset = state.start_offset
        current.state_batches = merge_batches(current.state_batches, state.state_batches,
                                              current.start_offset)
        return 0

    async def delete(self, key: SharePartitionKey) -> int:
        self.states.pop(key, None)
        return 0

    async def read_summary(self, key: SharePartitionKey) -> tuple[int, StateSummary | None]:
        state = self.states.get(key)
        if state is None:
            return 0, None
        return 0, StateSummary(state.state_epoch, state.leader_epoch, state.start_offset)


def merge_batches(current: list[StateBatch], update: list[StateBatch],
                  start_offset: int) -> list[StateBatch]:
    """``update``'s ranges over ``current``'s, nothing below ``start_offset``."""
    per_offset: dict[int, tuple[int, int]] = {}
    for batches in (current, update):
        for b in batches:
            for offset in range(max(b.first_offset, start_offset), b.last_offset + 1):
                per_offset[offset] = (b.delivery_state, b.delivery_count)
    out: list[StateBatch] = []
    for offset in sorted(per_offset):
        state, count = per_offset[offset]
        if out and out[-1].last_offset + 1 == offset and out[-1].delivery_state == state \
                and out[-1].delivery_count == count:
            out[-1] = StateBatch(out[-1].first_offset, offset, state, count)
        else:
            out.append(StateBatch(offset, offset, state, count))
    return out
