"""Produce-side timestamp checks (LogValidator.validateTimestamp): the window of a CreateTime
topic, record by record, with the batch index of every refused record; producer LogAppendTime
batches; compressed batches; the bound that lets most batches through in one comparison; and
the record errors in a real Produce response."""

from __future__ import annotations

import random
import time

import pytest
from kio.schema.errors import ErrorCode

from kafkette.protocol import timestamp_validation as tv
from kafkette.protocol.batch_validation import check_produced_batch
from kafkette.protocol.records import (
    Record,
    build_batch,
    decode_records,
    parse_batch_header,
    verify_crc,
)
from kafkette.protocol.timestamp_validation import (
    InvalidRecordsError,
    InvalidTimestampRecordsError,
    TimestampWindow,
)
from tests.dataplane.test_wire import create_topic, fetch, produce
from tests.wire import WireClient

NOW = 1_764_000_000_000
LONG_MAX = (1 << 63) - 1
HOUR = 3_600_000
DEFAULT = TimestampWindow(NOW, LONG_MAX, HOUR, False)  # Kafka 4's defaults (KIP-937)
CODECS = [0, 1, 2, 3, 4]


def batch(timestamps: list[int], compression: int = 0, **kw) -> bytes:
    return build_batch([Record(i, ts, b"k%d" % i, b"v" * 100) for i, ts in enumerate(timestamps)],
                       compression=compression, **kw)


def errors_of(data: bytes, window: TimestampWindow = DEFAULT) -> list[tuple[int, str]]:
    try:
        check_produced_batch(data, window)
    except InvalidTimestampRecordsError as exc:
        assert exc.code == 32 and str(exc) == tv.TOP_MESSAGE
        return exc.record_errors
    return []


def expected(timestamps: list[int], window: TimestampWindow) -> list[int]:
    """Kafka's rule, written plainly: the indexes of the refused records."""
    now, before, after = window.now, window.before_max_ms, window.after_max_ms
    return [i for i, ts in enumerate(timestamps)
            if ts != -1 and (now - ts > before or ts - now > after)]


@pytest.mark.parametrize("codec", CODECS)
def test_one_record_far_in_the_future_is_refused_with_its_index(codec: int) -> None:
    stamps = [NOW - 5 + i % 7 for i in range(1000)]
    assert errors_of(batch(stamps, codec)) == []
    stamps[537] = NOW + HOUR + 1
    got = errors_of(batch(stamps, codec))
    assert got == [(537, f"Timestamp {NOW + HOUR + 1} of message with offset 537 is out of range. "
                    f"The timestamp should be within [{NOW - LONG_MAX}, {NOW + HOUR}]")]
    stamps[537] = NOW + HOUR  # the edge itself is inside
    assert errors_of(batch(stamps, codec)) == []


@pytest.mark.parametrize("codec", [0, 4])
def test_before_max_and_every_refused_record(codec: int) -> None:
    window = TimestampWindow(NOW, 60_000, 1_000, False)
    stamps = [NOW - 60_001, NOW, NOW - 60_000, NOW + 1_001, NOW + 1_000, -1, NOW - 10**9]
    got = errors_of(batch(stamps, codec), window)
    assert [i for i, _ in got] == [0, 3, 6]
    assert got[1][1].endswith(f"within [{NOW - 60_000}, {NOW + 1_000}]")


def test_no_timestamp_records_are_not_checked() -> None:
    window = TimestampWindow(NOW, 1_000, 1_000, False)
    assert errors_of(build_batch([(b"a", b"1"), (b"b", b"2")], base_timestamp=-1), window) == []


def test_log_append_time_topic_takes_any_create_time() -> None:
    window = TimestampWindow(NOW, 0, 0, True)
    assert errors_of(batch([0, NOW + 10 * HOUR, 5]), window) == []


@pytest.mark.parametrize("codec", [0, 2])
def test_producer_log_append_time_batches(codec: int) -> None:
    lat = batch([NOW, NOW + 1], codec, timestamp_type=1)
    assert parse_batch_header(lat).timestamp_type == 1
    # A LogAppendTime topic refuses every record of such a batch.
    got = errors_of(lat, TimestampWindow(NOW, LONG_MAX, HOUR, True))
    assert [i for i, _ in got] == [0, 1]
    assert got[0][1].startswith("Invalid timestamp type in message DefaultRecord(offset=0, "
                                "timestamp=")
    assert got[0][1].endswith("key=2 bytes, value=100 bytes). Producer should not set "
                              "timestamp type to LogAppendTime.")
    # A CreateTime topic reads every record's timestamp as the batch's max timestamp.
    assert errors_of(lat) == []
    assert [i for i, _ in errors_of(lat, TimestampWindow(NOW + 2 * HOUR, 1, HOUR, False))] == [0, 1]


@pytest.mark.parametrize("codec", [0, 1])
def test_create_time_topic_stores_producer_log_append_time_batch_as_create_time(codec: int) -> None:
    lat = batch([NOW - 7, NOW - 2], codec, timestamp_type=1)
    out, header, _ = check_produced_batch(lat, DEFAULT)
    assert header.timestamp_type == 0 and header.max_timestamp == NOW - 2 and verify_crc(out)
    assert [r.timestamp for r in decode_records(out)] == [NOW - 7, NOW - 2]
    assert out[:17] == lat[:17] and out[23:] == lat[23:]  # only the CRC and the attributes
    assert check_produced_batch(lat)[0] is lat  # without a window: left as is


