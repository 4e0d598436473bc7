"""Example producer: sends one JSON event a second to $TOPIC on $BOOTSTRAP (aiokafka); a secured
listener's settings come from the environment too (client_settings.py)."""

from __future__ import annotations

import asyncio
import json
import os
import time

from aiokafka import AIOKafkaProducer
from client_settings import connection_settings


async def main() -> None:
    topic = os.environ.get("TOPIC", "example-events")
    count = int(os.environ.get("COUNT", "0"))  # 0 = forever
    producer = AIOKafkaProducer(acks="all", **connection_settings())
    await producer.start()
    try:
        n = 0
        while count == 0 or n < count:
            event = {"n": n, "at": time.time()}
            md = await producer.send_and_wait(topic, json.dumps(event).encode(), key=str(n).encode())
            print(f"produced n={n} to {md.topic}-{md.partition}@{md.offset}", flush=True)
            n += 1
            if count == 0:
                await asyncio.sleep(1)
    finally:
        await producer.stop()


if __name__ == "__main__":
    asyncio.run(main())
