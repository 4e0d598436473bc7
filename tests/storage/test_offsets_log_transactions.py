"""The coordinator's log adapter keeps what replay needs of transactions: records of a
transactional batch come back as TxnRecordKey with their producer, markers as TxnMarker,
in log order, after a restart too."""

from __future__ import annotations

from pathlib import Path

from kafkette.broker.services.offsets_log import PartitionOffsetsLog
from kafkette.coordinator.runtime.coordinator_log import TxnMarker, TxnRecordKey
from kafkette.storage.topics import LogManager


async def _read(log: PartitionOffsetsLog) -> list:
    return [rec async for chunk in log.read() for rec in chunk]


async def test_transactional_records_and_markers_round_trip(tmp_path: Path) -> None:
    config = {"log.dirs": str(tmp_path)}
    mgr = LogManager(config)
    await mgr.start()
    await mgr.create_topic("__consumer_offsets", 1, {"cleanup.policy": "compact"}, internal=True)
    log = PartitionOffsetsLog(mgr.partition("__consumer_offsets", 0))
    written = [(b"plain", b"1"), (TxnRecordKey(7, 2, b"k1"), b"a"),
               (TxnRecordKey(7, 2, b"k2"), b"b"), (b"plain", b"2"),
               (TxnMarker(7, 2, True), None), (TxnRecordKey(8, 0, b"k1"), b"c"),
               (TxnMarker(8, 0, False), None)]
    await log.append(written)
    plog = mgr.partition("__consumer_offsets", 0)
    headers = [h for h, _data in plog.iter_batches(0)]
    assert [(h.is_transactional, h.is_control, h.producer_id) for h in headers] == [
        (False, False, -1), (True, False, 7), (False, False, -1), (True, True, 7),
        (True, False, 8), (True, True, 8)]
    assert await _read(log) == written
    assert plog.last_stable_offset == plog.log_end_offset
    assert [(a.producer_id, a.first_offset) for a in plog.producers.aborted] == [(8, 5)]
    await mgr.stop()
    mgr = LogManager(config)
    await mgr.start()
    assert await _read(PartitionOffsetsLog(mgr.partition("__consumer_offsets", 0))) == written
    await mgr.stop()
