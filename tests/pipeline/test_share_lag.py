"""Share-group lag from ``__share_group_state`` beside consumer-group lag: a real kafkette, a
confluent-kafka ``ShareConsumer`` that accepts records 0-2 and 5-9 of ten and leaves 3-4
released, then the lag job on the broker's log.dirs (run by test_broker_lag, whose broker and
lag job it shares: a lag job costs seconds of Spark).

Expected: start offset (SPSO) 3, five records past it acknowledged, log end 10: lag 10 - 3 - 5
= 2; plus a second partition the group released every record of (SPSO 0, lag 4)."""

from __future__ import annotations

import os
import time
import uuid
from datetime import UTC, datetime

import pytest

pd = pytest.importorskip("pandas", reason="needs the pipeline extra: pip install -e '.[test,pipeline]'")
pytest.importorskip("pyspark", reason="needs the pipeline extra: pip install -e '.[test,pipeline]'")
confluent_kafka = pytest.importorskip("confluent_kafka")

import pyarrow as pa  # noqa: E402
from confluent_kafka import AcknowledgeType, ShareConsumer  # noqa: E402

from kafkette.pipeline import lag, share_state  # noqa: E402
from kafkette.protocol.records import build_batch  # noqa: E402
from kafkette.protocol.share_state_records import (  # noqa: E402
    SHARE_SNAPSHOT,
    SHARE_UPDATE,
    ShareSnapshotValue,
    ShareStateKey,
    ShareUpdateValue,
    encode_key,
    encode_snapshot_value,
    encode_update_value,
)
from tests.dataplane.test_wire import produce  # noqa: E402
from tests.share_fetch.test_wire import set_group_config  # noqa: E402
from tests.wire import WireClient  # noqa: E402

TOPIC, GROUP = "tasks", "workers"
HELD = (3, 4)


SHARE_CONFIG = {"group.share.heartbeat.interval.ms": "250",
                "group.share.session.timeout.ms": "3000"}


def share_workload(broker: object) -> None:
    """Topic ``tasks`` (2 partitions): ten records on p0 and four on p1; a ShareConsumer of
    group ``workers`` accepts p0's records but 3 and 4 and releases the rest. The broker needs
    ``SHARE_CONFIG``. test_broker_lag runs it on its broker, before its one lag job."""
    broker.run(broker.broker.logs.create_topic(TOPIC, 2))  # type: ignore[attr-defined]
    set_group_config(broker.bootstrap, GROUP, share_auto_offset_reset="earliest")  # type: ignore[attr-defined]
    with WireClient(broker.bootstrap) as w:  # type: ignore[attr-defined]
        produce(w, TOPIC, 0, build_batch([(None, b"task-%d" % i) for i in range(10)]))
        produce(w, TOPIC, 1, build_batch([(None, b"other-%d" % i) for i in range(4)]))

    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": GROUP,  # type: ignore[attr-defined]
                              "share.acknowledgement.mode": "explicit"})
    try:
        consumer.subscribe([TOPIC])
        received = []
        deadline = time.monotonic() + 30
        while len(received) < 14 and time.monotonic() < deadline:
            received += [m for m in consumer.poll(0.2) if not m.error()]
        assert sorted((m.partition(), m.offset()) for m in received) == [
            *((0, i) for i in range(10)), *((1, i) for i in range(4))]
        for m in received:
            accepted = m.partition() == 0 and m.offset() not in HELD
            consumer.acknowledge(m, AcknowledgeType.ACCEPT if accepted else AcknowledgeType.RELEASE)
        assert not [v for v in (consumer.commit_sync(10.0) or {}).values() if v is not None]
    finally:
        consumer.close()


def check_share_lag(out: str) -> None:
    """What the lag job wrote for ``share_workload``: p0 lag 10 - 3 - 5 = 2, p1 lag 4."""
    shares = pd.read_parquet(os.path.join(out, "share_lag.parquet")).sort_values("partition")
    assert [(r.group, r.topic, r.partition, r.start_offset, r.log_end_offset, r.lag)
            for r in shares.itertuples()] == [(GROUP, TOPIC, 0, 3, 10, 2),
                                              (GROUP, TOPIC, 1, 0, 4, 4)]
    assert list(shares.delivery_complete_count) == [5, 0]
    with open(os.path.join(out, "summary.md")) as f:
        summary = f.read()
    assert "## Share-group lag" in summary
    assert f"| {GROUP} | {TOPIC} | 0 | 3 |" in summary


def test_share_state_records_decode_and_fold(spark: object) -> None:
    """An update without a start offset keeps the last one; a tombstone last removes the
    share-partition; the last record's delivery-complete count is the one that counts."""
    kept, dropped = uuid.uuid4(), uuid.uuid4()
    records = [
        (ShareStateKey(SHARE_SNAPSHOT, "g", kept, 0),
         encode_snapshot_value(ShareSnapshotValue(0, 1, 0, 4, 0, 0, (), 0))),
        (ShareStateKey(SHARE_UPDATE, "g", kept, 0),
         encode_update_value(ShareUpdateValue(0, 0, -1, (), 3))),  # start unchanged
        (ShareStateKey(SHARE_SNAPSHOT, "g", dropped, 0),
         encode_snapshot_value(ShareSnapshotValue(0, 1, 0, 7, 0, 0, ()))),
        (ShareStateKey(SHARE_SNAPSHOT, "g", dropped, 0), None),  # deleted
    ]
    now = datetime.now(UTC)
    batch = pa.RecordBatch.from_pydict({
        "partition": [0] * len(records), "offset": list(range(len(records))),
        "timestamp": [now] * len(records),
        "key": [encode_key(k) for k, _ in records], "value": [v for _, v in records]})
    (decoded,) = list(share_state.decode_arrow(iter([batch])))
    rows = decoded.to_pylist()
    assert [(r["record_type"], r["start_offset"], r["delivery_complete_count"], r["tombstone"])
            for r in rows] == [("snapshot", 4, 0, False), ("update", -1, 3, False),
                               ("snapshot", 7, -1, False), ("snapshot", None, None, True)]

    frame = spark.createDataFrame(decoded.to_pandas(), share_state.DDL)  # type: ignore[attr-defined]
    bounds = spark.createDataFrame(  # type: ignore[attr-defined]
        [("t", 0, 20), ("u", 0, 9)], "topic string, partition int, log_end_offset bigint")
    out = lag.share_lag(spark, frame, bounds, {str(kept): "t", str(dropped): "u"}).collect()
    assert [(r.group, r.topic, r.partition, r.start_offset, r.delivery_complete_count,
             r.log_end_offset, r.lag) for r in out] == [("g", "t", 0, 4, 3, 20, 13)]
