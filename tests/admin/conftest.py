"""A broker with its admin server on a free port, and a consumer group to look at."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.structs import OffsetAndMetadata

from kafkette.broker.testing import ThreadedBroker
from tests.groups.helpers import FAST_GROUP, wait_until

TOPIC, GROUP = "orders", "order-audit"


def get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.read()


def get_json(url: str) -> Any:
    return json.loads(get(url))


@dataclass
class LiveGroup:
    broker: ThreadedBroker
    url: str  # the admin server
    consumers: list[AIOKafkaConsumer]
    end_offsets: dict[int, int]  # partition -> log-end offset after producing
    committed: dict[int, int]  # partition -> offset the group committed
    produced_value: bytes


async def _produce(bootstrap: str, counts: dict[int, int]) -> tuple[dict[int, int], bytes]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
    await producer.start()
    ends: dict[int, int] = {}
    try:
        for partition, n in counts.items():
            for i in range(n):
                meta = await producer.send_and_wait(
                    TOPIC, f"order-{partition}-{i}".encode(), key=f"customer-{i}".encode(),
                    partition=partition, headers=[("source", b"checkout"), ("raw", b"\x00\xff")])
                ends[partition] = meta.offset + 1
    finally:
        await producer.stop()
    return ends, f"order-0-{counts[0] - 1}".encode()


def group_consumer(bootstrap: str) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=GROUP,
                            enable_auto_commit=False, auto_offset_reset="earliest",
                            client_id="audit-client", **FAST_GROUP)


@pytest.fixture
async def live_group(kafka_broker_factory: Callable[..., ThreadedBroker]
                     ) -> AsyncIterator[LiveGroup]:
    """A Stable one-member group on a 2-partition topic that committed part of partition 0
    and all of partition 1 (so its lag is ``end_offsets[p] - committed[p]``)."""
    broker = kafka_broker_factory(**{"admin.listener": "127.0.0.1:0", "num.partitions": 2})
    assert broker.broker is not None and broker.broker.admin is not None
    ends, value = await _produce(broker.bootstrap, {0: 7, 1: 4})
    consumer = group_consumer(broker.bootstrap)
    await consumer.start()
    try:
        await wait_until(lambda: len(consumer.assignment()) == 2)
        committed = {0: 2, 1: ends[1]}
        await consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, "")
                               for p, o in committed.items()})
        yield LiveGroup(broker, broker.broker.admin.url, [consumer], ends, committed, value)
    finally:
        await consumer.stop()
