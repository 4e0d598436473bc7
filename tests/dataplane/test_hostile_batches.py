"""CRC-valid record batches whose header disagrees with their records are refused with Kafka's
error codes (LogValidator.validateBatch, DefaultRecordBatch's record iteration) and leave the
partition readable: good data produced by a stock client before and after them is fetched back
whole, also after a restart, while another connection keeps being served."""

from __future__ import annotations

import struct
import time

import pytest
from kio.schema.errors import ErrorCode

from kafkette.protocol.batch_validation import validate_produced_batch
from kafkette.protocol.record_errors import CorruptRecordError, InvalidRecordError
from kafkette.protocol.records import (
    CRC_OFFSET,
    Record,
    batch_crc,
    build_batch,
    decode_records,
    iter_batches,
)
from tests.dataplane.test_wire import create_topic, fetch, produce
from tests.wire import WireClient

TOPIC = "hostile"
# Header fields of a v2 batch: (struct format, position)
FIELDS = {"base_offset": (">q", 0), "last_offset_delta": (">i", 23), "producer_id": (">q", 43),
          "base_sequence": (">i", 53), "records_count": (">i", 57)}


def patched(batch: bytes, **fields: int) -> bytes:
    """``batch`` with header fields overwritten and a CRC that matches again."""
    out = bytearray(batch)
    for name, value in fields.items():
        fmt, pos = FIELDS[name]
        struct.pack_into(fmt, out, pos, value)
    struct.pack_into(">I", out, CRC_OFFSET, batch_crc(out))
    return bytes(out)


def one(value: bytes, compression: int = 0) -> bytes:
    return build_batch([(b"k", value)], compression=compression)


# The findings of issue 14 and their neighbours: (name, batch, Kafka's error code).
HOSTILE = [
    ("lastOffsetDelta=-5, one record", patched(one(b"x"), last_offset_delta=-5), ErrorCode.invalid_record),
    ("lastOffsetDelta=2^31-1, one record", patched(one(b"x"), last_offset_delta=2**31 - 1),
     ErrorCode.invalid_record),
    ("recordsCount=1000, one record", patched(one(b"x"), records_count=1000), ErrorCode.invalid_record),
    ("recordsCount=1000 and lastOffsetDelta=999, one record",
     patched(one(b"x"), records_count=1000, last_offset_delta=999), ErrorCode.invalid_record),
    ("recordsCount=1000 and lastOffsetDelta=999, one gzip record",
     patched(one(b"x", 1), records_count=1000, last_offset_delta=999), ErrorCode.invalid_record),
    ("recordsCount=1 and lastOffsetDelta=0, three zstd records",
     patched(build_batch([(b"k", b"a"), (b"k", b"b"), (b"k", b"c")], compression=4),
             records_count=1, last_offset_delta=0), ErrorCode.invalid_record),
    ("recordsCount=0", patched(one(b"x"), records_count=0, last_offset_delta=-1), ErrorCode.invalid_record),
    ("baseOffset=7", patched(one(b"x"), base_offset=7), ErrorCode.invalid_record),
    ("producer id without a sequence", patched(one(b"x"), producer_id=5, base_sequence=-1),
     ErrorCode.invalid_record),
    ("CRC mismatch", one(b"x")[:-1] + b"y", ErrorCode.corrupt_message),
]


def _garbled_record() -> bytes:
    """A record whose key length points past the end of the record (lengths that do not add up)."""
    batch = bytearray(one(b"value"))
    batch[61 + 4] = 0x20  # record: length, attributes, ts delta, offset delta, then key length
    struct.pack_into(">I", batch, CRC_OFFSET, batch_crc(batch))
    return bytes(batch)


def _negative_record_length() -> bytes:
    batch = bytearray(one(b"value"))
    batch[61] = 0x03  # zigzag -2
    struct.pack_into(">I", batch, CRC_OFFSET, batch_crc(batch))
    return bytes(batch)


HOSTILE.append(("a record's fields overrun its length", _garbled_record(), ErrorCode.invalid_record))
HOSTILE.append(("a negative record length", _negative_record_length(), ErrorCode.invalid_record))
HOSTILE.append(("the second record's fields do not fill its length",
                patched(build_batch([(b"k", b"a"), (b"k", b"b")])[:-3] + b"\x00\x00\x00", records_count=2),
                ErrorCode.invalid_record))


