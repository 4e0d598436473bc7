"""Recovery of damaged segments as Kafka does it (LogLoader.recoverLog): after a clean shutdown a
damaged older segment loses only its own tail; after an unclean one only the segments from the
recovery point on are validated, and a damaged one there is cut with every later segment."""

from __future__ import annotations

import logging
import struct
import time
from pathlib import Path

from kio.schema.errors import ErrorCode

from kafkette.protocol.records import build_batch, iter_batches
from kafkette.storage.recovery import (
    CLEAN_SHUTDOWN,
    RECOVERY_POINT_CHECKPOINT,
    read_offset_checkpoint,
)
from tests.dataplane.test_durability import _read_all
from tests.dataplane.test_hostile_batches import kafka_python_read_all
from tests.dataplane.test_wire import create_topic, produce
from tests.wire import WireClient

TOPIC = "seg"
BATCHES, PER_BATCH = 100, 10


def _fill(broker) -> list[bytes]:
    """1000 records in batches of 10 over ~17 segments of 2000 bytes; their values by offset."""
    values = []
    with WireClient(broker.bootstrap) as w:
        assert create_topic(w, TOPIC, 1, {"internal.segment.bytes": "2000"}).error_code == ErrorCode.none
        for b in range(BATCHES):
            batch = [(b"k", b"value-%04d" % (b * PER_BATCH + i)) for i in range(PER_BATCH)]
            assert produce(w, TOPIC, 0, build_batch(batch)).base_offset == b * PER_BATCH
            values += [v for _, v in batch]
    return values


def _segments(broker) -> list[Path]:
    return sorted((Path(broker.config["log.dirs"]) / f"{TOPIC}-0").glob("*.log"))


def _batch_positions(path: Path) -> list[tuple[int, int, int]]:
    """(file position, base offset, last offset) of each batch of a segment file."""
    out, pos = [], 0
    for header, _ in iter_batches(path.read_bytes()):
        out.append((pos, header.base_offset, header.last_offset))
        pos += header.size
    return out


def test_damaged_old_segment_after_clean_shutdown_keeps_later_segments(kafka_broker_factory,
                                                                       caplog) -> None:
    broker = kafka_broker_factory()
    values = _fill(broker)
    broker.stop()
    segments = _segments(broker)
    assert len(segments) >= 10
    damaged = segments[2]
    batches = _batch_positions(damaged)
    position, lost_from, _ = batches[1]
    lost_to = int(segments[3].stem)  # the next segment's base offset
    data = bytearray(damaged.read_bytes())
    struct.pack_into(">i", data, position + 8, 3)  # a batch length no batch can have
    damaged.write_bytes(bytes(data))
    caplog.set_level(logging.WARNING)
    broker.start()
    assert any("damaged segment" in r.message and damaged.name in r.message
               and "later segment(s) are kept" in r.message for r in caplog.records)
    assert len(_segments(broker)) == len(segments)
    expected = [(o, v) for o, v in enumerate(values) if not lost_from <= o < lost_to]
    assert 0 < lost_to - lost_from < 100  # one segment's tail, not the rest of the log
    records, hw = _read_all(broker.bootstrap, TOPIC)
    assert hw == len(values) and [(r.offset, r.value) for r in records] == expected
    assert kafka_python_read_all(broker.bootstrap, len(expected), TOPIC) == expected
    with WireClient(broker.bootstrap) as w:
        assert produce(w, TOPIC, 0, build_batch([(b"k", b"next")])).base_offset == len(values)
    broker.restart()  # the cut is final: a second start finds nothing more to do
    records, hw = _read_all(broker.bootstrap, TOPIC)
    assert hw == len(values) + 1 and len(records) == len(expected) + 1


def test_unclean_shutdown_validates_from_the_recovery_point(kafka_broker_factory, caplog) -> None:
    broker = kafka_broker_factory({"log.flush.offset.checkpoint.interval.ms": "50"})
    values = _fill(broker)
    segments = _segments(broker)
    checkpoint = Path(broker.config["log.dirs"]) / RECOVERY_POINT_CHECKPOINT
    # Rolling fsyncs the old segment: the recovery point reaches the active segment's base.
    deadline = time.monotonic() + 10
    while read_offset_checkpoint(checkpoint).get((TOPIC, 0), 0) < int(segments[-1].stem):
        assert time.monotonic() < deadline, "no recovery point was checkpointed"
        time.sleep(0.05)
    broker.stop()
    assert (Path(broker.config["log.dirs"]) / CLEAN_SHUTDOWN).exists()
    assert read_offset_checkpoint(checkpoint)[(TOPIC, 0)] == len(values)
    # The state a crash leaves: no clean shutdown marker, the last periodic checkpoint.
    (Path(broker.config["log.dirs"]) / CLEAN_SHUTDOWN).unlink()
    recovery_point = int(segments[6].stem)
    checkpoint.write_text(f"0\n1\n{TOPIC} 0 {recovery_point}\n")
    # A flipped value byte below the recovery point: trusted, as in Kafka (served as stored).
    trusted = segments[2]
    data = bytearray(trusted.read_bytes())
    data[_batch_positions(trusted)[1][0] + 70] ^= 0x01
    trusted.write_bytes(bytes(data))
    flipped_offset = _batch_positions(trusted)[1][1]
    # The same damage in an unflushed segment that is not the last one.
    unflushed = segments[7]
    position, cut_at, _ = _batch_positions(unflushed)[2]
    data = bytearray(unflushed.read_bytes())
    data[position + 70] ^= 0x01
    unflushed.write_bytes(bytes(data))
    caplog.set_level(logging.WARNING)
    broker.start()
    assert any("CRC mismatch" in r.message and unflushed.name in r.message
               and f"deleting the {len(segments) - 8} later unflushed segment(s)" in r.message
               for r in caplog.records)
    assert [p.name for p in _segments(broker)] == [p.name for p in segments[:8]]
    records, hw = _read_all(broker.bootstrap, TOPIC)
    assert hw == cut_at
    got = [(r.offset, r.value) for r in records]
    assert [o for o, _ in got] == list(range(cut_at))
    assert [v for o, v in got if o // PER_BATCH != flipped_offset // PER_BATCH] == [
        v for o, v in enumerate(values[:cut_at]) if o // PER_BATCH != flipped_offset // PER_BATCH]
    with WireClient(broker.bootstrap) as w:
        assert produce(w, TOPIC, 0, build_batch([(b"k", b"next")])).base_offset == cut_at
