"""After a clean shutdown Kafka trusts every segment (LogLoader: no recovery, no CRC check), the
active one included; kafkette then reads only batch headers, not the record data."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from kafkette.protocol.records import build_batch, iter_batches
from kafkette.storage import segment as segment_module
from kafkette.storage.segment import scan_segment
from kafkette.storage.topics import LogManager


def _config(tmp_path: Path) -> dict[str, str]:
    return {"log.dirs": str(tmp_path), "log.flush.interval.messages": "1"}


def _big_batch() -> bytes:
    return build_batch([(b"k%d" % i, os.urandom(200)) for i in range(50)])


async def test_clean_shutdown_trusts_the_active_segment(tmp_path: Path, caplog) -> None:
    mgr = LogManager(_config(tmp_path))
    await mgr.start()
    await mgr.create_topic("t", 1)
    for _ in range(4):
        await mgr.partition("t", 0).append(_big_batch())
    await mgr.stop()
    seg = tmp_path / "t-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    data[-3] ^= 0xFF  # a CRC only a check of the record data would catch
    seg.write_bytes(bytes(data))
    caplog.set_level(logging.WARNING, "kafkette.storage")
    mgr = LogManager(_config(tmp_path))
    await mgr.start()
    assert mgr.partition("t", 0).log_end_offset == 200  # kept, as Kafka keeps it
    assert not any("CRC" in r.message for r in caplog.records)
    await mgr.stop()


def test_a_scan_without_crc_check_reads_headers_not_record_data(tmp_path: Path,
                                                               monkeypatch) -> None:
    batches = [build_batch([(b"k", os.urandom(1000)) for _ in range(20)], base_offset=20 * i)
               for i in range(40)]
    path = tmp_path / "seg.log"
    path.write_bytes(b"".join(batches))
    read: list[int] = []
    real_pread = os.pread

    def counting_pread(fd: int, size: int, offset: int) -> bytes:
        data = real_pread(fd, size, offset)
        read.append(len(data))
        return data

    monkeypatch.setattr(segment_module.os, "pread", counting_pread)
    fd = os.open(path, os.O_RDONLY)
    try:
        for verify in (True, False):
            read.clear()
            seen: list[int] = []
            size, problem = scan_segment(fd, verify, lambda h, _pos, out=seen: out.append(
                h.base_offset))
            assert problem is None and size == path.stat().st_size
            assert seen == [h.base_offset for h, _ in iter_batches(path.read_bytes())]
            if verify:
                assert sum(read) >= size  # every byte, for its CRC
            else:
                assert sum(read) < size / 3
    finally:
        os.close(fd)
