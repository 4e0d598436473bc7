"""kafka-python set-up steps shared by the compat tests."""

from __future__ import annotations

from kafka import KafkaConsumer, KafkaProducer


def produce(bootstrap: str, topic: str, count: int, partitions: int = 3) -> None:
    """``count`` records v0, v1, ... spread round-robin over the topic's partitions."""
    producer = KafkaProducer(bootstrap_servers=bootstrap)
    for i in range(count):
        producer.send(topic, f"v{i}".encode(), partition=i % partitions)
    producer.flush()
    producer.close()


def join(consumer: KafkaConsumer, topic: str, partitions: int = 3) -> None:
    """Subscribe and poll until the group assigned every partition (or 20 polls went by)."""
    consumer.partitions_for_topic(topic)  # see programs/pyclient.py: avoids a client stall
    consumer.subscribe([topic])
    for _ in range(20):  # long polls: see KAFKA_PYTHON_POLL_MS in programs/pyclient.py
        consumer.poll(timeout_ms=1000)
        if len(consumer.assignment()) == partitions:
            break
