"""Shared setup of the transaction tests: small internal topics, clients, readers."""

from __future__ import annotations

import time
from typing import Any

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type

FAST = {"offsets.topic.num.partitions": "3", "transaction.state.log.num.partitions": "3"}


def create_topic(bootstrap: str, name: str, partitions: int = 1) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)


def txn_producer(bootstrap: str, transactional_id: str, **extra: Any) -> Any:
    from confluent_kafka import Producer

    return Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                     "linger.ms": 0, **extra})


def read_all(bootstrap: str, topic: str, isolation: str, partitions: int = 1,
             expect: int | None = None, timeout: float = 10,
             exactly: int | None = None) -> list[bytes]:
    """Values of ``topic`` from the start as a consumer of ``isolation`` sees them; stops
    when ``expect`` values arrived, or at the first empty poll after some values (or the
    timeout). ``exactly``: the values written are complete, so once that many arrived, a
    second of empty polls shows there are no more (a duplicate would come with them)."""
    if exactly is not None:
        expect = None
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reader-{time.monotonic()}",
                         "isolation.level": isolation, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    idle = 0
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.3)
            if msg is None:
                idle += 1
                if expect is None and idle >= 4 and (exactly is None or len(values) >= exactly):
                    break
                continue
            idle = 0
            if msg.error():
                continue
            values.append(msg.value())
            if expect is not None and len(values) >= expect:
                break
    finally:
        consumer.close()
    return values


TXN_OFFSET_COMMIT = 28


def txn_offset_commit(w: Any, tid: str, pid: int, epoch: int, offset: int, *, group: str,
                      version: int) -> int:
    """TxnOffsetCommit of ``offset`` for partition 0 of topic "in" (a simple group);
    returns the partition's error code."""
    cls = request_type(TXN_OFFSET_COMMIT, version)
    topic_cls = item_type(cls, "topics")
    part_cls = item_type(topic_cls, "partitions")
    r = w.request(TXN_OFFSET_COMMIT, version, transactional_id=tid, group_id=group,
                  producer_id=pid, producer_epoch=epoch, generation_id=-1, member_id="",
                  group_instance_id=None, topics=(make(topic_cls, name="in", partitions=(
                      make(part_cls, partition_index=0, committed_offset=offset,
                           committed_leader_epoch=-1, committed_metadata=""),)),))
    return r.topics[0].partitions[0].error_code
