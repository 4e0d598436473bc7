"""The request quota on every API and the controller mutation quota with real clients: a client
id with a tiny request_percentage gets throttle_time_ms on Metadata and DescribeConfigs and its
connection is held for it; controller_mutation_rate (set with ``kafkette configs``) refuses the
CreateTopics that comes once the bucket is empty with THROTTLING_QUOTA_EXCEEDED, which
confluent-kafka's AdminClient reports."""

from __future__ import annotations

import io
import time
from datetime import timedelta

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kio.schema.errors import ErrorCode

from kafkette.broker.cli.client_quota_configs import run as configs_run
from kafkette.protocol.codec import request_type
from tests.wire import WireClient, entity

# Two one-second samples: a request-time throttle is at most one second.
CONFIG = {"quota.window.num": "2", "quota.window.size.seconds": "1", "num.partitions": "1"}


def configs(bootstrap: str, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = configs_run(["--bootstrap-server", bootstrap, *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def set_client_quota(bootstrap: str, client_id: str, setting: str) -> None:
    assert configs(bootstrap, "--alter", "--entity-type", "clients", "--entity-name", client_id,
                   "--add-config", setting) == (
        0, f"Completed updating config for client {client_id}.\n", "")


@pytest.fixture
def broker(kafka_broker_factory):
    return kafka_broker_factory(**CONFIG)


def _metadata(w: WireClient):
    return w.request(3, 12, topics=None, allow_auto_topic_creation=False,
                     include_topic_authorized_operations=False)


def _describe_configs(w: WireClient):
    cls = request_type(32, 4)
    return w.request(32, 4, resources=(entity(cls, "resources", resource_type=4,
                                              resource_name="1", configuration_keys=None),),
                     include_synonyms=False, include_documentation=False)


def test_request_percentage_throttles_every_api(broker) -> None:
    bootstrap = broker.bootstrap
    set_client_quota(bootstrap, "slow-admin", "request_percentage=0.001")
    with WireClient(bootstrap, client_id="slow-admin") as w:
        first = _metadata(w)
        throttle = first.throttle_time
        # 10 µs a second is far less than one Metadata takes: throttled up to one window
        assert timedelta(0) < throttle <= timedelta(seconds=1), throttle
        sent = time.monotonic()
        described = _describe_configs(w)  # read only once the throttle time is over
        waited = time.monotonic() - sent
        assert waited >= throttle.total_seconds() * 0.9, (waited, throttle)
        assert described.results[0].error_code == ErrorCode.none
        assert described.throttle_time > timedelta(0)
    with WireClient(bootstrap, client_id="free-admin") as w:  # no quota for that client id
        assert _metadata(w).throttle_time == timedelta(0)
        assert _describe_configs(w).throttle_time == timedelta(0)

    # confluent-kafka's AdminClient is told too (its throttle callback)
    throttles: list[float] = []
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "slow-admin",
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    admin.describe_configs([ConfigResource("broker", "1")])[
        ConfigResource("broker", "1")].result(30)
    admin.list_topics(timeout=30)
    deadline = time.monotonic() + 10
    while not throttles and time.monotonic() < deadline:
        admin.poll(0.1)
    assert throttles and max(throttles) > 0


def _create_topics(w: WireClient, version: int, *topics: tuple[str, int]):
    cls = request_type(19, version)
    return w.request(19, version, topics=tuple(
        entity(cls, "topics", name=name, num_partitions=count, replication_factor=1,
               assignments=(), configs=()) for name, count in topics),
        timeout=timedelta(seconds=10), validate_only=False)


def test_controller_mutation_rate_refuses_once_the_bucket_is_empty(broker) -> None:
    bootstrap = broker.bootstrap
    set_client_quota(bootstrap, "mutator", "controller_mutation_rate=1")
    # the bucket holds 11 one-second windows at 1 partition a second: 11 partitions
    with WireClient(bootstrap, client_id="mutator") as w:
        first = _create_topics(w, 7, ("m1", 10))
        assert [(t.error_code, t.num_partitions) for t in first.topics] == [
            (ErrorCode.none, 10)]
        assert first.throttle_time == timedelta(0)
        # 1 token left: accepted (the bucket goes to -9), the next topic in it refused
        second = _create_topics(w, 7, ("m2", 10), ("m3", 1))
        assert [(t.name, t.error_code) for t in second.topics] == [
            ("m2", ErrorCode.none), ("m3", ErrorCode.throttling_quota_exceeded)]
        refused = second.topics[1]
        assert (refused.error_message, refused.num_partitions, refused.replication_factor) == (
            None, -1, -1)
        # the time the bucket needs to get back to zero: about 9 s
        assert timedelta(seconds=8) < second.throttle_time <= timedelta(seconds=9)
    # CreatePartitions v3 and DeleteTopics v6 are strict as well (each on a new connection: a
    # throttled one is muted for the throttle time)
    with WireClient(bootstrap, client_id="mutator") as w:
        cls = request_type(37, 3)
        added = w.request(37, 3, topics=(entity(cls, "topics", name="m1", count=12,
                                                assignments=None),),
                          timeout=timedelta(seconds=10), validate_only=False)
        assert [(r.name, r.error_code, r.error_message) for r in added.results] == [
            ("m1", ErrorCode.throttling_quota_exceeded, None)]
        assert added.throttle_time > timedelta(seconds=8)
    with WireClient(bootstrap, client_id="mutator") as w:
        cls = request_type(20, 6)
        deleted = w.request(20, 6, topics=(entity(cls, "topics", name="m1", topic_id=None),),
                            timeout=timedelta(seconds=10))
        assert [(r.name, r.error_code, r.error_message) for r in deleted.responses] == [
            ("m1", ErrorCode.throttling_quota_exceeded, None)]

    # confluent-kafka's AdminClient speaks CreateTopics v4 and CreatePartitions v0-1, before
    # KIP-599: its requests are accepted and throttled (its throttle callback) instead
    set_client_quota(bootstrap, "confluent-mutator", "controller_mutation_rate=1")
    throttles: list[float] = []
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "confluent-mutator",
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    admin.create_topics([NewTopic("c1", 12, 1)])["c1"].result(30)  # 11 tokens: -1, 1 s
    deadline = time.monotonic() + 10
    while not throttles and time.monotonic() < deadline:
        admin.poll(0.1)
    assert throttles and 0.5 < max(throttles) <= 1.0, throttles

    # a client id without the quota is not held back
    other = AdminClient({"bootstrap.servers": bootstrap, "client.id": "free"})
    other.create_topics([NewTopic("m5", 20, 1)])["m5"].result(30)
    other.delete_topics(["m5"])["m5"].result(30)


def test_the_java_admin_client_reports_throttling_quota_exceeded(broker) -> None:
    """kafka-clients speaks the KIP-599 versions: its futures fail with Kafka's
    ThrottlingQuotaExceededException and message, and the throttle time."""
    import json
    import subprocess

    from tests.tools import ensure_java_client

    classpath, reason = ensure_java_client()
    if classpath is None:
        pytest.skip(reason)
    set_client_quota(broker.bootstrap, "java-mutator", "controller_mutation_rate=1")
    done = subprocess.run(["java", "-cp", classpath, "KafketteMutations", broker.bootstrap,
                           "java-mutator"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    refused = "ThrottlingQuotaExceededException: The throttling quota has been exceeded."
    assert [(e["event"], e["topic"], e.get("error")) for e in events] == [
        ("created", "j1", None), ("created", "j2", None), ("refused", "j3", refused)]
    assert all(8000 < e["throttle_ms"] <= 9000 for e in events if e["event"] == "refused")


def test_older_versions_are_throttled_instead(broker) -> None:
    bootstrap = broker.bootstrap
    set_client_quota(bootstrap, "old-mutator", "controller_mutation_rate=1")
    with WireClient(bootstrap, client_id="old-mutator") as w:
        # CreateTopics v5 (before KIP-599's v6): accepted, the answer throttled
        answer = _create_topics(w, 5, ("o1", 12), ("o2", 2))
        assert [t.error_code for t in answer.topics] == [ErrorCode.none, ErrorCode.none]
        # 14 partitions from a bucket of 11: -3 tokens, 3 s
        assert timedelta(seconds=2.5) < answer.throttle_time <= timedelta(seconds=3)
        sent = time.monotonic()
        _metadata(w)  # the connection is muted for the throttle time
        assert time.monotonic() - sent >= answer.throttle_time.total_seconds() * 0.9


def test_a_consumer_group_member_under_request_percentage_still_consumes(kafka_broker_factory) \
        -> None:
    """Every group API of a throttled member (a parked JoinGroup, SyncGroup, heartbeats,
    OffsetCommit) answers with its throttle time; the member joins, consumes and commits."""
    from confluent_kafka import Consumer, Producer

    broker = kafka_broker_factory(**CONFIG, **{"group.initial.rebalance.delay.ms": "0"})
    bootstrap = broker.bootstrap
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(10):
        producer.produce("grouped", str(i).encode())
    producer.flush(30)
    set_client_quota(bootstrap, "slow-member", "request_percentage=0.1")  # 1 ms/s
    throttles: list[float] = []
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "slow-group",
                         "client.id": "slow-member", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "session.timeout.ms": 10000,
                         "heartbeat.interval.ms": 200,
                         "throttle_cb": lambda event: throttles.append(event.throttle_time)})
    consumer.subscribe(["grouped"])
    got: list[bytes] = []
    deadline = time.monotonic() + 40
    while len(got) < 10 and time.monotonic() < deadline:
        msg = consumer.poll(0.2)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    assert sorted(got) == sorted(str(i).encode() for i in range(10))
    consumer.commit(asynchronous=False)
    committed = consumer.committed(consumer.assignment(), timeout=30)
    consumer.poll(0.5)  # serves the throttle callbacks of the last answers
    consumer.close()
    assert [tp.offset for tp in committed] == [10]
    assert throttles and max(throttles) > 0
