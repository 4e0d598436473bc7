"""The coordinator runtime over an in-memory log: batching, failure and reload, committed reads,
write timeout. The shard is the real group coordinator shard; the log can hold or fail appends."""

from __future__ import annotations

import asyncio

import pytest

from kafkette.coordinator.group.requests import OffsetCommitRequest
from kafkette.coordinator.runtime.coordinator_runtime import State
from kafkette.coordinator.runtime.error_codes import (
    COORDINATOR_LOAD_IN_PROGRESS,
    COORDINATOR_NOT_AVAILABLE,
    NONE,
    NOT_COORDINATOR,
    UNKNOWN_MEMBER_ID,
    UNKNOWN_SERVER_ERROR,
    CoordinatorError,
    error_code,
)
from kafkette.storage.errors import KafkaStorageError

from .memory import commit, committed, loaded, memory_service, reloaded


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.parametrize("held_op", ["commit", "delete-groups"])
async def test_failed_append_fails_its_batch_and_later_ones_then_reloads(held_op):
    """While appends fail, commits are undone in memory (the shard stays loaded); a batch with
    an op that has no undo (DeleteGroups) makes the shard reload from the log. Either way
    nothing lost shows."""
    ctx, log, _clock = await loaded()
    _e, first = commit(ctx, "g", ("t", 0, 1))
    await first
    ctx.writes_failing = held_op == "commit"  # as after an earlier failure
    log.gate = asyncio.Event()  # hold the next append
    if held_op == "commit":
        _e, held = commit(ctx, "g", ("t", 0, 2))
    else:
        _e, held = ctx.write(lambda s: s.delete_groups(["g"]))
    await _settle()  # the held batch is in flight
    _e, behind = commit(ctx, "h", ("t", 0, 3))  # lingers behind it, in a later batch
    heartbeat, waiting = ctx.write(lambda s: s.heartbeat(("x", "m", None, 1)))
    assert waiting is not None  # an op without records still waits for the pending writes
    log.fail_with = KafkaStorageError("disk gone")
    log.gate.set()
    for fut in (held, behind, waiting):
        with pytest.raises(KafkaStorageError):
            await fut
    assert error_code(KafkaStorageError()) == NOT_COORDINATOR
    if held_op == "commit":
        assert ctx.state is State.ACTIVE
    else:
        assert ctx.state in (State.FAILED, State.LOADING)
        with pytest.raises(CoordinatorError) as refused:
            commit(ctx, "g", ("t", 0, 4))
        assert refused.value.code == COORDINATOR_LOAD_IN_PROGRESS
        await reloaded(ctx)
    log.fail_with, log.gate = None, None
    assert await committed(ctx, "g") == [("t", [(0, 1, -1, "", 0)])]
    assert await committed(ctx, "h") == []
    _e, again = commit(ctx, "g", ("t", 0, 5))
    await again
    assert await committed(ctx, "g") == [("t", [(0, 5, -1, "", 0)])]


async def test_read_during_a_failing_write_never_sees_the_lost_data():
    ctx, log, _clock = await loaded()
    _e, w = commit(ctx, "g", ("t", 0, 1))
    await w
    log.gate = asyncio.Event()
    _e, lost = commit(ctx, "g", ("t", 0, 99))
    assert ctx.shard.fetch_offsets("g", None)[0][1][0][1] == 99  # applied, not yet durable
    read = asyncio.ensure_future(committed(ctx, "g"))
    await _settle()
    assert not read.done()  # a committed read waits behind the pending write
    log.fail_with = TimeoutError("stalled")
    log.gate.set()
    with pytest.raises(TimeoutError):
        await lost
    assert await asyncio.wait_for(read, 5) == [("t", [(0, 1, -1, "", 0)])]


async def test_read_waits_for_the_pending_write_and_sees_it():
    ctx, log, _clock = await loaded()
    log.gate = asyncio.Event()
    _e, w = commit(ctx, "g", ("t", 0, 7))
    read = asyncio.ensure_future(committed(ctx, "g"))
    await _settle()
    assert not read.done()
    log.gate.set()
    await w
    assert await asyncio.wait_for(read, 5) == [("t", [(0, 7, -1, "", 0)])]


async def test_write_times_out_after_commit_timeout_and_lands_later():
    service, log, clock = memory_service(commit_timeout_ms=5000)
    await service.start()
    log.gate = asyncio.Event()
    from kafkette.coordinator.group.offsets.offset_manager import CommitPartition

    def commit_once(offset: int):
        return service.commit_offsets(OffsetCommitRequest("g", -1, "", None),
                                      [CommitPartition("t", 0, offset, -1, None)])
    slow = commit_once(1)
    await _settle()
    stuck = commit_once(2)  # lingers behind the slow append
    clock.advance(4999)
    await _settle()
    assert not slow.done() and not stuck.done()
    clock.advance(1)
    # Kafka: the runtime fails the op with TimeoutException (REQUEST_TIMED_OUT), which the
    # service maps to COORDINATOR_NOT_AVAILABLE (CoordinatorOperationExceptionHelper).
    assert await asyncio.wait_for(slow, 1) == [COORDINATOR_NOT_AVAILABLE]
    assert await asyncio.wait_for(stuck, 1) == [COORDINATOR_NOT_AVAILABLE]
    log.gate.set()
    await service.runtime.contexts[0].idle()
    assert await service.fetch_offsets("g", None) == (NONE, [("t", [(0, 2, -1, "", 0)])])
    assert service.runtime.contexts[0].state is State.ACTIVE


