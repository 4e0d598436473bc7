"""A Fetch response carries at most ``fetch.max.bytes`` of records (Kafka caps the request's
MaxBytes at the broker's fetch.max.bytes, 55 MiB by default); a first batch larger than that is
still returned whole so consumers make progress (KIP-74)."""

from __future__ import annotations

from datetime import timedelta

from kio.schema.errors import ErrorCode

from kafkette.broker.config_def import DEFAULTS
from kafkette.broker.services.record_service import FETCH_MAX_BYTES
from kafkette.protocol.codec import request_type
from kafkette.protocol.records import build_batch
from tests.dataplane.test_wire import create_topic, produce
from tests.wire import WireClient, entity

FETCH_MAX = 300_000
INT_MAX = 2**31 - 1


def fetch_all(w: WireClient, topic: str, partitions: int) -> list[int]:
    """Record bytes per partition of one Fetch asking for everything (MaxBytes 2^31-1)."""
    cls = request_type(1, 12)
    topic_cls = type(entity(cls, "topics", topic=topic, partitions=()))
    parts = tuple(entity(topic_cls, "partitions", partition=p, fetch_offset=0,
                         partition_max_bytes=INT_MAX, current_leader_epoch=-1,
                         last_fetched_epoch=-1, log_start_offset=-1) for p in range(partitions))
    resp = w.request(1, 12, replica_id=-1, max_wait=timedelta(0), min_bytes=1, max_bytes=INT_MAX,
                     isolation_level=0, session_id=0, session_epoch=-1,
                     topics=(entity(cls, "topics", topic=topic, partitions=parts),),
                     forgotten_topics_data=(), rack_id="")
    out = []
    for p in resp.responses[0].partitions:
        assert p.error_code == ErrorCode.none
        out.append(len(p.records or b""))
    return out


def test_fetch_is_capped_at_fetch_max_bytes(kafka_broker_factory):
    broker = kafka_broker_factory(**{"fetch.max.bytes": FETCH_MAX})
    with WireClient(broker.bootstrap) as w:
        assert create_topic(w, "wide", 3).error_code == ErrorCode.none
        for p in range(3):
            for i in range(10):
                batch = build_batch([(b"k", bytes([i]) * 40_000)])
                assert produce(w, "wide", p, batch).error_code == ErrorCode.none
        sizes = fetch_all(w, "wide", 3)
        assert 0 < sum(sizes) <= FETCH_MAX, sizes
        # A first batch over the cap is returned whole.
        assert create_topic(w, "big", 1, {"max.message.bytes": "1000000"}
                            ).error_code == ErrorCode.none
        assert produce(w, "big", 0, build_batch([(b"k", b"x" * 500_000)])
                       ).error_code == ErrorCode.none
        produce(w, "big", 0, build_batch([(b"k", b"y" * 10)]))
        [first] = fetch_all(w, "big", 1)
        assert 500_000 < first < 500_000 + 1000


def test_default_cap_is_kafkas():
    assert DEFAULTS["fetch.max.bytes"] == str(FETCH_MAX_BYTES) == "57671680"
