"""The kafkette data source reads hand-built segment files exactly like protocol.records does."""

from __future__ import annotations

import os
import random

import pytest

from kafkette.pipeline.segments import plan_splits
from kafkette.protocol.records import GZIP, LZ4, NO_COMPRESSION, SNAPPY, ZSTD, Record, build_batch

CODECS = [NO_COMPRESSION, GZIP, SNAPPY, LZ4, ZSTD]


def _write(log_dir: str) -> dict[tuple[str, int], list[tuple]]:
    """Topic ``a-b`` (a dash in the name) with 2 partitions of 2 segments each, all codecs."""
    rng = random.Random(11)
    expect: dict[tuple[str, int], list[tuple]] = {}
    for partition in range(2):
        pdir = os.path.join(log_dir, f"a-b-{partition}")
        os.makedirs(pdir)
        offset = 0
        rows = expect.setdefault(("a-b", partition), [])
        for segment in range(2):
            with open(os.path.join(pdir, f"{offset:020d}.log"), "wb") as f:
                for i in range(10):
                    records = [Record(offset + j, 1_700_000_000_000 + offset + j,
                                      None if j % 7 == 0 else b"k%d" % (offset + j),
                                      rng.randbytes(rng.randint(0, 300)),
                                      [("h", b"x")] if j % 5 == 0 else [])
                               for j in range(rng.randint(1, 20))]
                    f.write(build_batch(records, base_offset=offset,
                                        compression=CODECS[(i + segment) % 5]))
                    rows += [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records]
                    offset += len(records)
                if segment == 1:
                    f.write(b"\x00" * 30)  # a torn tail, as a crash mid-append leaves it
    os.makedirs(os.path.join(log_dir, "other-0"))
    return expect


def test_reads_every_record_in_parallel_splits(spark: object, tmp_path: object) -> None:
    log_dir = str(tmp_path)
    expect = _write(log_dir)
    splits = plan_splits([log_dir], split_bytes=2000)
    assert len(splits) > 8  # 4 segments cut into byte ranges at batch boundaries
    df = (spark.read.format("kafkette").option("split_bytes", "2000")
          .option("exclude_topics", "other").load(log_dir))
    assert df.rdd.getNumPartitions() == len(splits)
    got: dict[tuple[str, int], list[tuple]] = {}
    for row in df.orderBy("topic", "partition", "offset").collect():
        got.setdefault((row.topic, row.partition), []).append(
            (row.offset, int(row.timestamp.timestamp() * 1000), row.key and bytes(row.key),
             bytes(row.value), [(h.key, bytes(h.value)) for h in row.headers]))
    assert got == expect


def test_meta_columns_and_topic_filter(spark: object, tmp_path: object) -> None:
    log_dir = str(tmp_path)
    expect = _write(log_dir)
    df = spark.read.format("kafkette").option("columns", "meta").option("topics", "a-b").load(log_dir)
    assert df.columns == ["topic", "partition", "offset", "timestamp", "transactional", "control",
                          "aborted"]
    counts = {(r.partition): r["count"] for r in df.groupBy("partition").count().collect()}
    assert counts == {p: len(expect[("a-b", p)]) for p in range(2)}
    empty = spark.read.format("kafkette").option("topics", "nope").load(log_dir)
    assert empty.count() == 0


def test_bad_options_are_reported(spark: object, tmp_path: object) -> None:
    with pytest.raises(Exception, match="columns must be"):
        spark.read.format("kafkette").option("columns", "some").load(str(tmp_path)).count()


async def _write_transactions(log_dir: str) -> None:
    """Through the broker's own storage (so the .txnindex is the broker's): topic ``t`` with an
    aborted and a committed transaction, ``__consumer_offsets`` with a plain commit and an
    aborted transactional one."""
    from kafkette.coordinator.group import record_builders
    from kafkette.protocol.control_records import marker_batch
    from kafkette.storage.topics import LogManager

    ts = 1_700_000_000_000

    def txn(pid: int, seq: int, records: list) -> bytes:
        return build_batch(records, base_timestamp=ts, producer_id=pid, producer_epoch=0,
                           base_sequence=seq, transactional=True)

    mgr = LogManager({"log.dirs": log_dir}, now_ms=lambda: ts)
    await mgr.start()
    await mgr.create_topic("t", 1, {})
    await mgr.create_topic("__consumer_offsets", 1, {}, internal=True)
    plog = mgr.partition("t", 0)
    await plog.append(build_batch([(b"a", b"plain")], base_timestamp=ts))       # 0
    await plog.append(txn(7, 0, [(b"b", b"x"), (b"c", b"y")]))                  # 1-2 aborted
    await plog.append(txn(8, 0, [(b"d", b"z")]))                                # 3 committed
    await plog.append(marker_batch(7, 0, False, 0, ts))                         # 4 ABORT
    await plog.append(marker_batch(8, 0, True, 0, ts))                          # 5 COMMIT
    await plog.append(build_batch([(b"e", b"plain")], base_timestamp=ts))       # 6
    offsets = mgr.partition("__consumer_offsets", 0)
    await offsets.append(build_batch([record_builders.offset_commit("g", "t", 0, 3, -1, "", ts, None)],
                                     base_timestamp=ts))
    await offsets.append(txn(9, 0, [record_builders.offset_commit("g", "t", 0, 6, -1, "", ts + 1, None)]))
    await offsets.append(marker_batch(9, 0, False, 0, ts))
    await mgr.stop()


def test_transaction_flags_and_lag_tables(spark: object, tmp_path: object) -> None:
    import asyncio

    from kafkette.pipeline import lag

    log_dir = str(tmp_path)
    asyncio.run(_write_transactions(log_dir))
    df = (spark.read.format("kafkette").option("topics", "t").option("include_control", "true")
          .load(log_dir))
    rows = [(r.offset, r.transactional, r.control, r.aborted)
            for r in df.orderBy("offset").collect()]
    assert rows == [(0, False, False, False), (1, True, False, True), (2, True, False, True),
                    (3, True, False, False), (4, True, True, False), (5, True, True, False),
                    (6, False, False, False)]
    bounds = lag.log_end_offsets(lag.end_offset_points(spark, log_dir)).collect()
    assert [(r.topic, r.log_start_offset, r.log_end_offset, r.records, r.aborted_records)
            for r in bounds] == [("t", 0, 7, 5, 2)]
    commits, _groups, decoded = lag.read_offsets(spark, log_dir)
    assert [(r.group, r.committed_offset) for r in commits.collect()] == [("g", 3)]
    decoded.unpersist()
