"""A failed __consumer_offsets append fails its ops and reloads the shard from the log: the
coordinator is as it was (Kafka reverts its snapshot)."""

from __future__ import annotations

import asyncio

import pytest

from kafkette.coordinator.group.group_config import CoordinatorConfig
from kafkette.coordinator.group.group_shard import GroupCoordinatorShard
from kafkette.coordinator.group.requests import DescribedGroup, JoinRequest
from kafkette.coordinator.runtime.clock import ManualClock
from kafkette.coordinator.runtime.coordinator_log import MemoryLog
from kafkette.coordinator.runtime.coordinator_runtime import PartitionContext
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


async def test_a_failed_reload_is_retried_on_the_clock(caplog):
    """The log cannot be read back after a failed append (the disk went away for a while): the
    reload is retried with backoff on the coordinator clock and logged, until it works."""

    class FlakyLog(MemoryLog):
        reads_fail = 0

        async def read(self):
            if self.reads_fail:
                self.reads_fail -= 1
                raise OSError(5, "Input/output error")
            async for chunk in super().read():
                yield chunk

    log, clock = FlakyLog(), ManualClock()
    cfg = CoordinatorConfig(append_linger_ms=5)
    ctx = PartitionContext(0, log, clock, lambda c: GroupCoordinatorShard(0, c, cfg),
                           cfg.append_linger_ms, cfg.commit_timeout_ms)
    await ctx.load()
    _errors, write = commit(ctx, "g", ("t", 0, 5))
    await write
    log.fail_with, log.reads_fail = KafkaStorageError("disk gone"), 2
    _results, write = ctx.write(lambda s: s.delete_groups(["g"]))  # no undo: a reload
    with pytest.raises(KafkaStorageError):
        await write
    log.fail_with = None
    for _ in range(20):
        await asyncio.sleep(0)
    assert ctx.state.value == "failed"
    clock.advance(200)  # the first retry, which fails too
    for _ in range(20):
        await asyncio.sleep(0)
    assert ctx.state.value == "failed"
    clock.advance(400)  # the second retry (backed off), which works
    await reloaded(ctx)
    assert await committed(ctx, "g") == [("t", [(0, 5, -1, "", 0)])]
    messages = [r.getMessage() for r in caplog.records]
    assert sum("reloading failed" in m for m in messages) == 2, messages
    assert any("retrying in 400 ms" in m for m in messages)
    assert any("reloaded after 2 failed attempt(s)" in m for m in messages)


async def test_a_failed_commit_fails_the_commit_not_the_partition(caplog):
    """Kafka reverts a failed write in memory. Here the first failure reloads the partition;
    from then until an append succeeds, commits carry an undo (capturing the previous offsets
    would cost every commit otherwise): each failed commit fails alone, the offsets are as
    before, a simple group it would have created is gone, and nothing is reloaded again."""
    ctx, log, _clock = await loaded()
    _errors, write = commit(ctx, "g", ("t", 0, 5), ("t", 1, 7))
    await write
    assert not ctx.writes_failing
    log.fail_with = KafkaStorageError("no space left on device")
    _errors, write = commit(ctx, "g", ("t", 0, 99))
    with pytest.raises(KafkaStorageError):
        await write
    await reloaded(ctx)  # the first failure: nothing to undo with, a reload
    assert ctx.writes_failing
    shard = ctx.shard
    for attempt in range(50):  # a full disk: every commit fails, nothing is reloaded
        _errors, write = commit(ctx, "g", ("t", 0, 100 + attempt), ("t", 2, 9),
                                ("u", 0, 1))
        with pytest.raises(KafkaStorageError):
            await write
        _errors, write = commit(ctx, "new-simple", ("t", 0, 1))
        with pytest.raises(KafkaStorageError):
            await write
        assert ctx.state.value == "active" and ctx.shard is shard
    assert await committed(ctx, "g") == [("t", [(0, 5, -1, "", 0), (1, 7, -1, "", 0)])]
    assert "new-simple" not in shard.groups and await committed(ctx, "new-simple") == []
    log.fail_with = None
    _errors, write = commit(ctx, "g", ("t", 0, 6))
    await write
    assert not ctx.writes_failing  # commits stop capturing undos
    assert await committed(ctx, "g") == [("t", [(0, 6, -1, "", 0), (1, 7, -1, "", 0)])]
    lines = [r.getMessage() for r in caplog.records if "write failed" in r.getMessage()]
    assert len(lines) == 1, lines  # one line per 10 s per partition
