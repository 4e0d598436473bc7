"""Example consumer: reads $TOPIC in group $GROUP on $BOOTSTRAP and commits as it goes (aiokafka);
a secured listener's settings come from the environment too (client_settings.py)."""

from __future__ import annotations

import asyncio
import json
import os

from aiokafka import AIOKafkaConsumer
from client_settings import connection_settings


async def main() -> None:
    topic = os.environ.get("TOPIC", "example-events")
    group = os.environ.get("GROUP", "example-group")
    limit = int(os.environ.get("COUNT", "0"))  # 0 = forever
    consumer = AIOKafkaConsumer(topic, group_id=group, auto_offset_reset="earliest",
                                enable_auto_commit=False, **connection_settings())
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
