"""The fault registry without sockets: names, counting, node filters and error answers."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker import handlers  # noqa: F401  (registers every API route)
from kafkette.broker.cluster.faults import FOREVER, FaultError, FaultRegistry, error_response
from kafkette.broker.registry import ROUTES
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import codec, request_type


def test_names_and_codes_resolve_to_the_same_fault():
    registry = FaultRegistry()
    by_name = registry.add("OffsetCommit", "REBALANCE_IN_PROGRESS")
    by_code = registry.add(8, 27)
    by_loose_name = registry.add("offset_commit", "rebalance_in_progress")
    assert by_name.api_key == by_code.api_key == by_loose_name.api_key == 8
    assert by_name.error == by_code.error == by_loose_name.error == ErrorCode.rebalance_in_progress
    assert [f["api"] for f in registry.list()] == ["OffsetCommit"] * 3


@pytest.mark.parametrize(("args", "options", "reason"), [
    (("OffsetComit", "NOT_COORDINATOR"), {}, "unknown api 'OffsetComit'"),
    (("OffsetCommit", "NOT_A_COORDINATOR"), {}, "unknown error 'NOT_A_COORDINATOR'"),
    (("OffsetCommit", 9999), {}, "unknown error code 9999"),
    ((9999, "NOT_COORDINATOR"), {}, "api key 9999 is not served"),
    (("Heartbeat", "NOT_COORDINATOR"), {"count": 0}, "count must be"),
    (("Heartbeat", "NOT_COORDINATOR"), {"delay_ms": -1}, "delay_ms must be"),
    (("Heartbeat", None), {}, "a fault needs"),
    (("Heartbeat", "NONE"), {}, "a fault needs"),
    (("Heartbeat", "NOT_COORDINATOR"), {"node": "one"}, "node must be"),
])
def test_bad_faults_are_refused_with_the_reason(args, options, reason):
    registry = FaultRegistry()
    with pytest.raises(FaultError, match=reason):
        registry.add(*args, **options)
    assert registry.by_api == {}


def test_a_fault_is_used_count_times_then_gone():
    registry = FaultRegistry()
    registry.add("Heartbeat", "NOT_COORDINATOR", count=2)
    assert registry.take(12, 1) is not None
    assert registry.list()[0]["count"] == 1
    assert registry.take(12, 1) is not None
    assert registry.take(12, 1) is None
    assert registry.by_api == {}  # the connection's check is one empty-dict test again


def test_node_filter_and_forever():
    registry = FaultRegistry()
    registry.add("Heartbeat", "NOT_COORDINATOR", count=FOREVER, node=2)
    assert registry.take(12, 1) is None
    for _ in range(5):
        assert registry.take(12, 2) is not None
    assert registry.clear() == 1
    assert registry.take(12, 2) is None


def test_a_handler_is_swapped_only_for_a_faulted_request():
    registry = FaultRegistry()

    def handler(ctx, request):
        return "handled"

    assert registry.handler_for(12, 1, handler) is handler
    registry.add("Heartbeat", drop=True)
    assert registry.handler_for(12, 1, handler) is not handler
    assert registry.handler_for(12, 1, handler) is handler


def test_every_served_api_and_version_has_an_encodable_error_answer():
    for key, route in ROUTES.items():
        for version in range(route.min_accepted, route.max_version + 1):
            answer = error_response(version, key, None, ErrorCode.not_coordinator)
            codec(key, version).encode_response(1, answer)


def test_an_error_answer_mirrors_the_partitions_of_the_request():
    req = request_type(8, 8)
    topic_cls = item_type(req, "topics")
    part_cls = item_type(topic_cls, "partitions")
    request = make(req, group_id="g", generation_id_or_member_epoch=3, member_id="m",
                   topics=(make(topic_cls, name="orders", partitions=tuple(
                       make(part_cls, partition_index=p, committed_offset=5,
                            committed_leader_epoch=-1, committed_metadata="")
                       for p in (0, 2, 5))),))
    answer = error_response(8, 8, request, ErrorCode.rebalance_in_progress)
    (topic,) = answer.topics
    assert topic.name == "orders"
    assert [(p.partition_index, p.error_code) for p in topic.partitions] == [
        (0, ErrorCode.rebalance_in_progress), (2, ErrorCode.rebalance_in_progress),
        (5, ErrorCode.rebalance_in_progress)]


def test_an_error_answer_to_produce_names_topics_and_partitions_under_the_response_names():
    req = request_type(0, 9)
    topic_cls = item_type(req, "topic_data")
    part_cls = item_type(topic_cls, "partition_data")
    request = make(req, transactional_id=None, acks=-1, timeout=1000, topic_data=(
        make(topic_cls, name="t", partition_data=(make(part_cls, index=1, records=None),)),))
    answer = error_response(9, 0, request, ErrorCode.not_leader_or_follower)
    (topic,) = answer.responses
    (part,) = topic.partition_responses
    assert (topic.name, part.index, part.error_code, part.base_offset) == (
        "t", 1, ErrorCode.not_leader_or_follower, -1)
