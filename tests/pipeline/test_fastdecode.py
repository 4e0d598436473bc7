"""The columnar fast path must agree with protocol.records.decode_records on every input."""

from __future__ import annotations

import random

import pytest

pytest.importorskip("pyarrow")

from kafkette.pipeline import fastdecode  # noqa: E402
from kafkette.protocol.records import (  # noqa: E402
    GZIP,
    LOG_APPEND_TIME,
    LZ4,
    NO_COMPRESSION,
    SNAPPY,
    ZSTD,
    CorruptRecordError,
    Record,
    build_batch,
    decode_records,
    iter_batches,
)


def _random_records(rng: random.Random, base_offset: int, n: int, ts: int) -> list[Record]:
    out = []
    for i in range(n):
        key = None if rng.random() < 0.2 else rng.randbytes(rng.choice([0, 3, 70, 200]))
        value = None if rng.random() < 0.1 else rng.randbytes(rng.choice([0, 10, 63, 64, 300, 20000]))
        headers = [(f"h{j}-é", None if rng.random() < 0.3 else rng.randbytes(rng.randint(0, 90)))
                   for j in range(rng.choice([0, 0, 0, 1, 3]))]
        out.append(Record(base_offset + i, ts + rng.randint(-5, 10**7), key, value, headers))
    return out


def _log(compression: int, seed: int = 7, timestamp_type: int = 0) -> bytes:
    rng = random.Random(seed)
    parts = []
    offset = 0
    for _ in range(12):
        n = rng.randint(1, 40)
        parts.append(build_batch(_random_records(rng, offset, n, 1_700_000_000_000),
                                 base_offset=offset, compression=compression,
                                 timestamp_type=timestamp_type))
        offset += n + rng.choice([0, 0, 5])  # gaps, as compaction leaves them
    return b"".join(parts)


def _reference(log: bytes) -> list[tuple]:
    return [(r.offset, r.timestamp, r.key, r.value, [(k, v) for k, v in r.headers])
            for _, batch in iter_batches(log) for r in decode_records(batch)]


def _fast(log: bytes, **kw: object) -> list[tuple]:
    rows = []
    for cols in fastdecode.decode_batches(log, **kw):
        keys, values, headers = cols.key.to_pylist(), cols.value.to_pylist(), cols.headers.to_pylist()
        for i in range(len(cols)):
            rows.append((int(cols.offset[i]), int(cols.timestamp[i]), keys[i], values[i],
                         [(h["key"], h["value"]) for h in headers[i]]))
    return rows


@pytest.mark.parametrize("codec", [NO_COMPRESSION, GZIP, SNAPPY, LZ4, ZSTD])
def test_matches_reference_decoder(codec: int, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _log(codec)
    # Prove the fast path itself ran: the reference fallback is not allowed here.
    monkeypatch.setattr(fastdecode, "_decode_reference", None)
    assert _fast(log) == _reference(log)
    assert len(_reference(log)) > 100


def test_small_chunks_and_log_append_time(monkeypatch: pytest.MonkeyPatch) -> None:
    log = _log(NO_COMPRESSION, seed=3, timestamp_type=LOG_APPEND_TIME)
    monkeypatch.setattr(fastdecode, "_decode_reference", None)
    assert _fast(log, max_chunk=1) == _reference(log)


def test_meta_only_and_torn_tail() -> None:
    log = _log(LZ4, seed=5)
    torn = log + log[:100]
    expect = [(o, t) for o, t, *_ in _reference(log)]
    got = [(int(o), int(t)) for c in fastdecode.decode_batches(torn, payload=False)
           for o, t in zip(c.offset, c.timestamp, strict=True)]
    assert got == expect


def test_mangled_records_fall_back_to_reference_errors() -> None:
    batch = bytearray(build_batch([(b"k", b"v" * 10)] * 3, base_offset=0))
    batch[61] = 0x7E  # first record's length now overruns the batch
    with pytest.raises(CorruptRecordError):
        list(fastdecode.decode_batches(bytes(batch), check_crc=False))
    with pytest.raises(CorruptRecordError, match="CRC"):
        list(fastdecode.decode_batches(bytes(batch)))


def test_control_batches_skipped_by_default() -> None:
    data = build_batch([(b"a", b"1"), (b"b", b"2")], base_offset=0)
    marker = build_batch([(b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00")], base_offset=2,
                         control=True, transactional=True)
    cols = list(fastdecode.decode_batches(data + marker))
    assert [int(o) for c in cols for o in c.offset] == [0, 1]
    cols = list(fastdecode.decode_batches(data + marker, include_control=True))
    assert [int(o) for c in cols for o in c.offset] == [0, 1, 2]


def test_transaction_flags_per_record() -> None:
    """transactional / control / aborted come from each record's batch; aborted from the
    partition's aborted ranges (producer id -> [(first offset, marker offset)])."""
    plain = build_batch([(b"a", b"1")], base_offset=0)
    aborted = build_batch([(b"b", b"2"), (b"c", b"3")], base_offset=1, producer_id=7,
                          producer_epoch=0, base_sequence=0, transactional=True)
    abort = build_batch([(b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x00")], base_offset=3,
                        producer_id=7, producer_epoch=0, control=True, transactional=True)
    committed = build_batch([(b"d", b"4")], base_offset=4, producer_id=7, producer_epoch=0,
                            base_sequence=2, transactional=True)
    log = plain + aborted + abort + committed
    for reference in (False, True):
        cols = list(fastdecode.decode_batches(log, include_control=True, aborted={7: [(1, 3)]},
                                              reference=reference))
        rows = [(int(o), bool(t), bool(c), bool(a)) for col in cols
                for o, t, c, a in zip(col.offset, col.transactional, col.control, col.aborted,
                                      strict=True)]
        assert rows == [(0, False, False, False), (1, True, False, True), (2, True, False, True),
                        (3, True, True, False), (4, True, False, False)]
    cols = list(fastdecode.decode_batches(log, payload=False))
    assert [bool(a) for col in cols for a in col.aborted] == [False] * 4  # no index: none
