"""``__share_group_state`` does not grow without end: every prune interval a partition written
since its last prune gets a fresh snapshot of each share-partition, and its log start moves
past everything before; the state read back after a restart is the same."""

from __future__ import annotations

import time
import uuid

from kafkette.broker.testing import ThreadedBroker
from kafkette.broker.testing import test_config as broker_config
from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.share.persister import (
    ACKNOWLEDGED,
    AVAILABLE,
    SharePartitionKey,
    ShareState,
    StateBatch,
)

TOPIC = "__share_group_state"


def test_prune_keeps_the_state_and_drops_older_records(tmp_path) -> None:
    clock = ManualClock()
    config = broker_config(str(tmp_path), **{
        "share.coordinator.state.topic.num.partitions": 1, "offsets.topic.num.partitions": 1,
        "share.coordinator.state.topic.prune.interval.ms": 60_000})
    topic = uuid.uuid4()
    keys = [SharePartitionKey("workers", topic, p) for p in range(3)]
    with ThreadedBroker(config, clock=clock) as runner:
        state = runner.broker.services.share_state

        async def write_some() -> None:
            for key in keys:
                assert await state.initialize(key, 1, 0) == 0
                for i in range(20):
                    assert await state.write(key, ShareState(1, 0, i, [
                        StateBatch(i, i, ACKNOWLEDGED, 1),
                        StateBatch(i + 1, i + 3, AVAILABLE, 2)])) == 0
            assert await state.delete(keys[2]) == 0

        runner.run(write_some())
        plog = runner.broker.logs.partition(TOPIC, 0)
        assert (plog.log_start_offset, plog.high_watermark) == (0, 64)
        before = [runner.run(state.read(k, 0)) for k in keys]

        runner.run(clock.advance, 60_000)  # the prune timer
        deadline = time.monotonic() + 10
        while plog.log_start_offset == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        # the two live keys' snapshots are all that is left
        assert (plog.log_start_offset, plog.high_watermark) == (64, 66)
        assert [runner.run(state.read(k, 0)) for k in keys] == before
        assert runner.run(state.prune()) == 0  # nothing written since: nothing to do

    with ThreadedBroker(config, clock=ManualClock()) as runner:
        state = runner.broker.services.share_state
        after = [runner.run(state.read(k, 0)) for k in keys]
        assert after == before
        assert after[0][1] == ShareState(1, 0, 19, [StateBatch(19, 19, ACKNOWLEDGED, 1),
                                                    StateBatch(20, 22, AVAILABLE, 2)])
        assert after[2] == (0, None)
