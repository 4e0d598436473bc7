"""Share groups (KIP-932) against a classic group, same client (confluent-kafka), same topic.

Each run: a fresh 3-partition topic with 30,000 records of 100 bytes (produced in batches of
about 100 records). Then, on that topic, a fresh share group of 3 ``ShareConsumer``s (implicit
acknowledgement: each poll ACCEPTs the records of the previous one; ``max.poll.records`` 500,
group config ``share.auto.offset.reset=earliest``) and a fresh classic group of 3 ``Consumer``s
(``auto.offset.reset=earliest``, auto commit), one thread per consumer polling in a loop. The
clock starts when the consumers subscribe and stops when the group has received every record
(records/s = 30,000 / that time), so it includes joining the group. The share group's records
are handed out under acquisition locks and acknowledged record by record; the classic group
reads offsets. Ratio row: share/classic, pair by pair in the same run. Targets without
ShareFetch (API 78) in ApiVersions are n/a.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

from bench.figures.base import Context, Figure, Row
from bench.figures.wire import FETCH, FIND_COORDINATOR, PRODUCE, WireClient

SHARE_GROUP_HEARTBEAT, SHARE_FETCH = 76, 78
RECORDS = 30_000
PARTITIONS = 3
CONSUMERS = 3
TIMEOUT = 120.0


def produce(bootstrap: str, topic: str) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5,
                         "batch.num.messages": 100, "log_level": 3})
    value = b"x" * 100
    for i in range(RECORDS):
        producer.produce(topic, value=value, partition=i % PARTITIONS)
        if i % 10_000 == 0:
            producer.poll(0)
    producer.flush(60)


def set_earliest(bootstrap: str, group: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest",
                    incremental_operation=AlterConfigOpType.SET)])
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})
    admin.incremental_alter_configs([resource])[resource].result(30)


def consume(make: Any, topic: str) -> float:
    """Seconds from subscribe until the consumers made by ``make(i)`` received every record."""
    consumers = [make(i) for i in range(CONSUMERS)]
    received = [0] * CONSUMERS
    done = threading.Event()
    errors: list[BaseException] = []

    def loop(i: int) -> None:
        c = consumers[i]
        try:
            c.subscribe([topic])
            while not done.is_set():
                got = c.poll(0.1) if hasattr(c, "acknowledge") else c.consume(500, 0.1)
                received[i] += sum(1 for m in got if not m.error())
                if sum(received) >= RECORDS:
                    done.set()
        except BaseException as exc:  # noqa: BLE001 - reported by the measuring thread
            errors.append(exc)
            done.set()

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(CONSUMERS)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    finished = done.wait(TIMEOUT)
    elapsed = time.perf_counter() - t0
    done.set()
    for t in threads:
        t.join(30)
    for c in consumers:
        c.close()
    if errors:
        raise RuntimeError(f"consumer failed: {errors[0]}")
    if not finished:
        raise TimeoutError(f"{sum(received)} of {RECORDS} records after {TIMEOUT:.0f}s")
    return elapsed


class Share(Figure):
    def measure(self, ctx: Context) -> dict[str, float]:
        from confluent_kafka import Consumer, ShareConsumer

        assert ctx.server is not None
        bootstrap = ctx.server.bootstrap
        topic = f"share-{uuid.uuid4().hex[:8]}"
        with WireClient(bootstrap) as client:
            client.create_topic(topic, PARTITIONS)
        produce(bootstrap, topic)
        share_group, classic_group = f"{topic}-share", f"{topic}-classic"
        set_earliest(bootstrap, share_group)
        share_s = consume(lambda i: ShareConsumer({
            "bootstrap.servers": bootstrap, "group.id": share_group, "client.id": f"s{i}",
            "max.poll.records": 500, "log_level": 3}), topic)
        classic_s = consume(lambda i: Consumer({
            "bootstrap.servers": bootstrap, "group.id": classic_group, "client.id": f"c{i}",
            "auto.offset.reset": "earliest", "log_level": 3}), topic)
        share, classic = RECORDS / share_s, RECORDS / classic_s
        return {"share": share, "classic": classic, "ratio": share / classic}


FIGURES = [Share(
    name="share", title="Share group vs classic group, 3 consumers each (confluent-kafka)",
    rows=(Row("share", "share group of 3 ShareConsumers: records/s (30k records, 3 partitions, "
                       "from subscribe)", "/s", higher_is_better=True),
          Row("classic", "classic group of 3 Consumers, same topic: records/s", "/s",
              higher_is_better=True),
          Row("ratio", "share/classic (same run)", "×", higher_is_better=True)),
    needs=(PRODUCE, FETCH, FIND_COORDINATOR, SHARE_GROUP_HEARTBEAT, SHARE_FETCH),
)]
