"""Shared setup of the transaction tests: small internal topics, clients, readers."""

from __future__ import annotations

import time
from typing import Any

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
             expect: int | None = None, timeout: float = 10) -> list[bytes]:
    """Values of ``topic`` from the start as a consumer of ``isolation`` sees them; stops
    when ``expect`` values arrived, or at the first empty poll after some values (or the
    timeout)."""
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
                if expect is None and idle >= 4:
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
