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


def _markers(plog) -> list[tuple[int, int, int | None]]:
    """(producer id, ABORT 0 / COMMIT 1, delete horizon) of each marker left in the log."""
    return [(h.producer_id, control_type(data), h.delete_horizon_ms)
            for h, data in plog.iter_batches(0) if h.is_control]


async def test_compaction_drops_markers_of_gone_transactions_after_delete_retention(
        tmp_path: Path) -> None:
    """Kafka's cleaner (CleanedTransactionMetadata, KIP-534): a marker stays while its
    transaction has data in the log; once the data is gone a pass stamps it with a delete
    horizon (now + delete.retention.ms), and the first pass after that horizon drops it, an
    ABORT marker taking its aborted-transaction index entry along."""
    now = [TS]
    config = {"log.dirs": str(tmp_path)}
    mgr = LogManager(config, now_ms=lambda: now[0])
    await mgr.start()
    await mgr.create_topic("c", 1, {"cleanup.policy": "compact", "segment.bytes": "150",
                                    "delete.retention.ms": "500",
                                    "min.cleanable.dirty.ratio": "0.01"}, internal=True)
    plog = mgr.partition("c", 0)
    filler = [0]

    async def fill(n: int) -> None:
        for _ in range(n):
            filler[0] += 1
            await plog.append(build_batch([(f"x{filler[0]}".encode(), b"v")],
                                          base_timestamp=now[0]))

    await plog.append(_txn(7, 0, (b"k", b"aborted")))
    await plog.append(marker_batch(7, 0, False, 0, TS))     # ABORT: its data goes in pass 1
    await plog.append(_txn(8, 0, (b"j", b"committed")))
    await plog.append(marker_batch(8, 0, True, 0, TS))      # COMMIT: its record superseded
    await plog.append(_txn(9, 0, (b"m", b"kept")))
    await plog.append(marker_batch(9, 0, True, 0, TS))      # COMMIT: its record stays
    await plog.append(build_batch([(b"j", b"plain")], base_timestamp=TS))
    await fill(4)
    assert [a.producer_id for a in plog.producers.aborted] == [7]

    now[0] += 1000
    assert await mgr.run_compaction() == 1  # pass 1: the data of 7 and 8 is removed
    assert _markers(plog) == [(7, 0, None), (8, 1, None), (9, 1, None)]

    await fill(4)
    now[0] += 1000
    assert await mgr.run_compaction() == 1  # pass 2: 7's and 8's markers get a horizon
    horizon = now[0] + 500
    assert _markers(plog) == [(7, 0, horizon), (8, 1, horizon), (9, 1, None)]

    now[0] += 100
    assert await mgr.run_compaction() == 0  # before the horizon: nothing to do
    now[0] += 500
    assert await mgr.run_compaction() == 1  # past it: the markers go, nothing else dirty
    assert _markers(plog) == [(9, 1, None)]
    assert plog.producers.aborted == []
    assert [txn_index.read(p) for p in (tmp_path / "c-0").glob("*.txnindex")] == []
    values = {rec.key: rec.value for h, data in plog.iter_batches(0) if not h.is_control
              for rec in decode_records(data)}
    assert values[b"m"] == b"kept" and values[b"j"] == b"plain" and b"k" not in values
    end, lso = plog.log_end_offset, plog.last_stable_offset
    assert lso == end
    await mgr.stop()

    mgr = LogManager(config, now_ms=lambda: now[0])
    await mgr.start()
    plog = mgr.partition("c", 0)
    assert _markers(plog) == [(9, 1, None)]
    assert plog.producers.aborted == [] and plog.last_stable_offset == end
    await mgr.stop()


def test_dropping_abort_markers_rewrites_only_their_txnindex_entries(tmp_path):
    """The cleaner's index update after an ABORT marker is compacted away keeps every other
    aborted transaction of the segment (entries in Kafka's 34-byte .txnindex format)."""
    from kafkette.protocol.txn_index import encode_entry, parse_entries
    from kafkette.storage.cleaner import _drop_index_entries

    path = tmp_path / "00000000000000000000.txnindex"
    path.write_bytes(encode_entry(7, 1, 4, 3) + encode_entry(8, 5, 9, 5) + encode_entry(9, 10, 12, 10))
    _drop_index_entries(tmp_path, 0, {9})
    assert parse_entries(path.read_bytes()) == [(7, 1, 4, 3), (9, 10, 12, 10)]
    _drop_index_entries(tmp_path, 0, {4, 12})
    assert not path.exists()  # nothing left: no file, as Kafka keeps none for such a segment
