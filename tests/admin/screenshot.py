"""The README's screenshot of a group page, taken by headless Chromium.

    python -m tests.admin.screenshot [docs/console-group.png]

A broker with its admin server, a topic with records, a group of two aiokafka consumers that
committed part of what they read, and a third that joined and left: then Chromium loads the
group page, lets its script fill the live timeline, and saves the PNG.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from kafkette.broker.testing import ThreadedBroker, test_config
from tests.groups.helpers import FAST_GROUP, wait_until

from .browser import screenshot

OUT = Path(__file__).resolve().parents[2] / "docs" / "console-group.png"
TOPIC, GROUP = "payments", "fraud-check"


def consumer(bootstrap: str, client_id: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP,
                            client_id=client_id, enable_auto_commit=False,
                            auto_offset_reset="earliest", **FAST_GROUP)


async def _scene(broker: ThreadedBroker, out: Path) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
    await producer.start()
    for i in range(40):
        await producer.send(TOPIC, b'{"amount": %d}' % (i * 7), key=b"card-%d" % (i % 5),
                            partition=i % 4)
    await producer.flush()
    await producer.stop()
    members = [consumer(broker.bootstrap, name) for name in ("scorer-a", "scorer-b")]
    for c in members:
        await c.start()
    extra = consumer(broker.bootstrap, "scorer-c")
    await extra.start()
    await wait_until(lambda: all(c.assignment() for c in [*members, extra]))
    await extra.stop()  # leaves: one more rebalance on the timeline
    await wait_until(lambda: sum(len(c.assignment()) for c in members) == 4)
    for c in members:
        await c.commit({tp: OffsetAndMetadata(3 + 2 * tp.partition, "") for tp in c.assignment()
                        if isinstance(tp, TopicPartition)})
    try:
        url = f"{broker.broker.admin.url}/groups/{GROUP}"
        await asyncio.to_thread(screenshot, url, str(out), 1280, 1100)
    finally:
        for c in members:
            await c.stop()


def take(out: Path = OUT) -> Path:
    with tempfile.TemporaryDirectory(prefix="kafkette-shot-") as tmp:
        config = test_config(tmp, **{"admin.listener": "127.0.0.1:0", "num.partitions": 4})
        with ThreadedBroker(config) as broker:
            asyncio.run(_scene(broker, out))
    return out


if __name__ == "__main__":
    print(take(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT))
