"""PartitionLog and LogManager on real files: append, read, restart, recovery, roll,
retention, compaction, truncation."""

from __future__ import annotations

import asyncio
import logging
import os
from pathlib import Path

import pytest

from kafkette.protocol.records import Record, build_batch, decode_records, iter_batches
from kafkette.storage.cleaner import dirty_ratio
from kafkette.storage.errors import KafkaStorageError, OffsetOutOfRangeError
from kafkette.storage.topics import LogManager, TopicExistsError


class Clock:
    def __init__(self, now: int = 1_700_000_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def _config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"log.dirs": str(tmp_path), **extra}


def _batch(n: int, start: int = 0, ts: int = 1_700_000_000_000, **kw) -> bytes:
    return build_batch([(f"k{start + i}".encode(), f"v{start + i}".encode()) for i in range(n)],
                       base_timestamp=ts, **kw)


async def _read_all(plog, start: int = 0) -> list[Record]:
    out: list[Record] = []
    offset = start
    while offset < plog.log_end_offset:
        data = await plog.read_bytes(offset, 1 << 20)
        for _h, view in iter_batches(data):
            out += [r for r in decode_records(view) if r.offset >= offset]
        offset = out[-1].offset + 1
    return out


async def test_append_read_restart(tmp_path: Path) -> None:
    mgr = LogManager(_config(tmp_path))
    await mgr.start()
    info = await mgr.create_topic("t", 2, {"segment.bytes": "300"})
    with pytest.raises(TopicExistsError):
        await mgr.create_topic("t", 1)
    plog = mgr.partition("t", 1)
    infos = [await plog.append(_batch(3, i * 3)) for i in range(10)]
    assert [i.base_offset for i in infos] == list(range(0, 30, 3))
    assert plog.log_end_offset == 30 and len(plog.segments) > 2  # rolled at 300 bytes
    recs = await _read_all(plog)
    assert [(r.offset, r.key) for r in recs] == [(i, f"k{i}".encode()) for i in range(30)]
    assert (await _read_all(plog, 17))[0].offset == 17
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(31, 100)
    assert plog.read(30, 100) is None
    await mgr.stop()

    mgr2 = LogManager(_config(tmp_path))
    await mgr2.start()
    assert mgr2.topic("t") == info
    plog2 = mgr2.partition("t", 1)
    assert plog2.log_end_offset == 30
    assert (await plog2.append(_batch(1))).base_offset == 30
    assert [r.offset for r in await _read_all(plog2)] == list(range(31))
    assert mgr2.partition("t", 0).log_end_offset == 0
    assert sorted(p.name for p in (tmp_path / "t-1").iterdir())[0] == "00000000000000000000.index"
    await mgr2.stop()


async def test_torn_and_corrupt_tail_is_truncated(tmp_path: Path, caplog) -> None:
    mgr = LogManager(_config(tmp_path))
    await mgr.start()
    await mgr.create_topic("t", 1)
    plog = mgr.partition("t", 0)
    for i in range(5):
        await plog.append(_batch(2, i * 2))
    await mgr.stop()
    # A crash, not a clean shutdown: after one Kafka (and kafkette) check no CRC at all.
    (tmp_path / ".kafka_cleanshutdown").unlink()
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    sizes = [h.size for h, _ in iter_batches(data)]
    data[-3] ^= 0xFF  # corrupt the last batch
    seg.write_bytes(bytes(data) + b"\x00\x00\x00\x00\x00\x01")  # plus a torn header
    caplog.set_level(logging.WARNING, "kafkette.storage")
    mgr = LogManager(_config(tmp_path))
    await mgr.start()
    plog = mgr.partition("t", 0)
    assert plog.log_end_offset == 8
    assert [r.offset for r in await _read_all(plog)] == list(range(8))
    assert os.path.getsize(seg) == sum(sizes[:4])
    assert sum("CRC mismatch" in r.message for r in caplog.records) == 1
    assert (await plog.append(_batch(1))).base_offset == 8
    await mgr.stop()


