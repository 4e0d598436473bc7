"""The runtime's durable-commit fast paths, over an in-memory log (no I/O): an append the log
reports durable at once (``append_inline`` returning None) completes its waiters in the flush itself,
still in log order behind appends not answered yet; OffsetCommit's ``build`` makes the runtime's
own future carry the response, also on failure."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from kafkette.coordinator.group.offsets.offset_manager import CommitPartition
from kafkette.coordinator.group.requests import OffsetCommitRequest
from kafkette.coordinator.runtime.coordinator_log import MemoryLog, RawRecord
from kafkette.coordinator.runtime.coordinator_runtime import State
from kafkette.coordinator.runtime.error_codes import NOT_COORDINATOR, UNKNOWN_TOPIC_OR_PARTITION
from kafkette.coordinator.runtime.futures import DurableFuture
from kafkette.storage.errors import KafkaStorageError

from .memory import commit, committed, loaded, memory_service, reloaded


async def test_inline_append_completes_its_waiters_in_the_flush():
    ctx, log, _clock = await loaded()
    log.inline = True
    futs = [commit(ctx, f"g{i}", ("t", 0, i))[1] for i in range(3)]
    assert all(f is not None and not f.done() for f in futs)
    # Marked: applied already, waiting for durability only (what a connection may pipeline).
    assert all(type(f) is DurableFuture for f in futs)
    ctx.flush()  # what the end of the loop turn does
    assert all(f.done() for f in futs)  # no append future, no further loop turn
    assert log.batches == 1 and len(log.records) == 3
    assert not ctx.pending()
    assert await committed(ctx, "g2") == [("t", [(0, 2, -1, "", 0)])]


class _SplitLog(MemoryLog):
    """The first append answers with a future the test resolves; later ones are durable at once
    (as when the storage log finished the first write but its callback has not run yet)."""

    def __init__(self) -> None:
        super().__init__()
        self.first: asyncio.Future | None = None

    def append_inline(self, records: Sequence[RawRecord]) -> asyncio.Future | None:
        self.records.extend(records)
        self.batches += 1
        if self.first is None:
            self.first = asyncio.get_running_loop().create_future()
            return self.first
        return None


async def test_inline_append_behind_an_unanswered_one_completes_after_it():
    log = _SplitLog()
    ctx, _log, _clock = await loaded()
    ctx.log = log
    order: list[str] = []
    _c, a = commit(ctx, "g", ("t", 0, 1))
    ctx.flush()
    _c, b = commit(ctx, "h", ("t", 0, 2))
    ctx.flush()  # durable at once, but after a batch that is not
    assert a is not None and b is not None
    a.add_done_callback(lambda _f: order.append("a"))
    b.add_done_callback(lambda _f: order.append("b"))
    await asyncio.sleep(0)
    assert not a.done() and not b.done()
    assert log.first is not None
    log.first.set_result(None)
    await asyncio.wait_for(b, 1)
    await asyncio.sleep(0)
    assert order == ["a", "b"]


async def test_inline_append_that_raises_fails_its_waiters_and_reloads():
    ctx, log, _clock = await loaded()
    log.inline = True
    _c, first = commit(ctx, "g", ("t", 0, 1))
    ctx.flush()
    assert first is not None and first.done()
    log.fail_with = KafkaStorageError("disk gone")
    _c, lost = commit(ctx, "g", ("t", 0, 2))
    ctx.flush()
    assert lost is not None and lost.done()
    with pytest.raises(KafkaStorageError):
        lost.result()
    assert ctx.state in (State.FAILED, State.LOADING, State.ACTIVE)
    log.fail_with = None
    await reloaded(ctx)
    assert await committed(ctx, "g") == [("t", [(0, 1, -1, "", 0)])]


def _parts(*partitions: int) -> list[CommitPartition]:
    return [CommitPartition("t", p, 10 + p, -1, None) for p in partitions]


async def test_commit_build_maps_the_codes_now_and_through_the_runtime_future():
    service, _log, _clock = memory_service()
    service._partition_count = lambda _topic: 2  # partitions 0 and 1 exist
    await service.start()
    built: list[tuple[int, ...]] = []

    def build(codes: list[int]) -> tuple[int, ...]:
        built.append(tuple(codes))
        return ("response", *codes)

    # Nothing accepted: built at once.
    assert service.commit_offsets(OffsetCommitRequest("g", -1, "", None), _parts(5), build) == \
        ("response", UNKNOWN_TOPIC_OR_PARTITION)
    # Partly accepted: the runtime's future gives the built response, request order kept.
    fut = service.commit_offsets(OffsetCommitRequest("g", -1, "", None), _parts(1, 7, 0), build)
    assert isinstance(fut, asyncio.Future)
    assert built[-1] == (0, UNKNOWN_TOPIC_OR_PARTITION, 0)  # built when the op ran
    assert await asyncio.wait_for(fut, 1) == ("response", 0, UNKNOWN_TOPIC_OR_PARTITION, 0)
    # Without build: the codes, as before.
    plain = service.commit_offsets(OffsetCommitRequest("g", -1, "", None), _parts(0))
    assert await asyncio.wait_for(plain, 1) == [0]


async def test_commit_build_maps_a_failed_append_to_the_error_response():
    service, log, _clock = memory_service()
    await service.start()
    log.gate = asyncio.Event()
    fut = service.commit_offsets(OffsetCommitRequest("g", -1, "", None), _parts(0, 1),
                                 lambda codes: ("response", *codes))
    await asyncio.sleep(0)
    log.fail_with = KafkaStorageError("disk gone")
    log.gate.set()
    assert await asyncio.wait_for(fut, 1) == ("response", NOT_COORDINATOR, NOT_COORDINATOR)
