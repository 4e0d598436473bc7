"""One Python Kafka client driven by arguments, speaking JSON lines (the compat programs' contract).

    python -m tests.compat.programs.pyclient CLIENT metadata BOOTSTRAP TOPIC
    python -m tests.compat.programs.pyclient CLIENT produce  BOOTSTRAP TOPIC COUNT PREFIX PARTITIONS
    python -m tests.compat.programs.pyclient CLIENT consume  BOOTSTRAP TOPIC COUNT
    python -m tests.compat.programs.pyclient CLIENT member   BOOTSTRAP TOPIC GROUP SESSION_MS

CLIENT is aiokafka, kafka-python or confluent-kafka. Output events (one JSON object a line):
metadata {partitions, brokers}, produced {partition, offset}, record {partition, offset, key,
value}, assigned {partitions}, committed {offsets}, done. A member reads commands on stdin:
``commit`` (commit the consumed positions, synchronously) and ``close`` (leave the group).
The Java and kafkajs programs in this folder follow the same contract.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import queue
import sys
import threading
from typing import Any

POLL_S = 0.1
# kafka-python 3.0.12 can lose a join when poll()'s timeout expires while its SyncGroup is in
# flight (it logs "timeout in ensure_active_group; returning early" and never completes the
# generation; the broker's responses are correct), so its members poll with a longer timeout.
KAFKA_PYTHON_POLL_MS = 1000


def emit(event: str, **fields: Any) -> None:
    print(json.dumps({"event": event, **fields}), flush=True)


def stdin_commands() -> queue.Queue[str]:
    commands: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in sys.stdin:
            commands.put(line.strip())
        commands.put("close")  # stdin closed: the test went away

    threading.Thread(target=read, daemon=True).start()
    return commands


def _text(raw: bytes | None) -> str | None:
    return None if raw is None else raw.decode()


def group_settings(session_ms: int) -> dict[str, int]:
    return {"session": session_ms, "heartbeat": max(session_ms // 5, 50), "rebalance": 10_000}


def member_config(bootstrap: str, group: str, t: dict[str, int]) -> dict[str, Any]:
    """Group-member settings kafka-python and aiokafka spell alike."""
    return dict(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                auto_offset_reset="earliest", session_timeout_ms=t["session"],
                heartbeat_interval_ms=t["heartbeat"], max_poll_interval_ms=t["rebalance"])


def emit_records(batch: dict[Any, list[Any]]) -> int:
    """Emit a poll's records ({TopicPartition: [record]}, kafka-python and aiokafka); how many."""
    n = 0
    for records in batch.values():
        for r in records:
            emit("record", partition=r.partition, offset=r.offset, key=_text(r.key),
                 value=_text(r.value))
            n += 1
    return n


# kafka-python ---------------------------------------------------------------------------------

def kafka_python(cmd: str, bootstrap: str, topic: str, rest: list[str]) -> None:
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    if cmd == "metadata":
        consumer = KafkaConsumer(bootstrap_servers=bootstrap)
        parts = consumer.partitions_for_topic(topic) or set()
        brokers = [[b.node_id, b.host, b.port] for b in consumer._client.cluster.brokers()]
        emit("metadata", partitions=len(parts), brokers=brokers)
        consumer.close()
    elif cmd == "produce":
        count, prefix, partitions = int(rest[0]), rest[1], int(rest[2])
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        futures = [producer.send(topic, key=f"{prefix}-{i}".encode(), value=f"{prefix}-{i}".encode(),
                                 partition=i % partitions) for i in range(count)]
        for fut in futures:
            md = fut.get(timeout=30)
            emit("produced", partition=md.partition, offset=md.offset)
        producer.close()
    elif cmd == "consume":
        count = int(rest[0])
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                 auto_offset_reset="earliest")
        parts = consumer.partitions_for_topic(topic) or set()
        consumer.assign([TopicPartition(topic, p) for p in sorted(parts)])
        seen = 0
        while seen < count:
            seen += emit_records(consumer.poll(timeout_ms=200))
        consumer.close()
    elif cmd == "member":
        group, t = rest[0], group_settings(int(rest[1]))
        consumer = KafkaConsumer(**member_config(bootstrap, group, t),
                                 client_id=f"kafka-python-{group}")

        class Listener(ConsumerRebalanceListener):
            def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            def on_partitions_assigned(self, assigned: Any) -> None:
                emit("assigned", partitions=sorted(tp.partition for tp in consumer.assignment()))

        # Fetch the topic's metadata first: a leader that assigns before it knows the topic
        # assigns nothing and rejoins at once, one more chance for the race described above.
        consumer.partitions_for_topic(topic)
        consumer.subscribe([topic], listener=Listener())
        commands = stdin_commands()
        while True:
            emit_records(consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS))
            while not commands.empty():
                command = commands.get()
                if command == "commit":
                    consumer.commit()
                    emit("committed", offsets={tp.partition: consumer.position(tp)
                                               for tp in consumer.assignment()})
                elif command == "close":
                    consumer.close()
                    emit("done")
                    return
    emit("done")


# confluent-kafka ------------------------------------------------------------------------------

