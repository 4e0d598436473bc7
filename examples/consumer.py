"""Example consumer: reads $TOPIC in group $GROUP on $BOOTSTRAP and commits as it goes (aiokafka)."""

from __future__ import annotations

import asyncio
import json
import os

from aiokafka import AIOKafkaConsumer


async def main() -> None:
    bootstrap = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
    topic = os.environ.get("TOPIC", "example-events")
    group = os.environ.get("GROUP", "example-group")
    limit = int(os.environ.get("COUNT", "0"))  # 0 = forever
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group,
                                auto_offset_reset="earliest", enable_auto_commit=False)
    await consumer.start()
    try:
        seen = 0
        async for msg in consumer:
            event = json.loads(msg.value)
            print(f"consumed n={event['n']} from {msg.topic}-{msg.partition}@{msg.offset}", flush=True)
            await consumer.commit()
            seen += 1
            if limit and seen >= limit:
                break
    finally:
        await consumer.stop()


if __name__ == "__main__":
    asyncio.run(main())
