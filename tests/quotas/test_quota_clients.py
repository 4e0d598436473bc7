"""Client quotas with real clients: a confluent-kafka producer under a producer_byte_rate quota
set with AlterClientQuotas is held to about that rate and told to back off (throttle_time_ms,
its throttle callback); removing the quota gives it its full speed back. DescribeClientQuotas
answers as Kafka's, and a consumer under consumer_byte_rate is throttled too."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kio.schema.errors import ErrorCode

from kafkette.protocol.codec import request_type
from tests.wire import WireClient, entity

RATE = 1_048_576  # 1 MiB/s
# Three one-second samples: the rate is measured over at least two seconds, so a test sees the
# quota bite after a 2 MiB burst instead of Kafka's default 10 MiB.
CONFIG = {"quota.window.num": "3", "quota.window.size.seconds": "1", "num.partitions": "1"}
VALUE = b"x" * 10_000


def alter_quota(bootstrap: str, entity_pairs: list[tuple[str, str | None]], key: str,
                value: float | None, validate_only: bool = False) -> tuple[ErrorCode, str | None]:
    cls = request_type(49, 1)
    entry = entity(cls, "entries", entity=(), ops=())
    entry_cls = type(entry)
    ops = (entity(entry_cls, "ops", key=key, value=value or 0.0, remove=value is None),)
    pairs = tuple(entity(entry_cls, "entity", entity_type=t, entity_name=n)
                  for t, n in entity_pairs)
    with WireClient(bootstrap) as w:
        r = w.request(49, 1, entries=(entity(cls, "entries", entity=pairs, ops=ops),),
                      validate_only=validate_only)
    [result] = r.entries
    return result.error_code, result.error_message


def describe_quotas(bootstrap: str, *components: tuple[str, int, str | None],
                    strict: bool = False) -> object:
    cls = request_type(48, 1)
    with WireClient(bootstrap) as w:
        return w.request(48, 1, strict=strict, components=tuple(
            entity(cls, "components", entity_type=t, match_type=m, match=n)
            for t, m, n in components))


def produce_for(bootstrap: str, topic: str, seconds: float) -> tuple[int, list[int]]:
    """Bytes acknowledged in ``seconds`` of producing as fast as the client may, and the
    throttle times the client was told."""
    throttles: list[int] = []
    acked = [0]

    def delivered(err, msg) -> None:
        if err is None:
            acked[0] += len(msg.value())

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": "throttled-app",
                         "linger.ms": 5, "batch.size": 262144, "acks": 1,
                         "throttle_cb": lambda event: throttles.append(
                             int(event.throttle_time * 1000))})
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            producer.produce(topic, VALUE, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
            continue
        producer.poll(0)
    producer.purge()
    producer.flush(10)
    return acked[0], throttles


@pytest.fixture
def broker(kafka_broker_factory):
    tb = kafka_broker_factory(**CONFIG)
    admin = AdminClient({"bootstrap.servers": tb.bootstrap})
    admin.create_topics([NewTopic("q", 1, 1)])["q"].result(30)
    return tb


def test_a_producer_is_held_to_its_quota_and_freed_when_it_is_removed(broker) -> None:
    bootstrap = broker.bootstrap
    assert alter_quota(bootstrap, [("client-id", "throttled-app")], "producer_byte_rate",
                       RATE) == (ErrorCode.none, None)
    seconds = 6
    sent, throttles = produce_for(bootstrap, "q", seconds)
    # at most the first 2 MiB (the sample windows' worth) and 1 MiB a second after it
    assert sent < RATE * (seconds + 2) * 1.25, sent
    assert sent > RATE * seconds * 0.5, sent
    assert throttles and max(throttles) > 0

    assert alter_quota(bootstrap, [("client-id", "throttled-app")], "producer_byte_rate",
                       None) == (ErrorCode.none, None)
    time.sleep(0.2)
    free, throttles_after = produce_for(bootstrap, "q", 3)
    assert not [t for t in throttles_after if t > 0]
    assert free > sent / seconds * 3 * 2, (free, sent)  # over twice the quota's pace


def test_a_consumer_is_throttled_by_consumer_byte_rate(broker) -> None:
    bootstrap = broker.bootstrap
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for _ in range(600):  # 6 MB
        producer.produce("q", VALUE)
        producer.poll(0)
    producer.flush(30)
    assert alter_quota(bootstrap, [("client-id", "slow-reader")], "consumer_byte_rate",
                       RATE) == (ErrorCode.none, None)
    throttles: list[float] = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "client.id":
                         "slow-reader", "auto.offset.reset": "earliest",
                         "fetch.max.bytes": 10_000_000,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    consumer.subscribe(["q"])
    got = 0
    started = time.monotonic()
    while got < 600 and time.monotonic() - started < 30:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got += 1
    elapsed = time.monotonic() - started
    consumer.close()
    assert got == 600
    # 6 MB at 1 MiB/s after the first 2 MiB: well over two seconds
    assert elapsed > 2.5, elapsed
    assert throttles and max(throttles) > 0


def test_describe_client_quotas_answers_as_kafka(broker) -> None:
    bootstrap = broker.bootstrap
    assert alter_quota(bootstrap, [("user", None)], "request_percentage", 50.0)[0] == \
        ErrorCode.none
    assert alter_quota(bootstrap, [("user", "alice"), ("client-id", "app")],
                       "consumer_byte_rate", 2048)[0] == ErrorCode.none
    assert alter_quota(bootstrap, [("client-id", "x")], "producer_byte_rate", 1.5) == (
        ErrorCode.invalid_request, "producer_byte_rate cannot be a fractional value.")
    assert alter_quota(bootstrap, [("client-id", "x")], "producer_byte_rate", 1024,
                       validate_only=True) == (ErrorCode.none, None)

    r = describe_quotas(bootstrap, ("user", 2, None))
    assert r.error_code == ErrorCode.none
    found = {tuple((e.entity_type, e.entity_name) for e in entry.entity):
             {v.key: v.value for v in entry.values} for entry in r.entries}
    assert found == {(("user", None),): {"request_percentage": 50.0},
                     (("client-id", "app"), ("user", "alice")): {"consumer_byte_rate": 2048.0}}
    r = describe_quotas(bootstrap, ("user", 1, None), strict=True)
    assert [[(e.entity_type, e.entity_name) for e in entry.entity] for entry in r.entries] == \
        [[("user", None)]]
    r = describe_quotas(bootstrap, ("ip", 2, None), ("user", 2, None))
    assert r.error_code == ErrorCode.invalid_request and r.entries is None
    assert "IP filter component should not be used" in r.error_message

    broker.restart()  # kept in log.dirs
    r = describe_quotas(broker.bootstrap, ("client-id", 0, "app"))
    assert len(r.entries) == 1


def test_the_java_admin_client_alters_and_describes_client_quotas(kafkette_broker) -> None:
    import json
    import subprocess

    from tests.tools import ensure_java_client

    classpath, reason = ensure_java_client()
    if classpath is None:
        pytest.skip(reason)
    done = subprocess.run(["java", "-cp", classpath, "KafketteQuotas", kafkette_broker.bootstrap],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert events[0] == {"event": "altered"}
    assert events[1] == {"event": "refused", "error": "InvalidRequestException: "
                         "producer_byte_rate cannot be a fractional value."}
    described: dict[str, list] = {}
    for e in events[2:]:
        described.setdefault(e["filter"], []).append((e["entity"], e["quotas"]))
    assert sorted(map(json.dumps, described["all"])) == sorted(map(json.dumps, [
        ({"client-id": "java-app"}, {"producer_byte_rate": 1048576.0}),
        ({"user": None}, {"request_percentage": 50.0}),
        ({"client-id": "java-app", "user": "alice"}, {"consumer_byte_rate": 2048.0})]))
    assert len(described["client java-app"]) == 2
    assert described["default user only"] == [({"user": None}, {"request_percentage": 50.0})]


def test_a_throttled_connection_is_not_read_for_the_throttle_time(broker) -> None:
    """The wire: the Produce over the quota answers at once with throttle_time_ms; the request
    sent right behind it on the same connection is answered only after that time."""
    from datetime import timedelta

    from kafkette.protocol.build import item_type, make
    from kafkette.protocol.records import build_batch

    bootstrap = broker.bootstrap
    assert alter_quota(bootstrap, [("client-id", "wire-app")], "producer_byte_rate",
                       100_000)[0] == ErrorCode.none
    cls = request_type(0, 9)
    topic_cls = item_type(cls, "topic_data")
    batch = build_batch([(None, b"x" * 400_000)], base_timestamp=0)
    produce = make(cls, transactional_id=None, acks=1, timeout=timedelta(seconds=10),
                   topic_data=(make(topic_cls, name="q", partition_data=(
                       make(item_type(topic_cls, "partition_data"), index=0, records=batch),)),))
    with WireClient(bootstrap, client_id="wire-app") as w:
        answer = w.request(0, 9, produce)
        assert answer.responses[0].partition_responses[0].error_code == ErrorCode.none
        # 400 kB over the minimum two windows of 100 kB/s: (200 - 100) / 100 * 2000 ms
        throttle_ms = answer.throttle_time.total_seconds() * 1000
        assert 1500 <= throttle_ms <= 2500, throttle_ms
        sent = time.monotonic()
        w.request(18, 3, client_software_name="t", client_software_version="1")
        waited_ms = (time.monotonic() - sent) * 1000
    assert waited_ms >= throttle_ms * 0.9, (waited_ms, throttle_ms)
    with WireClient(bootstrap, client_id="other-app") as w:  # another client is not held back
        sent = time.monotonic()
        w.request(18, 3, client_software_name="t", client_software_version="1")
        assert time.monotonic() - sent < 1
