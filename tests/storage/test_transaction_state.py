"""Transactions in a partition log: open transactions and the last stable offset, the
aborted-transaction index across restarts and segment rolls, and compaction that drops
aborted records and keeps markers."""

from __future__ import annotations

from pathlib import Path

from kafkette.protocol.control_records import control_type, marker_batch
from kafkette.protocol.records import build_batch, decode_records
from kafkette.storage import txn_index
from kafkette.storage.topics import LogManager

TS = 1_700_000_000_000


def _txn(pid: int, seq: int, *records: tuple[bytes, bytes | None]) -> bytes:
    return build_batch(list(records), base_timestamp=TS, producer_id=pid, producer_epoch=0,
                       base_sequence=seq, transactional=True)


async def test_lso_and_aborted_index_survive_restart_and_rolls(tmp_path: Path) -> None:
    config = {"log.dirs": str(tmp_path)}
    mgr = LogManager(config, now_ms=lambda: TS)
    await mgr.start()
    await mgr.create_topic("t", 1, {"segment.bytes": "200"})
    plog = mgr.partition("t", 0)
    await plog.append(build_batch([(b"a", b"plain")], base_timestamp=TS))       # 0
    await plog.append(_txn(7, 0, (b"k", b"aborted-1"), (b"k", b"aborted-2")))  # 1-2
    await plog.append(_txn(8, 0, (b"k", b"committed")))                        # 3
    assert plog.last_stable_offset == 1
    await plog.append(marker_batch(7, 0, False, 0, TS))                        # 4 ABORT
    assert plog.last_stable_offset == 3
    await plog.append(marker_batch(8, 0, True, 0, TS))                         # 5 COMMIT
    await plog.append(_txn(9, 0, (b"k", b"open")))                             # 6
    assert plog.last_stable_offset == 6 and plog.log_end_offset == 7
    assert len(plog.segments) > 2  # rolled on the way
    aborted = [(a.producer_id, a.first_offset, a.last_offset)
               for a in plog.producers.aborted_in(0, 7)]
    assert aborted == [(7, 1, 4)]
    assert plog.producers.aborted_in(5, 7) == []
    await mgr.stop()
    # Kafka's .txnindex beside the segment holding the ABORT marker: (pid, first, last, LSO)
    indexes = {p.name: txn_index.read(p) for p in (tmp_path / "t-0").glob("*.txnindex")}
    marker_segment = max(s.base_offset for s in plog.segments if s.base_offset <= 4)
    assert indexes == {f"{marker_segment:020d}.txnindex": [(7, 1, 4, 3)]}
    for path in (tmp_path / "t-0").glob("*.txnindex"):
        path.unlink()  # rebuilt from the log at startup

    mgr = LogManager(config, now_ms=lambda: TS)
    await mgr.start()
    plog = mgr.partition("t", 0)
    assert [(a.producer_id, a.first_offset, a.last_offset)
            for a in plog.producers.aborted] == [(7, 1, 4)]
    assert plog.last_stable_offset == 6  # producer 9's transaction is still open
    assert [txn_index.read(p) for p in (tmp_path / "t-0").glob("*.txnindex")] == [[(7, 1, 4, 3)]]
    assert plog.read(0, 1 << 20, upto=plog.last_stable_offset) is not None
    assert plog.read(6, 1 << 20, upto=plog.last_stable_offset) is None
    await mgr.stop()


async def test_compaction_drops_aborted_records_and_keeps_markers(tmp_path: Path) -> None:
    now = [TS]
    mgr = LogManager({"log.dirs": str(tmp_path)}, now_ms=lambda: now[0])
    await mgr.start()
    await mgr.create_topic("c", 1, {"cleanup.policy": "compact", "segment.bytes": "150"},
                           internal=True)
    plog = mgr.partition("c", 0)
    await plog.append(build_batch([(b"k", b"good")], base_timestamp=TS))
    await plog.append(_txn(7, 0, (b"k", b"bad")))
    await plog.append(marker_batch(7, 0, False, 0, TS))
    for i in range(6):
        await plog.append(build_batch([(f"x{i}".encode(), b"v")], base_timestamp=TS))
    now[0] += 1000
    assert await mgr.run_compaction() == 1
    values, kinds = {}, []
    for header, data in plog.iter_batches(0):
        if header.is_control:
            kinds.append(control_type(data))
            continue
        for rec in decode_records(data):
            values.setdefault(rec.key, []).append(rec.value)
    assert values[b"k"] == [b"good"]  # the aborted value neither shadows nor survives it
    assert kinds == [0]  # the ABORT marker is kept
    await mgr.stop()
