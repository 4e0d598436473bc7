"""The README's worked example of fault injection, run as written."""

from aiokafka import AIOKafkaConsumer
from aiokafka.errors import CommitFailedError


async def test_app_survives_a_rebalance_during_commit(kafka_broker):
    producer = kafka_broker.producer()
    for i in range(10):
        producer.produce("orders", f"order-{i}".encode())
    producer.flush()
    kafka_broker.inject("OffsetCommit", "REBALANCE_IN_PROGRESS")  # the next commit fails
    consumer = AIOKafkaConsumer("orders", bootstrap_servers=kafka_broker, group_id="billing",
                                enable_auto_commit=False, auto_offset_reset="earliest")
    await consumer.start()
    await consumer.getmany(timeout_ms=5000)  # the app's work
    try:
        await consumer.commit()
    except CommitFailedError:
        await consumer.commit()  # what the app under test must do
    await consumer.stop()
    assert kafka_broker.faults() == []  # the fault reached the client
