"""A failed __consumer_offsets append fails its ops and reloads the shard from the log: the
coordinator is as it was (Kafka reverts its snapshot)."""

from __future__ import annotations

import asyncio

import pytest

from kafkette.coordinator.group.requests import DescribedGroup, JoinRequest
from kafkette.coordinator.runtime.error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NONE,
    NOT_COORDINATOR,
    UNKNOWN_SERVER_ERROR,
    append_error,
)
from kafkette.protocol.group_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)
from kafkette.storage.errors import KafkaStorageError, RecordTooLargeError

from .env import subscription
from .memory import commit, committed, loaded, memory_service, record, reloaded


async def test_failed_delete_groups_keeps_the_group_and_its_offsets():
    ts = 1_699_999_000_000
    ctx, log, _clock = await loaded([
        record(GroupMetadataKey("g"), GroupMetadataValue("consumer", 7, None, None, ts, ())),
        record(OffsetCommitKey("g", "t", 0), OffsetCommitValue(42, -1, "m", ts)),
        record(GroupMetadataKey("bare"), GroupMetadataValue("consumer", 3, None, None, ts, ())),
    ])
    log.fail_with = TimeoutError("disk stalled")
    results, write = ctx.write(lambda s: s.delete_groups(["g", "bare"]))
    assert results == [("g", NONE), ("bare", NONE)]
    assert "g" not in ctx.shard.groups  # replayed before the append
    with pytest.raises(TimeoutError):
        await write
    await reloaded(ctx)
    for gid, generation in (("g", 7), ("bare", 3)):
        group = ctx.shard.groups[gid]
        assert (group.protocol_type, group.generation, group.state.value, group.state_timestamp) == (
            "consumer", generation, "Empty", ts)
    assert await committed(ctx, "g") == [("t", [(0, 42, -1, "m", 0)])]
    log.fail_with = None
    results, write = ctx.write(lambda s: s.delete_groups(["g"]))
    await write
    assert "g" not in ctx.shard.groups and await committed(ctx, "g") == []


async def test_failed_write_of_a_new_group_removes_it():
    service, log, clock = memory_service(initial_rebalance_delay_ms=3000)
    await service.start()
    log.fail_with = KafkaStorageError("log failed")
    join = service.join_group(JoinRequest(
        "g", "", None, 10_000, 10_000, "consumer", (("range", subscription("t")),),
        "c", "/127.0.0.1", version=3))
    result = await asyncio.wait_for(join, 5)
    assert (result.error, result.member_id) == (NOT_COORDINATOR, "")
    ctx = service.runtime.contexts[0]
    await reloaded(ctx)
    assert "g" not in ctx.shard.groups
    assert clock.deadline(("join", "g")) is None  # no timer left to form a phantom generation
    clock.advance(10_000)
    assert await service.describe_groups(["g"], 5) == [DescribedGroup("g", NONE, "Dead", "", "", [])]


async def test_failed_first_commit_does_not_leave_a_simple_group():
    ctx, log, _clock = await loaded()
    log.fail_with = TimeoutError("disk stalled")
    _errors, write = commit(ctx, "s", ("t", 0, 5))
    with pytest.raises(TimeoutError):
        await write
    await reloaded(ctx)
    assert "s" not in ctx.shard.groups
    assert await ctx.read(lambda s: s.list_groups(set(), set())) == []


class _Coded(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


@pytest.mark.parametrize("exc,expected", [
    (_Coded(3), COORDINATOR_NOT_AVAILABLE),    # UNKNOWN_TOPIC_OR_PARTITION
    (_Coded(19), COORDINATOR_NOT_AVAILABLE),   # NOT_ENOUGH_REPLICAS
    (TimeoutError(), COORDINATOR_NOT_AVAILABLE),  # REQUEST_TIMED_OUT
    (KafkaStorageError(), NOT_COORDINATOR),
    (OSError(5, "EIO"), NOT_COORDINATOR),
    (RecordTooLargeError(), UNKNOWN_SERVER_ERROR),
    (_Coded(13), COORDINATOR_LOAD_IN_PROGRESS),  # NETWORK_EXCEPTION
    (RuntimeError("bug"), UNKNOWN_SERVER_ERROR),
])
def test_append_error_mapping(exc: BaseException, expected: int):
    assert append_error(exc) == expected
