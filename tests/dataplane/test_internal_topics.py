"""Internal topics (``__consumer_offsets``) are protected from clients the way Kafka protects
them: Produce and DeleteRecords are refused with INVALID_TOPIC_EXCEPTION (ReplicaManager), and
DeleteTopics / CreatePartitions with TOPIC_AUTHORIZATION_FAILED (what a Kafka cluster whose ACLs
protect the topic answers). The group coordinator keeps working afterwards."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kafkette.protocol.records import build_batch
from tests.wire import WireClient

from .test_wire import produce

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewPartitions  # noqa: E402

OFFSETS = "__consumer_offsets"


def _error(future) -> KafkaError:
    with pytest.raises(KafkaException) as caught:
        future.result(timeout=15)
    return caught.value.args[0]


def _commit_and_read_back(bootstrap: str, group: str, offset: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition("orders", 0, offset)], asynchronous=False)
        (committed,) = consumer.committed([TopicPartition("orders", 0)], timeout=15)
        return committed.offset
    finally:
        consumer.close()


def test_admin_cannot_delete_or_grow_internal_topic(kafka_broker_factory):
    broker = kafka_broker_factory(**{"offsets.topic.num.partitions": 3})
    broker.run(broker.broker.logs.create_topic("orders", 1))
    before = broker.broker.logs.topic(OFFSETS)
    assert before is not None and before.internal
    assert _commit_and_read_back(broker.bootstrap, "billing", 5) == 5

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    deleted = admin.delete_topics([OFFSETS], operation_timeout=10)[OFFSETS]
    assert _error(deleted).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    grown = admin.create_partitions([NewPartitions(OFFSETS, 10)])[OFFSETS]
    assert _error(grown).code() == KafkaError.TOPIC_AUTHORIZATION_FAILED

    after = broker.broker.logs.topic(OFFSETS)
    assert after == before  # same id, same partition count
    # Offsets committed before are still there, and new commits work.
    assert _commit_and_read_back(broker.bootstrap, "billing", 7) == 7
    assert _commit_and_read_back(broker.bootstrap, "shipping", 3) == 3


def test_records_of_internal_topic_cannot_be_deleted_or_produced(kafka_broker_factory):
    broker = kafka_broker_factory(**{"offsets.topic.num.partitions": 1})
    broker.run(broker.broker.logs.create_topic("orders", 1))
    assert _commit_and_read_back(broker.bootstrap, "billing", 4) == 4
    plog = broker.broker.logs.partition(OFFSETS, 0)
    end = plog.log_end_offset
    assert end > 0

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    futures = admin.delete_records([TopicPartition(OFFSETS, 0, end)])
    (future,) = futures.values()
    assert _error(future).code() == KafkaError.TOPIC_EXCEPTION
    assert plog.log_start_offset == 0

    batch = build_batch([(b"k", b"v")])
    with WireClient(broker.bootstrap) as w:
        assert produce(w, OFFSETS, 0, batch).error_code == ErrorCode.invalid_topic_exception
    assert plog.log_end_offset == end
    # Kafka lets its own admin client id write there (AdminUtils.ADMIN_CLIENT_ID).
    with WireClient(broker.bootstrap, client_id="__admin_client") as w:
        assert produce(w, OFFSETS, 0, batch).error_code == ErrorCode.none
    assert plog.log_end_offset == end + 1
    assert _commit_and_read_back(broker.bootstrap, "billing", 9) == 9
