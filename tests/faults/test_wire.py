"""Injected faults as seen on the wire (raw client): errors, delay, drop, throttle, node filter."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

from kio.schema.errors import ErrorCode

from kafkette.protocol.codec import request_type
from tests.wire import WireClient, entity

HEARTBEAT, PRODUCE, FETCH, METADATA, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH = 12, 0, 1, 3, 2, 8, 9


def heartbeat(w: WireClient) -> ErrorCode:
    return w.request(HEARTBEAT, 4, group_id="g", generation_id=1, member_id="m",
                     group_instance_id=None).error_code


def metadata(w: WireClient) -> object:
    return w.request(METADATA, 12, topics=(), allow_auto_topic_creation=False,
                     include_topic_authorized_operations=False)


def produce(w: WireClient, topic: str, partition: int, payload: bytes) -> object:
    from kafkette.protocol.records import build_batch

    cls = request_type(PRODUCE, 9)
    data = entity(cls, "topic_data", name=topic, partition_data=(
        entity(type(entity(cls, "topic_data", name=topic, partition_data=())), "partition_data",
               index=partition, records=build_batch([(None, payload)])),))
    return w.request(PRODUCE, 9, transactional_id=None, acks=-1, timeout=5000, topic_data=(data,))


def end_offset(w: WireClient, topic: str, partition: int) -> int:
    cls = request_type(LIST_OFFSETS, 7)
    topic_entity = entity(cls, "topics", name=topic, partitions=())
    part = entity(type(topic_entity), "partitions", partition_index=partition, timestamp=-1,
                  current_leader_epoch=-1)
    r = w.request(LIST_OFFSETS, 7, replica_id=-1, isolation_level=0,
                  topics=(entity(cls, "topics", name=topic, partitions=(part,)),))
    return int(r.topics[0].partitions[0].offset)


def test_the_next_n_requests_get_the_error_then_the_real_answer(kafka_broker):
    with WireClient(kafka_broker) as w:
        real = heartbeat(w)
        fault = kafka_broker.inject("Heartbeat", "NOT_COORDINATOR", count=2)
        assert fault["count"] == 2 and fault["error"] == "NOT_COORDINATOR"
        assert heartbeat(w) == ErrorCode.not_coordinator
        assert [f["count"] for f in kafka_broker.faults()] == [1]
        assert heartbeat(w) == ErrorCode.not_coordinator
        assert kafka_broker.faults() == []
        assert heartbeat(w) == real != ErrorCode.not_coordinator


def test_a_faulted_produce_fails_every_partition_and_appends_nothing(kafka_broker_factory):
    b = kafka_broker_factory()
    b.run(b.broker.logs.create_topic("orders", 2))
    with WireClient(b.bootstrap) as w:
        assert produce(w, "orders", 0, b"first").responses[0].partition_responses[0].error_code \
            == ErrorCode.none
        b.inject(0, 6)  # by numbers: Produce, NOT_LEADER_OR_FOLLOWER
        part = produce(w, "orders", 1, b"lost").responses[0].partition_responses[0]
        assert (part.index, part.error_code) == (1, ErrorCode.not_leader_or_follower)
        assert end_offset(w, "orders", 1) == 0  # the request was not handled
        assert produce(w, "orders", 1, b"kept").responses[0].partition_responses[0].error_code \
            == ErrorCode.none
        assert end_offset(w, "orders", 1) == 1


def test_a_delay_holds_one_answer_and_the_broker_keeps_serving(kafka_broker):
    kafka_broker.inject("Metadata", delay_ms=800)
    delayed: list[float] = []
    with WireClient(kafka_broker) as slow, WireClient(kafka_broker) as fast:
        def ask() -> None:
            started = time.monotonic()
            metadata(slow)
            delayed.append(time.monotonic() - started)
        thread = threading.Thread(target=ask)
        thread.start()
        time.sleep(0.1)
        started = time.monotonic()
        for _ in range(5):
            metadata(fast)  # answered meanwhile: the delay does not block the loop
        assert time.monotonic() - started < 0.6
        thread.join(10)
    assert delayed and delayed[0] >= 0.75


def test_drop_closes_the_connection_and_others_go_on(kafka_broker):
    kafka_broker.inject("Metadata", drop=True)
    with WireClient(kafka_broker) as w:
        w.send(METADATA, 12, entity_request(METADATA, 12))
        assert w.is_closed_by_peer(5)
    with WireClient(kafka_broker) as w:
        assert metadata(w).brokers


def entity_request(key: int, version: int) -> object:
    from kafkette.protocol.build import make

    return make(request_type(key, version), topics=(), allow_auto_topic_creation=False,
                include_topic_authorized_operations=False)


def test_throttle_sets_throttle_time_also_on_a_spliced_fetch(kafka_broker_factory):
    b = kafka_broker_factory()
    b.run(b.broker.logs.create_topic("t", 1))
    with WireClient(b.bootstrap) as w:
        produce(w, "t", 0, b"x" * 100_000)  # large enough for the fetch to be sent spliced
        b.inject("Metadata", throttle_ms=250)
        assert metadata(w).throttle_time == timedelta(milliseconds=250)
        assert metadata(w).throttle_time == timedelta(0)
        b.inject("Fetch", throttle_ms=300)
        topic_id = metadata_topic_id(w, "t")
        cls = request_type(FETCH, 13)
        topic = entity(cls, "topics", topic_id=topic_id, partitions=())
        part = entity(type(topic), "partitions", partition=0, fetch_offset=0,
                      current_leader_epoch=-1, log_start_offset=-1, partition_max_bytes=1 << 20,
                      last_fetched_epoch=-1)
        r = w.request(FETCH, 13, replica_id=-1, max_wait=0, min_bytes=1, max_bytes=1 << 20,
                      isolation_level=0, session_id=0, session_epoch=-1, rack_id="",
                      topics=(entity(cls, "topics", topic_id=topic_id, partitions=(part,)),),
                      forgotten_topics_data=())
        assert r.throttle_time == timedelta(milliseconds=300)
        assert r.responses[0].partitions[0].error_code == ErrorCode.none
        assert len(r.responses[0].partitions[0].records) > 100_000


def metadata_topic_id(w: WireClient, topic: str) -> object:
    cls = request_type(METADATA, 12)
    r = w.request(METADATA, 12, topics=(entity(cls, "topics", name=topic, topic_id=None),),
                  allow_auto_topic_creation=False, include_topic_authorized_operations=False)
    return r.topics[0].topic_id


def test_a_fault_for_another_node_is_not_applied(kafka_broker):
    kafka_broker.inject("Heartbeat", "NOT_COORDINATOR", node=7)
    with WireClient(kafka_broker) as w:
        assert heartbeat(w) != ErrorCode.not_coordinator
        assert len(kafka_broker.faults()) == 1
        assert kafka_broker.clear_faults() == 1
        kafka_broker.inject("Heartbeat", "NOT_COORDINATOR", node=1)  # this broker's node.id
        assert heartbeat(w) == ErrorCode.not_coordinator


def test_faults_outlive_a_restart(kafka_broker):
    kafka_broker.inject("Heartbeat", "COORDINATOR_LOAD_IN_PROGRESS")
    kafka_broker.restart()
    with WireClient(kafka_broker) as w:
        assert heartbeat(w) == ErrorCode.coordinator_load_in_progress