@pytest.mark.parametrize(("name", "batch", "code"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_validation_codes(name: str, batch: bytes, code: ErrorCode) -> None:
    with pytest.raises(CorruptRecordError) as err:
        validate_produced_batch(batch)
    assert err.value.code == code.value
    assert isinstance(err.value, InvalidRecordError) == (code == ErrorCode.invalid_record)


def test_good_batches_pass_untouched() -> None:
    for codec in range(5):
        batch = build_batch([(b"k%d" % i, b"v" * i) for i in range(300)], compression=codec)
        out, header = validate_produced_batch(batch)
        assert out is batch and header.records_count == 300 and header.last_offset_delta == 299
    headers = build_batch([Record(i, 5, b"k", None, [("h", b"1"), ("n", None)]) for i in range(3)])
    assert validate_produced_batch(headers)[0] is headers
    big = build_batch([(None, b"x" * 20000), (b"k" * 9000, None), (b"", b"")], compression=0)
    assert validate_produced_batch(big)[0] is big  # three-byte varints


def _kafka_python_produce(bootstrap: str, values: list[bytes]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=0)
    try:
        for value in values:
            producer.send(TOPIC, key=b"k", value=value, partition=0).get(timeout=30)
    finally:
        producer.close()


def kafka_python_read_all(bootstrap: str, expected: int, topic: str = TOPIC
                          ) -> list[tuple[int, bytes]]:
    """(offset, value) of partition 0 from the beginning by a kafka-python consumer, until
    ``expected`` records came (30 s at most) and then nothing more for a moment."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             group_id=None, fetch_max_wait_ms=50)
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        out: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 30
        while len(out) < expected and time.monotonic() < deadline:
            for msgs in consumer.poll(timeout_ms=200).values():
                out += [(m.offset, m.value) for m in msgs]
        for msgs in consumer.poll(timeout_ms=300).values():  # nothing more may come
            out += [(m.offset, m.value) for m in msgs]
        return out
    finally:
        consumer.close()


def test_hostile_batches_are_refused_and_the_log_stays_readable(kafka_broker_factory) -> None:
    broker = kafka_broker_factory()
    with WireClient(broker.bootstrap) as w, WireClient(broker.bootstrap) as other:
        assert create_topic(w, TOPIC, 1).error_code == ErrorCode.none
        _kafka_python_produce(broker.bootstrap, [b"before-%d" % i for i in range(3)])
        for name, batch, code in HOSTILE:
            for acks in (1, -1):
                part = produce(w, TOPIC, 0, batch, acks=acks)
                assert part.error_code == code, name
                assert part.base_offset == -1 and part.error_message, name
            # Another connection is served meanwhile and sees an unchanged log.
            p = fetch(other, TOPIC, 0, 0).responses[0].partitions[0]
            assert p.error_code == ErrorCode.none and p.high_watermark == 3, name
        # acks=0: Kafka's only signal is closing that one connection.
        with WireClient(broker.bootstrap) as w0:
            produce(w0, TOPIC, 0, HOSTILE[0][1], acks=0)
            assert w0.is_closed_by_peer()
    _kafka_python_produce(broker.bootstrap, [b"after-%d" % i for i in range(3)])
    expected = [(i, b"before-%d" % i) for i in range(3)] + [(3 + i, b"after-%d" % i) for i in range(3)]
    assert kafka_python_read_all(broker.bootstrap, 6) == expected
    broker.restart()
    assert kafka_python_read_all(broker.bootstrap, 6) == expected
    with WireClient(broker.bootstrap) as w:
        assert produce(w, TOPIC, 0, one(b"next")).base_offset == 6


def test_compressed_batch_with_gapped_inner_offsets_is_renumbered(kafka_broker_factory) -> None:
    """Kafka rewrites a compressed batch whose records do not carry offset deltas 0..n-1."""
    broker = kafka_broker_factory()
    gapped = build_batch([Record(0, 1000, b"k", b"a"), Record(5, 1000, b"k", b"b"),
                          Record(9, 1000, b"k", b"c")], compression=1)
    gapped = patched(gapped, last_offset_delta=2)
    with WireClient(broker.bootstrap) as w:
        create_topic(w, TOPIC, 1)
        assert produce(w, TOPIC, 0, one(b"first")).base_offset == 0
        part = produce(w, TOPIC, 0, gapped)
        assert part.error_code == ErrorCode.none and part.base_offset == 1
        assert produce(w, TOPIC, 0, one(b"last")).base_offset == 4
        p = fetch(w, TOPIC, 0, 0).responses[0].partitions[0]
        records = [r for _, view in iter_batches(p.records) for r in decode_records(view)]
        assert [(r.offset, r.value) for r in records] == [
            (0, b"first"), (1, b"a"), (2, b"b"), (3, b"c"), (4, b"last")]
