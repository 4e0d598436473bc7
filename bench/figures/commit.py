"""Synchronous commit round trip with confluent-kafka (librdkafka).

One consumer of a "simple" group (no subscription, explicit offsets, generation -1) commits one
partition's offset with ``commit(offsets=..., asynchronous=False)``, 200 times in a row; a run's
value is the median of its 200 round trips. The coordinator is found and warmed up (20 commits)
before timing. Each commit must come back with no error. The kill -9 probe of the load figure
(bench.figures.load) runs first and marks targets whose acknowledged commits are not durable.
"""

from __future__ import annotations

import statistics
import time
import uuid

from bench.figures.base import Context, Figure, Row
from bench.figures.wire import FIND_COORDINATOR, OFFSET_COMMIT, fresh_topic

COMMITS = 200


class Commit(Figure):
    def prepare(self, server) -> str:
        from bench.figures.load import durability_note

        note = durability_note(server)
        if note:
            self.notes[server.target.name] = note
        return fresh_topic(server.bootstrap, "commit")

    def measure(self, ctx: Context) -> dict[str, float]:
        from confluent_kafka import Consumer, TopicPartition

        assert ctx.server is not None
        topic = ctx.state
        consumer = Consumer({"bootstrap.servers": ctx.server.bootstrap,
                             "group.id": f"commit-{uuid.uuid4().hex[:8]}",
                             "enable.auto.commit": False, "log_level": 3})
        try:
            samples = []
            for i in range(20 + COMMITS):
                t0 = time.perf_counter()
                done = consumer.commit(offsets=[TopicPartition(topic, 0, i + 1)],
                                       asynchronous=False)
                elapsed = time.perf_counter() - t0
                if done and done[0].error is not None:
                    raise RuntimeError(f"commit failed: {done[0].error}")
                if i >= 20:
                    samples.append(elapsed)
            return {"commit": statistics.median(samples)}
        finally:
            consumer.close()


FIGURES = [Commit(
    name="commit", title="Synchronous commit round trip (confluent-kafka)",
    rows=(Row("commit", "sync commit round trip (confluent-kafka)", "ms", 1000),),
    needs=(FIND_COORDINATOR, OFFSET_COMMIT),
)]
