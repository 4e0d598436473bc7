"""Transactions per second with confluent-kafka (librdkafka): the consume-transform-produce
unit of work, begin → produce 1 record → send_offsets_to_transaction → commit, by one producer
and by 8 producers at once (one transactional id each, a thread each: librdkafka releases the
GIL). A run's value is transactions over wall-clock seconds of TRANSACTIONS per producer, after
init_transactions and 5 untimed transactions."""

from __future__ import annotations

import threading
import time
import uuid

from bench.figures.base import Context, Figure, Row
from bench.figures.wire import WireClient

TRANSACTIONS = 100
WARMUP = 5
INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT = 22, 25, 26, 28


def _worker(bootstrap: str, topic: str, count: int, ready: threading.Barrier,
            errors: list[BaseException]) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition

    name = uuid.uuid4().hex[:8]
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"bench-{name}",
                         "linger.ms": 0, "log_level": 3})
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{name}",
                         "log_level": 3})
    try:
        producer.init_transactions(30)
        metadata = consumer.consumer_group_metadata()
        for i in range(WARMUP + count):
            if i == WARMUP:
                ready.wait()
            producer.begin_transaction()
            producer.produce(topic, b"x")
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, i + 1)], metadata, 30)
            producer.commit_transaction(30)
    except BaseException as exc:  # noqa: BLE001 - reported by measure()
        errors.append(exc)
        ready.abort()
    finally:
        consumer.close()
        producer.flush(5)


def transactions_per_second(bootstrap: str, topic: str, producers: int, count: int) -> float:
    errors: list[BaseException] = []
    ready = threading.Barrier(producers + 1)
    threads = [threading.Thread(target=_worker, args=(bootstrap, topic, count, ready, errors))
               for _ in range(producers)]
    for t in threads:
        t.start()
    ready.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"a transaction failed: {errors[0]!r}")
    return producers * count / elapsed


class Transactions(Figure):
    def prepare(self, server) -> str:
        topic = f"txn-{uuid.uuid4().hex[:8]}"
        with WireClient(server.bootstrap) as client:
            client.create_topic(topic, 1)
        return topic

    def measure(self, ctx: Context) -> dict[str, float]:
        assert ctx.server is not None
        return {f"txn{n}": transactions_per_second(ctx.server.bootstrap, ctx.state, n,
                                                   TRANSACTIONS)
                for n in (1, 8)}


FIGURES = [Transactions(
    name="transactions", title="Transactions per second (confluent-kafka)",
    rows=(Row("txn1", "begin, produce 1, send offsets, commit: 1 producer", "txn/s",
              higher_is_better=True),
          Row("txn8", "the same, 8 producers", "txn/s", higher_is_better=True)),
    needs=(INIT_PRODUCER_ID, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT),
)]