async def test_completions_follow_log_order_and_share_batches():
    ctx, log, _clock = await loaded()
    order: list[int] = []
    futs = []
    for i in range(3):
        _e, fut = commit(ctx, f"g{i}", ("t", 0, i))
        fut.add_done_callback(lambda _f, i=i: order.append(i))
        futs.append(fut)
    await asyncio.gather(*futs)
    assert order == [0, 1, 2] and log.batches == 1


async def test_timers_of_a_dropped_shard_do_not_fire():
    ctx, log, clock = await loaded(retention_check_interval_ms=1000)
    fired = []
    ctx.schedule(("probe",), 500, lambda s: fired.append(s) or s.cleanup_group_metadata())
    ctx.unload()
    clock.advance(2000)
    assert fired == [] and log.batches == 0


async def test_an_op_that_raises_fails_cleanly_and_reloads_the_shard():
    ctx, log, _clock = await loaded()
    _e, w = commit(ctx, "g", ("t", 0, 1))
    await w

    def broken(shard):
        shard.group_manager.ensure_group("half")  # changed memory, then hit a bug
        raise RuntimeError("bug")
    with pytest.raises(CoordinatorError) as failed:
        ctx.write(broken)
    assert failed.value.code == UNKNOWN_SERVER_ERROR
    await reloaded(ctx)
    assert "half" not in ctx.shard.groups
    assert await committed(ctx, "g") == [("t", [(0, 1, -1, "", 0)])]


async def test_a_reload_that_fails_leaves_the_partition_loading_not_broken():
    ctx, log, _clock = await loaded()
    _e, w = commit(ctx, "g", ("t", 0, 1))
    await w
    log.fail_with = KafkaStorageError("disk gone")
    _e, w = ctx.write(lambda s: s.delete_groups(["g"]))  # no undo: the shard reloads
    read = asyncio.ensure_future(committed(ctx, "g"))

    async def unreadable():
        raise OSError(5, "EIO")
        yield  # pragma: no cover
    log.read = unreadable  # type: ignore[method-assign]
    with pytest.raises(KafkaStorageError):
        await w
    with pytest.raises(CoordinatorError) as refused:
        await asyncio.wait_for(read, 5)
    assert refused.value.code == COORDINATOR_LOAD_IN_PROGRESS
    assert ctx.state is State.FAILED


async def test_a_coordinator_that_has_not_started_answers_coordinator_not_available():
    from kafkette.coordinator.group.offsets.offset_manager import CommitPartition
    from kafkette.coordinator.group.requests import JoinRequest
    from kafkette.coordinator.group.unavailable import unavailable_coordinator

    for service in (unavailable_coordinator(), memory_service()[0]):
        join = service.join_group(JoinRequest("g", "", None, 10_000, 10_000, "consumer", (),
                                              "c", "/h", 4))
        assert join.error == COORDINATOR_NOT_AVAILABLE
        assert service.heartbeat("g", "m", None, 1) == COORDINATOR_NOT_AVAILABLE
        assert service.commit_offsets(OffsetCommitRequest("g", -1, "", None),
                                      [CommitPartition("t", 0, 1, -1, None)]) == [15]
        assert await service.fetch_offsets("g", [("t", [0])]) == (15, [("t", [(0, -1, -1, "", 15)])])
        assert await service.list_groups(set(), set()) == (15, [])
        assert service.find_coordinator("g", 0) == (15, -1, "", -1)


async def test_service_heartbeat_answers_now_only_when_nothing_is_pending():
    """The heartbeat shortcut of the service answers at once like ``write``; behind a pending
    write it waits for it, and an op that fails with a bug reloads the shard as ``write`` does."""
    service, log, _clock = memory_service()
    await service.start()
    assert service.heartbeat("g", "m", None, 1) == UNKNOWN_MEMBER_ID  # answered now
    log.gate = asyncio.Event()
    from kafkette.coordinator.group.offsets.offset_manager import CommitPartition

    service.commit_offsets(OffsetCommitRequest("g", -1, "", None),
                           [CommitPartition("t", 0, 1, -1, None)])
    waiting = service.heartbeat("g", "m", None, 1)
    assert isinstance(waiting, asyncio.Future)  # behind the pending commit
    log.gate.set()
    assert await asyncio.wait_for(waiting, 1) == UNKNOWN_MEMBER_ID
    ctx = service.runtime.contexts[0]
    await ctx.idle()

    def broken(*_args):
        raise RuntimeError("bug")
    ctx.shard.group_manager.heartbeat = broken
    assert service.heartbeat("g", "m", None, 1) == UNKNOWN_SERVER_ERROR
    assert ctx.state is not State.ACTIVE  # dropped and reloaded from the log
    await reloaded(ctx)
    assert service.heartbeat("g", "m", None, 1) == UNKNOWN_MEMBER_ID
