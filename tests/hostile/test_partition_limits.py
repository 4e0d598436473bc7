"""CreateTopics and CreatePartitions are bounded per request, and creation never stalls others.

Kafka 4.x (KAFKA-17870, ReplicationControlManager.validateTotalNumberOfPartitions) refuses a
CreateTopics request whose topics add up to more than 10,000 partitions: every topic of it
answers POLICY_VIOLATION "Excessively large number of partitions per request.". A CreatePartitions
request adding more than 10,000 partitions is refused the same way with INVALID_PARTITIONS.
Under the cap, a big creation runs while a healthy client keeps being answered within a second.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

from kio.schema.errors import ErrorCode

from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from tests.dataplane.test_wire import create_topic
from tests.hostile.healthy import HealthyClient
from tests.wire import WireClient, entity

CREATE, CREATE_PARTITIONS = 19, 37
LIMIT = 10_000
EXCESSIVE = "Excessively large number of partitions per request."


def create_topics(w: WireClient, topics: list[tuple[str, int]], validate_only: bool = False):
    cls = request_type(CREATE, 7)
    request = tuple(entity(cls, "topics", name=name, num_partitions=count, replication_factor=-1,
                           assignments=(), configs=()) for name, count in topics)
    return w.request(CREATE, 7, topics=request, timeout=timedelta(seconds=30),
                     validate_only=validate_only).topics


def create_partitions(w: WireClient, topics: list[tuple[str, int]]):
    cls = request_type(CREATE_PARTITIONS, 3)
    topic_cls = item_type(cls, "topics")
    request = tuple(make(topic_cls, name=name, count=count, assignments=None)
                    for name, count in topics)
    return w.request(CREATE_PARTITIONS, 3, topics=request, timeout=timedelta(seconds=30),
                     validate_only=False).results


def test_create_topics_over_the_partition_limit_is_refused_at_once(kafka_broker):
    with WireClient(kafka_broker.bootstrap) as w:
        for request in ([("huge", 2**31 - 1)], [("a", 5_000), ("b", 5_000), ("c", 1)],
                        [("d", -1), ("e", LIMIT)]):
            started = time.monotonic()
            results = create_topics(w, request)
            assert time.monotonic() - started < 0.5
            assert [(r.name, r.error_code, r.error_message) for r in results] == [
                (name, ErrorCode.policy_violation, EXCESSIVE) for name, _ in request]
        assert [r.error_code for r in create_topics(w, [("huge", 2**31 - 1)], True)] == [
            ErrorCode.policy_violation]
        # Exactly at the limit is allowed (validate only: nothing is created).
        assert [r.error_code for r in create_topics(w, [("f", LIMIT)], True)] == [ErrorCode.none]
        # Nothing of a refused request was created.
        names = {t.name for t in w.request(3, 12, topics=None, allow_auto_topic_creation=False,
                                           include_topic_authorized_operations=False).topics}
        assert not names & {"huge", "a", "b", "c", "d", "e", "f"}


def test_create_partitions_over_the_limit_is_refused_at_once(kafka_broker):
    with WireClient(kafka_broker.bootstrap) as w:
        assert create_topic(w, "grow", 1).error_code == ErrorCode.none
        assert create_topic(w, "grow2", 1).error_code == ErrorCode.none
        for request in ([("grow", 2**31 - 1)], [("grow", 6_000), ("grow2", 6_000)]):
            started = time.monotonic()
            results = create_partitions(w, request)
            assert time.monotonic() - started < 0.5
            assert [(r.name, r.error_code, r.error_message) for r in results] == [
                (name, ErrorCode.invalid_partitions, EXCESSIVE) for name, _ in request]
        assert [r.error_code for r in create_partitions(w, [("grow", 3)])] == [ErrorCode.none]


def test_a_big_allowed_creation_does_not_stall_other_clients(kafka_broker):
    with HealthyClient(kafka_broker.bootstrap) as healthy, \
            WireClient(kafka_broker.bootstrap, timeout=300) as w:
        healthy.start()
        healthy.wait_rounds(3)
        fds_before = len(os.listdir("/proc/self/fd"))
        started = time.monotonic()
        assert [r.error_code for r in create_topics(w, [("big", LIMIT)])] == [ErrorCode.none]
        took = time.monotonic() - started
        # Partitions nobody wrote to hold no file descriptor (the broker runs in this process).
        assert len(os.listdir("/proc/self/fd")) - fds_before < 100
        healthy.wait_rounds(3)
        assert [r.error_code for r in create_partitions(w, [("big", LIMIT + 2_000)])] == [
            ErrorCode.none]
        healthy.wait_rounds(3)
    assert healthy.errors == []
    assert healthy.max_wait < 1, f"healthy client waited {healthy.max_wait:.2f} s ({took:.1f} s)"
