"""The replay read path of __consumer_offsets: PartitionLog.replay_regions cut at batch starts,
read_region from the page cache (RWF_NOWAIT) or blocking, same bytes either way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafkette.broker.services.offsets_log import PartitionOffsetsLog
from kafkette.storage import segment as storage_segment
from kafkette.storage.segment import read_region
from kafkette.storage.topics import LogManager


async def _log(tmp_path: Path) -> tuple[LogManager, PartitionOffsetsLog, list]:
    mgr = LogManager({"log.dirs": str(tmp_path)})
    await mgr.start()
    await mgr.create_topic("__consumer_offsets", 1,
                           {"cleanup.policy": "compact", "segment.bytes": "20000"}, internal=True)
    olog = PartitionOffsetsLog(mgr.partition("__consumer_offsets", 0))
    written = []
    for i in range(60):
        recs = [(b"key-%d-%d" % (i, j), b"value" * (i % 7 * 20)) for j in range(i % 13 + 1)]
        written += recs
        await olog.append(recs)
    return mgr, olog, written


@pytest.mark.parametrize("nowait", [True, False])
async def test_regions_cover_every_batch_once(tmp_path: Path, nowait: bool,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    if not nowait:
        monkeypatch.setattr(storage_segment, "_RWF_NOWAIT", None)
    mgr, olog, written = await _log(tmp_path)
    plog = mgr.partition("__consumer_offsets", 0)
    assert len(plog.segments) > 2
    regions = list(plog.replay_regions(max_bytes=3000))
    assert len(regions) > len(plog.segments)
    whole = b"".join(read_region(fd, pos, size) for fd, pos, size in regions)
    assert whole == b"".join(data for _h, data in plog.iter_batches(0))
    assert [rec async for chunk in olog.read() for rec in chunk] == written
    await mgr.stop()


def test_read_region_nowait_returns_none_when_it_cannot_read_all(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 100)
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        assert read_region(fd, 10, 50) == b"x" * 50
        assert read_region(fd, 10, 50, nowait=True) in (b"x" * 50, None)
        assert read_region(fd, 90, 50, nowait=True) is None  # past the end: short
        with pytest.raises(OSError):
            read_region(fd, 90, 50)
    finally:
        os.close(fd)


def test_read_region_nowait_reads_regions_past_its_buffer(tmp_path: Path) -> None:
    # the page-cache read goes through a reused per-thread buffer, grown for a larger region
    path = tmp_path / "big"
    data = bytes(range(256)) * (5 << 12)  # 5 MiB
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        for position, size in ((3, 100), (1, len(data) - 1), (7, 1000)):
            got = read_region(fd, position, size, nowait=True)
            assert got is None or got == data[position:position + size]
            assert read_region(fd, position, size) == data[position:position + size]
    finally:
        os.close(fd)
