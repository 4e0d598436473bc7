"""Example producer: sends one JSON event a second to $TOPIC on $BOOTSTRAP (aiokafka)."""

from __future__ import annotations

import asyncio
import json
import os
import time

from aiokafka import AIOKafkaProducer


async def main() -> None:
    bootstrap = os.environ.get("BOOTSTRAP", "127.0.0.1:9092")
    topic = os.environ.get("TOPIC", "example-events")
    count = int(os.environ.get("COUNT", "0"))  # 0 = forever
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
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
