"""The README's example of testing an aiokafka app with the kafkette pytest plugin, verbatim."""

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer


async def test_consumer_reads_what_was_produced(kafka_broker):
    producer = AIOKafkaProducer(bootstrap_servers=kafka_broker)
    await producer.start()
    await producer.send_and_wait("orders", b"order-1")
    await producer.stop()
    consumer = AIOKafkaConsumer("orders", bootstrap_servers=kafka_broker, group_id="billing",
                                auto_offset_reset="earliest")
    await consumer.start()
    msg = await consumer.getone()
    await consumer.stop()
    assert msg.value == b"order-1"


def test_readme_shows_this_example_verbatim():
    import inspect
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "README.md").read_text()
    source = inspect.getsource(test_consumer_reads_what_was_produced)
    assert source in readme