async def test_retention_and_truncate(tmp_path: Path) -> None:
    clock = Clock()
    mgr = LogManager(_config(tmp_path), now_ms=clock)
    await mgr.start()
    await mgr.create_topic("r", 1, {"segment.bytes": "200", "retention.ms": "1000"})
    plog = mgr.partition("r", 0)
    for i in range(6):
        await plog.append(_batch(2, i * 2, ts=clock.now))
    assert len(plog.segments) >= 3
    clock.now += 5000
    await plog.append(_batch(1, 12, ts=clock.now))
    deleted = await mgr.run_retention()
    assert deleted >= 2 and plog.log_start_offset > 0
    with pytest.raises(OffsetOutOfRangeError):
        plog.read(0, 100)
    end = plog.log_end_offset
    await plog.truncate_to(end - 1)
    assert plog.log_end_offset == end - 1
    assert (await plog.append(_batch(1))).base_offset == end - 1
    await mgr.stop()


async def test_compaction_keeps_last_value_per_key(tmp_path: Path) -> None:
    clock = Clock()
    mgr = LogManager(_config(tmp_path), now_ms=clock)
    await mgr.start()
    await mgr.create_topic("c", 1, {"cleanup.policy": "compact", "segment.bytes": "250",
                                    "delete.retention.ms": "100"}, internal=True)
    plog = mgr.partition("c", 0)
    for i in range(12):
        key = f"key{i % 3}".encode()
        value = None if i == 10 else f"val{i}".encode()
        await plog.append(build_batch([(key, value)], base_timestamp=clock.now))
    clock.now += 1000
    assert await mgr.run_compaction() == 1
    recs = await _read_all(plog)
    latest = {r.key: r for r in recs}
    assert latest[b"key0"].value == b"val9" and latest[b"key2"].value == b"val11"
    assert b"key1" not in latest or latest[b"key1"].value is None
    assert len(recs) < 12 and plog.log_end_offset == 12
    await mgr.stop()
    mgr = LogManager(_config(tmp_path), now_ms=clock)
    await mgr.start()
    assert [r.offset for r in await _read_all(mgr.partition("c", 0))] == [r.offset for r in recs]
    await mgr.stop()


async def test_flush_per_message_and_concurrent_appends(tmp_path: Path) -> None:
    mgr = LogManager(_config(tmp_path, **{"log.flush.interval.messages": "1"}))
    await mgr.start()
    await mgr.create_topic("f", 1)
    plog = mgr.partition("f", 0)
    infos = await asyncio.gather(*(plog.append(_batch(2, i)) for i in range(50)))
    assert [i.base_offset for i in infos] == list(range(0, 100, 2))
    batches = list(plog.iter_batches(40))
    assert batches[0][0].base_offset == 40 and len(batches) == 30
    pid = await mgr.allocate_producer_id()
    assert await mgr.allocate_producer_id() == pid + 1
    await mgr.stop()
    mgr = LogManager(_config(tmp_path))
    await mgr.start()
    assert await mgr.allocate_producer_id() > pid + 1
    await mgr.stop()


async def test_flush_policy_counts_fsyncs(tmp_path: Path, monkeypatch) -> None:
    calls: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd))[1])
    mgr = LogManager(_config(tmp_path, **{"log.flush.interval.messages": "3"}))
    await mgr.start()
    await mgr.create_topic("m", 1)
    plog = mgr.partition("m", 0)
    calls.clear()
    await plog.append(_batch(1))
    await plog.append(_batch(1))
    assert calls == []  # two messages: below flush.messages, nothing fsynced yet
    await plog.append(_batch(1))
    assert len(calls) == 1  # the third one was acknowledged only after an fsync
    await mgr.alter_topic_configs("m", {"flush.ms": "20", "flush.messages": "1000"})
    calls.clear()
    await plog.append(_batch(1))
    assert calls == []
    await asyncio.sleep(0.2)
    assert len(calls) >= 1  # flush.ms timer
    await mgr.stop()


async def test_concurrent_creates_of_one_name(tmp_path: Path) -> None:
    mgr = LogManager(_config(tmp_path))
    await mgr.start()
    results = await asyncio.gather(*(mgr.create_topic("same", 2) for _ in range(3)),
                                   return_exceptions=True)
    created = [r for r in results if not isinstance(r, BaseException)]
    assert len(created) == 1
    assert all(isinstance(r, TopicExistsError) for r in results if r not in created)
    assert mgr.topic("same") == created[0]  # visible by the time the losers are told
    await mgr.stop()


