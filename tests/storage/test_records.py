"""RecordBatch v2 codec against aiokafka's and kafka-python's own builders and readers."""

from __future__ import annotations

import random

import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AioBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AioBuilder
from kafka.record.default_records import DefaultRecordBatch as KpBatch

from kafkette.protocol.records import (
    CorruptRecordError,
    Record,
    build_batch,
    decode_records,
    iter_batches,
    key_values,
    parse_batch_header,
    set_log_append_time,
    verify_crc,
)

CODECS = [0, 1, 2, 3, 4]
RECORDS = [
    (b"k0", b"v0", [("h", b"x")]),
    (None, b"value-without-key" * 20, []),
    (b"k2", None, [("a", None), ("b", b"")]),
    (b"", b"", []),
]


def _aio_batch(codec: int, base_ts: int = 1_700_000_000_000) -> bytes:
    builder = AioBuilder(magic=2, compression_type=codec, is_transactional=0,
                         producer_id=7, producer_epoch=1, base_sequence=5, batch_size=1 << 20)
    for i, (k, v, h) in enumerate(RECORDS):
        builder.append(i, timestamp=base_ts + i * 3, key=k, value=v, headers=h)
    return bytes(builder.build())


@pytest.mark.parametrize("codec", CODECS)
def test_decode_aiokafka_batches(codec: int) -> None:
    raw = _aio_batch(codec)
    assert verify_crc(raw)
    header = parse_batch_header(raw)
    assert (header.magic, header.compression, header.records_count) == (2, codec, 4)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 1, 5)
    assert header.size == len(raw) and header.last_offset_delta == 3
    got = decode_records(raw)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (i, 1_700_000_000_000 + i * 3, k, v, h) for i, (k, v, h) in enumerate(RECORDS)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_build_is_read_by_aiokafka(codec: int) -> None:
    recs = [Record(100 + i, 1_700_000_000_000 + i, k, v, h) for i, (k, v, h) in enumerate(RECORDS)]
    raw = build_batch(recs, base_offset=100, compression=codec, producer_id=3, producer_epoch=0,
                      base_sequence=0)
    batch = AioBatch(raw)
    assert batch.validate_crc()
    assert (batch.base_offset, batch.compression_type, batch.producer_id) == (100, codec, 3)
    got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch]
    assert got == [(100 + i, 1_700_000_000_000 + i, k, v, h) for i, (k, v, h) in enumerate(RECORDS)]
    assert decode_records(raw) == recs


def test_uncompressed_bytes_match_aiokafka_exactly() -> None:
    raw = _aio_batch(0)
    recs = decode_records(raw)
    ours = build_batch(recs, base_offset=0, producer_id=7, producer_epoch=1, base_sequence=5,
                       partition_leader_epoch=parse_batch_header(raw).partition_leader_epoch)
    assert ours == raw


def _pairs(seed: int) -> list[tuple[bytes | None, bytes | None]]:
    """Keys and values around the one/two/three-byte varint length boundaries, and nulls."""
    rng = random.Random(seed)
    sizes = [0, 1, 63, 64, 65, 200, 8191, 8192, 20_000]
    return [(None if rng.random() < 0.1 else rng.randbytes(rng.choice(sizes)),
             None if rng.random() < 0.1 else rng.randbytes(rng.choice(sizes)))
            for _ in range(rng.randint(1, 150))]


@pytest.mark.parametrize("codec", CODECS)
def test_key_value_batches_match_aiokafka_builder(codec: int) -> None:
    for seed in range(5):
        pairs = _pairs(seed)
        builder = AioBuilder(magic=2, compression_type=codec, is_transactional=0,
                             producer_id=-1, producer_epoch=-1, base_sequence=-1,
                             batch_size=1 << 24)
        for i, (k, v) in enumerate(pairs):
            builder.append(i, timestamp=1_700_000_000_000, key=k, value=v, headers=[])
        theirs = bytes(builder.build())
        ours = build_batch(pairs, base_timestamp=1_700_000_000_000, compression=codec)
        if codec == 0:
            assert ours == theirs
        assert [(r.key, r.value) for r in AioBatch(ours)] == pairs
        assert key_values(ours) == key_values(theirs) == pairs


@pytest.mark.parametrize("codec", CODECS)
def test_key_values_agree_with_decode_records(codec: int) -> None:
    raw = _aio_batch(codec)  # records with headers take the general decoder
    assert key_values(raw) == [(r.key, r.value) for r in decode_records(raw)]
    pairs = _pairs(9)
    assert key_values(build_batch(pairs, compression=codec)) == pairs


def test_key_values_rejects_lengths_that_do_not_add_up() -> None:
    raw = bytearray(build_batch([(b"key", b"value")]))
    raw[61] += 2  # the record claims one more byte than its fields hold
    with pytest.raises(CorruptRecordError):
        key_values(bytes(raw))
    with pytest.raises(CorruptRecordError):
        key_values(bytes(raw[:-3]))


def test_kafka_python_reads_gzip_batch() -> None:
    raw = build_batch([(b"a", b"1"), (b"b", b"2")], base_offset=5, base_timestamp=42, compression=1)
    batch = KpBatch(raw)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in batch] == [(5, 42, b"a", b"1"), (6, 42, b"b", b"2")]


def test_raw_snappy_is_decoded() -> None:
    import cramjam
    import google_crc32c

    plain = build_batch([(b"k", b"v" * 100)], base_timestamp=1)
    body = bytes(cramjam.snappy.compress_raw(plain[61:]))
    hdr = bytearray(plain[:61])
    hdr[21:23] = (2).to_bytes(2, "big")
    hdr[8:12] = (49 + len(body)).to_bytes(4, "big")
    raw = hdr + body
    raw[17:21] = google_crc32c.value(bytes(raw[21:])).to_bytes(4, "big")
    assert decode_records(bytes(raw))[0].value == b"v" * 100


def test_iter_batches_stops_at_torn_tail_and_rewrites() -> None:
    a = build_batch([(b"k", b"v")], base_timestamp=10)
    b = build_batch([(b"k", b"w"), (None, b"x")], base_timestamp=11, compression=4)
    buf = bytearray(a + b + b[:30])
    buf[len(a):len(a) + 8] = (1).to_bytes(8, "big")  # base offset 1
    got = list(iter_batches(buf))
    assert [(h.base_offset, h.last_offset, h.records_count) for h, _ in got] == [(0, 0, 1), (1, 2, 2)]
    assert verify_crc(got[1][1])  # base offset is outside the CRC
    set_log_append_time(buf, len(a), 999)
    header, view = list(iter_batches(buf))[1]
    assert header.timestamp_type == 1 and header.max_timestamp == 999 and verify_crc(view)
    assert [r.timestamp for r in decode_records(view)] == [999, 999]