def confluent(cmd: str, bootstrap: str, topic: str, rest: list[str]) -> None:
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient

    if cmd == "metadata":
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(topic, timeout=10)
        brokers = [[b.id, b.host, b.port] for b in md.brokers.values()]
        emit("metadata", partitions=len(md.topics[topic].partitions), brokers=brokers)
    elif cmd == "produce":
        count, prefix, partitions = int(rest[0]), rest[1], int(rest[2])
        producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        results: list[tuple[int, int]] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                raise RuntimeError(f"delivery failed: {err}")
            results.append((msg.partition(), msg.offset()))

        for i in range(count):
            value = f"{prefix}-{i}".encode()
            producer.produce(topic, key=value, value=value, partition=i % partitions,
                             on_delivery=delivered)
        if producer.flush(30) != 0:
            raise RuntimeError("messages left undelivered")
        for partition, offset in results:
            emit("produced", partition=partition, offset=offset)
    elif cmd == "consume":
        count = int(rest[0])
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compat-assign",
                             "enable.auto.commit": False})
        md = consumer.list_topics(topic, timeout=10)
        consumer.assign([TopicPartition(topic, p, -2) for p in sorted(md.topics[topic].partitions)])
        seen = 0
        while seen < count:
            msg = consumer.poll(0.2)
            if msg is None or msg.error():
                continue
            emit("record", partition=msg.partition(), offset=msg.offset(), key=_text(msg.key()),
                 value=_text(msg.value()))
            seen += 1
        consumer.close()
    elif cmd == "member":
        group, t = rest[0], group_settings(int(rest[1]))
        consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
            "auto.offset.reset": "earliest", "session.timeout.ms": t["session"],
            "heartbeat.interval.ms": t["heartbeat"], "max.poll.interval.ms": t["rebalance"],
            "client.id": f"confluent-{group}"})

        def on_assign(c: Any, partitions: list) -> None:
            emit("assigned", partitions=sorted(tp.partition for tp in partitions))

        consumer.subscribe([topic], on_assign=on_assign)
        commands = stdin_commands()
        while True:
            msg = consumer.poll(POLL_S)
            if msg is not None and not msg.error():
                emit("record", partition=msg.partition(), offset=msg.offset(),
                     key=_text(msg.key()), value=_text(msg.value()))
            while not commands.empty():
                command = commands.get()
                if command == "commit":
                    done = consumer.commit(asynchronous=False) or []
                    emit("committed", offsets={tp.partition: tp.offset for tp in done})
                elif command == "close":
                    consumer.close()
                    emit("done")
                    return
    emit("done")


# aiokafka -------------------------------------------------------------------------------------

async def aiokafka_main(cmd: str, bootstrap: str, topic: str, rest: list[str]) -> None:
    from aiokafka import (
        AIOKafkaConsumer,
        AIOKafkaProducer,
        ConsumerRebalanceListener,
        TopicPartition,
    )

    if cmd == "metadata":
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
        await consumer.start()
        try:
            parts = consumer.partitions_for_topic(topic)
            if parts is None:
                await consumer._client.force_metadata_update()
                await consumer._client._wait_on_metadata(topic)
                parts = consumer.partitions_for_topic(topic)
            brokers = [[b.nodeId, b.host, b.port] for b in consumer._client.cluster.brokers()]
            emit("metadata", partitions=len(parts or ()), brokers=brokers)
        finally:
            await consumer.stop()
    elif cmd == "produce":
        count, prefix, partitions = int(rest[0]), rest[1], int(rest[2])
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        await producer.start()
        try:
            futures = [await producer.send(topic, key=f"{prefix}-{i}".encode(),
                                           value=f"{prefix}-{i}".encode(), partition=i % partitions)
                       for i in range(count)]
            for fut in futures:
                md = await fut
                emit("produced", partition=md.partition, offset=md.offset)
        finally:
            await producer.stop()
    elif cmd == "consume":
        count = int(rest[0])
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        await consumer.start()
        try:
            await consumer._client._wait_on_metadata(topic)
            parts = consumer.partitions_for_topic(topic) or set()
            consumer.assign([TopicPartition(topic, p) for p in sorted(parts)])
            seen = 0
            while seen < count:
                seen += emit_records(await consumer.getmany(timeout_ms=200))
        finally:
            await consumer.stop()
    elif cmd == "member":
        group, t = rest[0], group_settings(int(rest[1]))
        consumer = AIOKafkaConsumer(**member_config(bootstrap, group, t),
                                    rebalance_timeout_ms=t["rebalance"], client_id=f"aiokafka-{group}")

        class Listener(ConsumerRebalanceListener):
            async def on_partitions_revoked(self, revoked: Any) -> None:
                pass

            async def on_partitions_assigned(self, assigned: Any) -> None:
                emit("assigned", partitions=sorted(tp.partition for tp in assigned))

        await consumer.start()
        consumer.subscribe([topic], listener=Listener())
        commands = stdin_commands()
        try:
            while True:
                emit_records(await consumer.getmany(timeout_ms=int(POLL_S * 1000)))
                while not commands.empty():
                    command = commands.get()
                    if command == "commit":
                        await consumer.commit()
                        emit("committed", offsets={tp.partition: await consumer.position(tp)
                                                   for tp in consumer.assignment()})
                    elif command == "close":
                        return
        finally:
            await consumer.stop()
            emit("done")
    emit("done")


def main(argv: list[str]) -> None:
    # Client logs go to stderr, which the tests show when a scenario fails.
    logging.basicConfig(level=os.environ.get("KAFKETTE_CLIENT_LOG", "WARNING").upper(),
                        stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    client, cmd, bootstrap, topic, *rest = argv
    if client == "aiokafka":
        asyncio.run(aiokafka_main(cmd, bootstrap, topic, rest))
    elif client == "kafka-python":
        kafka_python(cmd, bootstrap, topic, rest)
    elif client == "confluent-kafka":
        confluent(cmd, bootstrap, topic, rest)
    else:
        raise SystemExit(f"unknown client {client}")


if __name__ == "__main__":
    main(sys.argv[1:])
