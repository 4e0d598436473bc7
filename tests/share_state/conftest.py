"""A broker with share state on 3 partitions and the topic ``jobs``: ten records on partition 0,
one on partition 1. Module-scoped: the tests of a file share one, each file gets its own."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator

import pytest

from kafkette.broker.testing import ThreadedBroker
from kafkette.broker.testing import test_config as broker_config


@pytest.fixture(scope="module")
def broker() -> Iterator[ThreadedBroker]:
    from confluent_kafka import Producer

    with tempfile.TemporaryDirectory(prefix="kafkette-share-state-") as tmp:
        runner = ThreadedBroker(broker_config(tmp, **{
            "share.coordinator.state.topic.num.partitions": 3,
            "offsets.topic.num.partitions": 2}))
        with runner:
            runner.run(runner.broker.logs.create_topic("jobs", 2))
            producer = Producer({"bootstrap.servers": runner.bootstrap, "linger.ms": 0})
            for i in range(10):
                producer.produce("jobs", value=f"job-{i}".encode(), partition=0)
            producer.produce("jobs", value=b"x", partition=1)
            producer.flush(10)
            yield runner
