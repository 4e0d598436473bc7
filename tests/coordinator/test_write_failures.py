"""A failed __consumer_offsets append leaves the coordinator as it was (Kafka reverts its snapshot)."""

from __future__ import annotations

import asyncio

import pytest

from kafkette.coordinator import errors as E
from kafkette.coordinator.clock import ManualClock
from kafkette.coordinator.errors import append_error
from kafkette.coordinator.log import MemoryLog
from kafkette.coordinator.shard import CommitPartition, CoordinatorConfig, JoinRequest, Shard
from kafkette.protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from kafkette.storage.log import KafkaStorageError, RecordTooLargeError

from .env import subscription


async def _loaded(records=()) -> tuple[Shard, MemoryLog, ManualClock]:
    log, clock = MemoryLog(), ManualClock()
    log.records = list(records)
    shard = Shard(0, log, clock, CoordinatorConfig(initial_rebalance_delay_ms=3000))
    await shard.load()
    return shard, log, clock


def _record(key, value) -> tuple[bytes, bytes | None]:
    return encode_key(key), None if value is None else encode_value(value)


async def _settled() -> None:
    for _ in range(3):  # the write's callbacks, then the ones they schedule
        await asyncio.sleep(0)


async def test_failed_delete_groups_keeps_the_group_and_its_offsets():
    ts = 1_699_999_000_000
    shard, log, _clock = await _loaded([
        _record(GroupMetadataKey("g"), GroupMetadataValue("consumer", 7, None, None, ts, ())),
        _record(OffsetCommitKey("g", "t", 0), OffsetCommitValue(42, -1, "m", ts)),
        _record(GroupMetadataKey("bare"), GroupMetadataValue("consumer", 3, None, None, ts, ())),
    ])
    log.fail_with = TimeoutError("disk stalled")
    results, write = shard.delete_groups(["g", "bare"])
    assert results == [("g", E.NONE), ("bare", E.NONE)]
    with pytest.raises(TimeoutError):
        await write
    await _settled()
    for gid, generation in (("g", 7), ("bare", 3)):
        group = shard.groups[gid]
        assert (group.protocol_type, group.generation, group.state.value, group.state_timestamp) == (
            "consumer", generation, "Empty", ts)
    assert shard.fetch_offsets("g", None) == [("t", [(0, 42, -1, "m", 0)])]
    log.fail_with = None
    results, write = shard.delete_groups(["g"])
    await write
    assert "g" not in shard.groups and shard.fetch_offsets("g", None) == []


async def test_failed_write_of_a_new_group_removes_it():
    shard, log, clock = await _loaded()
    log.fail_with = KafkaStorageError("log failed")
    join = shard.join_group(JoinRequest(
        "g", "", None, 10_000, 10_000, "consumer", (("range", subscription("t")),),
        "c", "/127.0.0.1", version=3))
    result = await asyncio.wait_for(join, 5)
    assert (result.error, result.member_id) == (E.NOT_COORDINATOR, "")
    await _settled()
    assert "g" not in shard.groups
    assert clock.deadline("join-g") is None  # no timer left to form a phantom generation


async def test_failed_first_commit_does_not_leave_a_simple_group():
    shard, log, _clock = await _loaded()
    log.fail_with = TimeoutError("disk stalled")
    _errors, write = shard.commit_offsets("s", -1, "", None, -1,
                                          [CommitPartition("t", 0, 5, -1, None)], 9)
    with pytest.raises(TimeoutError):
        await write
    await _settled()
    assert "s" not in shard.groups
    assert shard.list_groups(set(), set()) == []


class _Coded(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@pytest.mark.parametrize("exc,expected", [
    (_Coded(3), E.COORDINATOR_NOT_AVAILABLE),    # UNKNOWN_TOPIC_OR_PARTITION
    (_Coded(19), E.COORDINATOR_NOT_AVAILABLE),   # NOT_ENOUGH_REPLICAS
    (TimeoutError(), E.COORDINATOR_NOT_AVAILABLE),  # REQUEST_TIMED_OUT
    (KafkaStorageError(), E.NOT_COORDINATOR),
    (OSError(5, "EIO"), E.NOT_COORDINATOR),
    (RecordTooLargeError(), E.UNKNOWN_SERVER_ERROR),
    (_Coded(13), E.COORDINATOR_LOAD_IN_PROGRESS),  # NETWORK_EXCEPTION
    (RuntimeError("bug"), E.UNKNOWN_SERVER_ERROR),
])
def test_append_error_mapping(exc: BaseException, expected: int):
    assert append_error(exc) == expected