async def test_compaction_waits_for_min_cleanable_dirty_ratio(tmp_path: Path) -> None:
    clock = Clock()
    mgr = LogManager(_config(tmp_path), now_ms=clock)
    await mgr.start()
    await mgr.create_topic("r", 1, {"cleanup.policy": "compact", "segment.bytes": "250"})
    plog = mgr.partition("r", 0)

    async def append(keys: range) -> None:
        for i in keys:
            await plog.append(build_batch([(f"key{i}".encode(), b"v")], base_timestamp=clock.now))

    await append(range(20))
    assert await mgr.run_compaction() == 1  # never cleaned: everything is dirty
    assert await mgr.run_compaction() == 0  # nothing new
    await append(range(20, 24))  # rolls a little: dirty bytes well under half of the total
    sealed = plog.segments[:-1]
    assert 0 < dirty_ratio(plog, sealed) < 0.5
    assert await mgr.run_compaction() == 0
    await mgr.alter_topic_configs("r", {"cleanup.policy": "compact", "segment.bytes": "250",
                                        "min.cleanable.dirty.ratio": "0.01"})
    assert mgr.partition("r", 0).config.min_cleanable_dirty_ratio == 0.01
    assert await mgr.run_compaction() == 1


async def test_failed_write_drops_the_queued_writes_behind_it(tmp_path: Path, monkeypatch) -> None:
    """A write fails (ENOSPC) while more are queued behind it across a segment roll: none of them
    is acknowledged even where its bytes landed; once they have all finished the log is cut back
    to the high watermark (file and index) and the next append goes there."""
    import errno

    real = os.pwritev
    fail = {"calls": 0}

    def pwritev(fd, buffers, offset, *flags):
        fail["calls"] += 1
        if fail["calls"] == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, buffers, offset, *flags)

    from kafkette.storage import log as log_module

    # Every write goes through the writer thread (a small one is otherwise written on the loop
    # and only its fsync queued: see the test below), so the failed one has writes behind it.
    monkeypatch.setattr(log_module, "_INLINE_MAX", 0)
    mgr = LogManager(_config(tmp_path, **{"log.flush.interval.messages": "1"}))
    await mgr.start()
    await mgr.create_topic("w", 1, {"segment.bytes": "400"})
    plog = mgr.partition("w", 0)
    assert [(await plog.append(_batch(2, i * 2))).base_offset for i in range(3)] == [0, 2, 4]
    size_before = plog.size_bytes
    monkeypatch.setattr(os, "pwritev", pwritev)
    results = await asyncio.gather(*(plog.append(_batch(2, 100 + i)) for i in range(6)),
                                   return_exceptions=True)
    assert all(isinstance(r, Exception) for r in results), results
    assert fail["calls"] > 1  # the writes behind the failed one did reach the files
    if plog._rollback is not None:  # started once the writer had nothing more queued
        await plog._rollback
    assert plog._failed is None
    assert plog.log_end_offset == 6 and plog.size_bytes == size_before
    assert sum(os.path.getsize(s.path) for s in plog.segments) == size_before
    assert (await plog.append(_batch(1, 200))).base_offset == 6
    await mgr.stop()
    mgr = LogManager(_config(tmp_path))
    await mgr.start()
    recs = await _read_all(mgr.partition("w", 0))
    assert [r.key for r in recs] == [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5", b"k200"]
    await mgr.stop()


async def test_flush_per_message_acknowledges_only_after_the_fsync(tmp_path: Path,
                                                                   monkeypatch) -> None:
    """log.flush.interval.messages=1: an append goes to the writer thread, write and fsync.
    Until that fsync is done the append is not acknowledged and its records are not visible
    (high watermark, recovery point); appends made meanwhile wait in the queue (nothing is
    written from the loop behind an fsync in flight), are written by the next drain and covered
    by one fsync of the file, and acknowledged in order."""
    import threading

    real = os.fsync
    entered, release = threading.Event(), threading.Event()
    synced: list[int] = []

    def fsync(fd: int) -> None:
        entered.set()
        release.wait(10)
        real(fd)
        synced.append(fd)

    mgr = LogManager(_config(tmp_path, **{"log.flush.interval.messages": "1"}))
    await mgr.start()
    await mgr.create_topic("d", 1)
    plog = mgr.partition("d", 0)
    monkeypatch.setattr(os, "fsync", fsync)
    first = plog.append_future(_batch(2, 0))
    await asyncio.to_thread(entered.wait, 10)  # the writer thread is in the fsync now
    more = [plog.append_future(_batch(2, 2 + 2 * i)) for i in range(3)]
    await asyncio.sleep(0.05)
    assert not first.done() and not any(f.done() for f in more)
    assert plog.log_end_offset == 0 and plog.recovery_point == 0
    # The first append's bytes are in the file (written before its fsync), not yet
    # acknowledged; the later ones are queued behind that fsync, not written from the loop.
    assert os.path.getsize(plog.segments[-1].path) == len(_batch(2, 0))
    assert plog.segments[-1].size == 4 * len(_batch(2, 0))
    release.set()
    infos = await asyncio.gather(first, *more)
    assert [i.base_offset for i in infos] == [0, 2, 4, 6]
    assert plog.log_end_offset == 8 and plog.recovery_point == 8
    assert len(synced) == 2  # one for the first append, one for the three written meanwhile
    monkeypatch.setattr(os, "fsync", real)
    await mgr.stop()


async def test_failed_fsync_of_appends_is_not_acknowledged(tmp_path: Path,
                                                           monkeypatch) -> None:
    """The fsync covering appends fails (EIO): none of them is
    acknowledged, the log is cut back to the high watermark, and appends resume there."""
    import errno

    real = os.fsync
    failing = {"on": False}

    def fsync(fd: int) -> None:
        if failing["on"]:
            failing["on"] = False  # once: the rollback's own fsync works
            raise OSError(errno.EIO, "Input/output error")
        real(fd)

    mgr = LogManager(_config(tmp_path, **{"log.flush.interval.messages": "1"}))
    await mgr.start()
    await mgr.create_topic("e", 1)
    plog = mgr.partition("e", 0)
    assert (await plog.append(_batch(2, 0))).base_offset == 0
    size_before = plog.size_bytes
    monkeypatch.setattr(os, "fsync", fsync)
    failing["on"] = True
    results = await asyncio.gather(*(plog.append(_batch(2, 10 + i)) for i in range(3)),
                                   return_exceptions=True)
    # The first gets the fsync's error, any synced in a later drain KAFKA_STORAGE_ERROR.
    assert all(isinstance(r, (OSError, KafkaStorageError)) for r in results), results
    assert isinstance(results[0], OSError)
    assert plog.log_end_offset == 2
    if plog._rollback is not None:
        await plog._rollback
    assert plog._failed is None and plog.size_bytes == size_before
    assert (await plog.append(_batch(1, 20))).base_offset == 2
    await mgr.stop()
    mgr = LogManager(_config(tmp_path))
    await mgr.start()
    recs = await _read_all(mgr.partition("e", 0))
    assert [r.key for r in recs] == [b"k0", b"k1", b"k20"]
    await mgr.stop()


def test_aborted_transactions_of_a_fetch_range() -> None:
    """aborted_in (Kafka's collectAbortedTxns): every aborted transaction with its marker at or
    after the fetch offset and its first offset below the end, whatever the overlap."""
    import random

    from kafkette.storage.producer_state import AbortedTxn, ProducerStateTable

    rnd = random.Random(7)
    table = ProducerStateTable()
    marker = 0
    for pid in range(300):
        marker += rnd.randrange(1, 50)
        table.aborted.append(AbortedTxn(pid, max(marker - rnd.randrange(1, 400), 0), marker))
    for _ in range(2000):
        start = rnd.randrange(marker + 20)
        end = start + rnd.randrange(500)
        want = [a for a in table.aborted if a.last_offset >= start and a.first_offset < end]
        assert table.aborted_in(start, end) == want
    assert table.aborted_in(marker + 1, marker + 100) == []
    assert ProducerStateTable().aborted_in(0, 10) == []
