"""The share-group offsets admin logic (DescribeShareGroupOffsets / Alter / Delete) over a
real share-state coordinator (MemoryLog) and a stand-in for the group coordinator's view."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import pytest

from kafkette.broker.services.share_offsets import (
    GROUP_ID_NOT_FOUND,
    INVALID_GROUP_ID,
    NON_EMPTY_GROUP,
    UNKNOWN_TOPIC_OR_PARTITION,
    PartitionOffset,
    ShareOffsets,
)
from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.runtime.coordinator_log import MemoryLog
from kafkette.coordinator.share.persister import (
    ACKNOWLEDGED,
    SharePartitionKey,
    ShareState,
    StateBatch,
)
from kafkette.coordinator.share.service import ShareCoordinatorService

JOBS = uuid.uuid4()


@dataclass(frozen=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int
    internal: bool = False


class Topics:
    def __init__(self, *topics: Topic) -> None:
        self.by_name = {t.name: t for t in topics}

    def get(self, name: str):
        return self.by_name.get(name)

    def get_by_id(self, topic_id: uuid.UUID):
        return next((t for t in self.by_name.values() if t.topic_id == topic_id), None)


@dataclass
class Group:
    group_state: str = "Empty"
    group_epoch: int = 3
    initialized: dict = field(default_factory=dict)


@pytest.fixture
async def env():
    coord = ShareCoordinatorService(1, 4, ManualClock(), lambda p: MemoryLog())
    await coord.start()
    groups: dict[str, Group] = {"workers": Group(initialized={JOBS: (0, 1)})}

    async def lookup(gid: str):
        group = groups.get(gid)
        if group is None:
            return GROUP_ID_NOT_FOUND, f"Group {gid} not found.", None
        return 0, None, group

    ends = {("jobs", 0): 10, ("jobs", 1): 4}

    async def end_offset(topic: str, partition: int) -> int | None:
        return ends.get((topic, partition))
    offsets = ShareOffsets(lookup, Topics(Topic("jobs", JOBS, 2), Topic("__internal", uuid.uuid4(),
                                                                         1, True)),
                           coord, end_offset, coord.group_keys)
    yield offsets, coord, groups
    await coord.stop()


async def test_describe_all_and_by_topic(env) -> None:
    offsets, coord, _groups = env
    key = SharePartitionKey("workers", JOBS, 0)
    await coord.initialize(key, 1, 0)
    await coord.write(key, ShareState(1, 0, 2, [StateBatch(2, 2, ACKNOWLEDGED, 1),
                                                StateBatch(5, 6, ACKNOWLEDGED, 1)]))
    described = await offsets.describe("workers", None)
    assert described.error == 0
    (topic,) = described.topics
    assert (topic.name, topic.topic_id) == ("jobs", JOBS)
    # partition 0: start 2, 3 of the offsets >= 2 delivered, end 10 -> lag 10 - 2 - 3 = 5;
    # partition 1 initialised by the group but no state yet: -1
    assert topic.partitions == [PartitionOffset(0, 2, 0, 5), PartitionOffset(1, -1, 0, -1)]

    missing = await offsets.describe("nobody", None)
    assert (missing.error, missing.message, missing.topics) == (
        GROUP_ID_NOT_FOUND, "Group nobody not found.", [])
    # with topics named, Kafka does not check the group: unknown topic -> -1, no topic id
    named = await offsets.describe("nobody", [("jobs", [0]), ("gone", [0, 1])])
    assert named.error == 0
    assert [(t.name, t.topic_id, [p.start_offset for p in t.partitions]) for t in named.topics] == [
        ("jobs", JOBS, [-1]), ("gone", None, [-1, -1])]
    assert (await offsets.describe("", None)).error == INVALID_GROUP_ID


async def test_alter_needs_an_empty_group_and_fences_old_state(env) -> None:
    offsets, coord, groups = env
    key = SharePartitionKey("workers", JOBS, 1)
    await coord.initialize(key, 3, 0)
    await coord.write(key, ShareState(3, 0, 0, [StateBatch(0, 1, ACKNOWLEDGED, 1)]))
    groups["workers"].group_state = "Stable"
    busy = await offsets.alter("workers", [("jobs", [(1, 0)])])
    assert (busy.error, busy.message, busy.topics) == (NON_EMPTY_GROUP, "The group is not empty.",
                                                         [])
    groups["workers"].group_state = "Empty"
    done = await offsets.alter("workers", [("jobs", [(1, 7), (5, 0)]), ("gone", [(0, 1)])])
    assert done.error == 0
    assert [(t.name, t.topic_id, [(p.partition, p.error) for p in t.partitions])
            for t in done.topics] == [
        ("jobs", JOBS, [(1, 0), (5, UNKNOWN_TOPIC_OR_PARTITION)]),
        ("gone", None, [(0, UNKNOWN_TOPIC_OR_PARTITION)])]
    _code, state = await coord.read(key, -1)
    assert state is not None and (state.state_epoch, state.start_offset, state.state_batches) == (
        4, 7, [])  # above the old state epoch 3 even though the group epoch is 3
    # the old leader's next write is fenced
    assert await coord.write(key, ShareState(3, 0, -1, [])) == 124
    assert (await offsets.alter("nobody", [("jobs", [(0, 0)])])).error == GROUP_ID_NOT_FOUND


async def test_delete_removes_the_state(env) -> None:
    offsets, coord, groups = env
    for p in (0, 1):
        await coord.initialize(SharePartitionKey("workers", JOBS, p), 3, 5)
    groups["workers"].group_state = "Stable"
    assert (await offsets.delete("workers", ["jobs"])).error == NON_EMPTY_GROUP
    groups["workers"].group_state = "Empty"
    result = await offsets.delete("workers", ["jobs", "gone"])
    assert result.error == 0
    assert [(t.name, t.topic_id, t.error) for t in result.topics] == [
        ("jobs", JOBS, 0), ("gone", None, UNKNOWN_TOPIC_OR_PARTITION)]
    assert await coord.group_keys("workers") == []
    assert await coord.read(SharePartitionKey("workers", JOBS, 0), -1) == (0, None)
