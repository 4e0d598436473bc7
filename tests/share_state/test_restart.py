"""The share Persister's state survives a SIGKILL of the broker process: a write answered
before the kill is read back, exactly, by the broker restarted on the same log dir."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid

from kafkette.broker.server import Broker
from kafkette.broker.testing.runners import test_config as broker_config
from kafkette.coordinator.share.persister import (
    ACKNOWLEDGED,
    ARCHIVED,
    AVAILABLE,
    SharePartitionKey,
    ShareState,
    StateBatch,
)

# Runs in a child process: a broker writes share state through its Persister, reports what was
# answered, then is killed with SIGKILL (no shutdown, no flush beyond what answered writes did).
CHILD = r"""
import asyncio, json, os, signal, sys, uuid
from kafkette.broker.server import Broker
from kafkette.coordinator.share.persister import SharePartitionKey, ShareState, StateBatch

config = json.loads(sys.argv[1])
topic = uuid.UUID(sys.argv[2])

async def main():
    broker = Broker(config)
    await broker.start()
    await broker.wait_ready()
    persister = broker.services.share_state
    key = SharePartitionKey("workers", topic, 0)
    codes = [await persister.initialize(key, 4, 0)]
    codes.append(await persister.write(key, ShareState(4, 1, 0, [StateBatch(0, 4, 2, 1),
                                                                 StateBatch(5, 9, 0, 1)])))
    for i in range(5):  # enough updates to pass one snapshot
        codes.append(await persister.write(key, ShareState(4, 1, 5 + i, [StateBatch(5 + i, 5 + i, 4, 2)])))
    codes.append(await persister.write(key, ShareState(4, 1, -1, [StateBatch(12, 13, 2, 1)])))
    other = SharePartitionKey("workers", topic, 1)
    codes.append(await persister.initialize(other, 4, 100))
    codes.append(await persister.delete(other))
    print(json.dumps(codes), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)

asyncio.run(main())
"""


async def test_persisted_state_survives_sigkill(tmp_path) -> None:
    config = broker_config(str(tmp_path), **{
        "share.coordinator.state.topic.num.partitions": "3",
        "share.coordinator.snapshot.update.records.per.snapshot": "3",
        "offsets.topic.num.partitions": "2"})
    topic = uuid.uuid4()
    child = subprocess.run([sys.executable, "-c", CHILD, json.dumps(config), str(topic)],
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert child.returncode == -signal.SIGKILL, child.stderr
    assert json.loads(child.stdout.splitlines()[-1]) == [0] * 10

    async with Broker(config) as broker:
        assert broker.logs.topic("__share_group_state") is not None
        persister = broker.services.share_state
        code, state = await persister.read(SharePartitionKey("workers", topic, 0), 1)
        assert code == 0
        assert state == ShareState(4, 1, 9, [StateBatch(9, 9, ARCHIVED, 2),
                                             StateBatch(12, 13, ACKNOWLEDGED, 1)])
        code, summary = await persister.read_summary(SharePartitionKey("workers", topic, 0))
        assert code == 0 and summary is not None
        assert (summary.state_epoch, summary.start_offset, summary.delivery_complete_count) == (
            4, 9, 3)
        assert await persister.read(SharePartitionKey("workers", topic, 1), -1) == (0, None)
        # and it goes on from there: a write by the same leader merges into what was loaded
        key = SharePartitionKey("workers", topic, 0)
        assert await persister.write(key, ShareState(4, 1, -1, [
            StateBatch(10, 11, AVAILABLE, 3)])) == 0
        _code, state = await persister.read(key, 1)
        assert state is not None and state.state_batches[1] == StateBatch(10, 11, AVAILABLE, 3)