def test_java_long_arithmetic() -> None:
    # now - Long.MIN_VALUE wraps in Kafka: with both limits at Long.MAX_VALUE it is taken.
    window = TimestampWindow(NOW, LONG_MAX, LONG_MAX, False)
    assert errors_of(batch([-(1 << 63)]), window) == []
    assert [i for i, _ in errors_of(batch([-(1 << 63)]))] == [0]
    # The window's bounds are printed as Java computes them.
    window = TimestampWindow(NOW, HOUR, LONG_MAX, False)
    got = errors_of(batch([NOW - 2 * HOUR]), window)
    assert got[0][1].endswith(f"within [{NOW - HOUR}, {NOW + LONG_MAX - (1 << 64)}]")


@pytest.mark.parametrize("codec", [0, 3])
def test_random_batches_match_kafkas_rule(codec: int) -> None:
    rng = random.Random(20261125)
    for _ in range(60):
        window = TimestampWindow(NOW, rng.choice([LONG_MAX, 0, 50, 10**6]),
                                 rng.choice([HOUR, 0, 50, 10**6]), False)
        base = NOW + rng.randint(-2 * 10**6, 2 * 10**6)
        spread = rng.choice([0, 10, 100, 10**4, 10**7])
        stamps = [base + rng.randint(-spread, spread) for _ in range(rng.randint(1, 300))]
        if rng.random() < 0.3:  # a run of one layout, then a different record
            stamps = [base] * 200 + [base + rng.randint(-10**7, 10**7)]
        data = batch(stamps, codec)
        got = errors_of(data, window)
        assert [i for i, _ in got] == expected(
            [r.timestamp for r in decode_records(data)], window)


def test_the_bound_spares_the_exact_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch stamped near now with small deltas is cleared without reading its records
    again; one whose deltas are wide enough to leave the window is read exactly."""
    calls: list[int] = []
    exact = tv.record_errors
    monkeypatch.setattr(tv, "record_errors",
                        lambda *a, **k: calls.append(1) or exact(*a, **k))
    assert errors_of(batch([NOW - 3 + i % 50 for i in range(5000)])) == []
    assert errors_of(batch([NOW - 10**6 + i * 200 for i in range(5000)])) == []  # 3-byte deltas
    assert calls == []
    assert errors_of(batch([NOW + i % 60 for i in range(5000)]),
                     TimestampWindow(NOW, 100, 100, False)) == []  # the bound clears it
    assert calls == []
    window = TimestampWindow(NOW, 50, 50, False)
    assert errors_of(batch([NOW + i % 40 for i in range(5000)]), window) == []  # read exactly
    assert calls == [1]
    stamps = [NOW + i % 60 for i in range(5000)]
    got = [i for i, _ in errors_of(batch(stamps), window)]
    assert got == expected(stamps, window) and len(got) == 83 * 9


def test_produce_response_carries_record_errors(kafka_broker_factory) -> None:
    broker = kafka_broker_factory()
    now = int(time.time() * 1000)
    with WireClient(broker.bootstrap) as w:
        create_topic(w, "ts-window", 1, {"message.timestamp.before.max.ms": "60000"})
        good = batch([now] * 3, 1)
        bad = batch([now, now + 2 * HOUR, now - 120_000, now], 1)
        for version in (8, 9, 11):
            r = produce(w, "ts-window", 0, bad, version=version)
            assert r.error_code == ErrorCode.invalid_timestamp and r.base_offset == -1
            assert r.error_message == tv.TOP_MESSAGE
            assert [e.batch_index for e in r.record_errors] == [1, 2]
            assert r.record_errors[0].batch_index_error_message.startswith(
                f"Timestamp {now + 2 * HOUR} of message with offset 1 is out of range.")
        r = produce(w, "ts-window", 0, bad, version=7)  # no record errors before v8
        assert r.error_code == ErrorCode.invalid_timestamp
        r = produce(w, "ts-window", 0, good)
        assert r.error_code == ErrorCode.none and r.base_offset == 0  # nothing of bad was written
        part = fetch(w, "ts-window", 0, 0).responses[0].partitions[0]
        assert part.high_watermark == 3


@pytest.mark.parametrize("codec", [0, 4])
def test_compacted_topic_key_errors_come_first(codec: int) -> None:
    """validateRecord: a record without key in a compacted topic gets the key error (its
    timestamp is not looked at); any timestamp error makes the whole INVALID_TIMESTAMP."""
    def records(stamps_keys):
        return build_batch([Record(i, ts, key, b"v") for i, (ts, key) in enumerate(stamps_keys)],
                           compression=codec)

    why = "Compacted topic cannot accept message without key in topic partition c-0."
    late = NOW + 2 * HOUR
    data = records([(late, None), (NOW, b"k"), (late, b"k"), (NOW, None)])
    with pytest.raises(InvalidTimestampRecordsError) as caught:
        check_produced_batch(data, DEFAULT, "c-0")
    assert [(i, m == why) for i, m in caught.value.record_errors] == \
        [(0, True), (2, False), (3, True)]
    data = records([(late, None), (NOW, b"k"), (NOW, None), (NOW, None), (NOW, None)])
    with pytest.raises(InvalidRecordsError) as refused:
        check_produced_batch(data, DEFAULT, "c-0")
    assert refused.value.code == 87
    assert [i for i, _ in refused.value.record_errors] == [0, 2, 3, 4]
    assert str(refused.value) == (
        "One or more records have been rejected due to 4 record errors in total, and only "
        "showing the first three errors at most: [" + ", ".join(
            f"RecordError(batchIndex={i}, message='{why}')" for i in (0, 2, 3)) + "]")
    # Keys are only checked for compacted topics; keyed batches take the fast path.
    assert check_produced_batch(data)[2] is True
    assert check_produced_batch(records([(NOW, b"k")] * 3), DEFAULT, "c-0")[2] is False
