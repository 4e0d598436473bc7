"""DescribeShareGroupOffsets (90 v0-1), AlterShareGroupOffsets (91 v0), DeleteShareGroupOffsets
(92 v0) and FindCoordinator key type 2 over the wire, against a broker whose share group is
made with ShareGroupHeartbeat: Kafka's answers, errors and lag."""

from __future__ import annotations

from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from kafkette.broker.testing import ThreadedBroker
from kafkette.broker.testing import test_config as broker_config
from kafkette.coordinator.share.persister import (
    ACKNOWLEDGED,
    SharePartitionKey,
    ShareState,
    StateBatch,
)
from kafkette.protocol.build import item_type, make
from kafkette.protocol.codec import request_type
from kafkette.protocol.share_state_records import coordinator_key
from tests.wire import WireClient

FIND, SHARE_HEARTBEAT, DESCRIBE, ALTER, DELETE = 10, 76, 90, 91, 92


@pytest.fixture
def client(broker):
    with WireClient(broker.bootstrap, client_id="share-admin") as c:
        yield c


def heartbeat(c: WireClient, group: str, member: str, epoch: int,
              topics: tuple[str, ...] | None = ("jobs",)) -> Any:
    return c.request(SHARE_HEARTBEAT, 1, group_id=group, member_id=member, member_epoch=epoch,
                     rack_id=None, subscribed_topic_names=topics if epoch == 0 else None)


def describe(c: WireClient, group: str, topics: list[tuple[str, list[int]]] | None = None,
             version: int = 1) -> Any:
    req = request_type(DESCRIBE, version)
    group_cls = item_type(req, "groups")
    topic_cls = item_type(group_cls, "topics")
    wanted = None if topics is None else tuple(
        make(topic_cls, topic_name=t, partitions=tuple(ps)) for t, ps in topics)
    (g,) = c.request(DESCRIBE, version, groups=(make(group_cls, group_id=group, topics=wanted),)
                     ).groups
    return g


def rows(g: Any, lag: bool = True) -> dict[tuple[str, int], tuple[int, ...]]:
    return {(t.topic_name, p.partition_index): ((p.start_offset, p.lag) if lag else
                                                (p.start_offset,))
            for t in g.topics for p in t.partitions}


def alter(c: WireClient, group: str, topics: list[tuple[str, list[tuple[int, int]]]]) -> Any:
    topic_cls = item_type(request_type(ALTER, 0), "topics")
    part_cls = item_type(topic_cls, "partitions")
    return c.request(ALTER, 0, group_id=group, topics=tuple(
        make(topic_cls, topic_name=t, partitions=tuple(
            make(part_cls, partition_index=p, start_offset=o) for p, o in ps))
        for t, ps in topics))


def delete(c: WireClient, group: str, topics: list[str]) -> Any:
    topic_cls = item_type(request_type(DELETE, 0), "topics")
    return c.request(DELETE, 0, group_id=group,
                     topics=tuple(make(topic_cls, topic_name=t) for t in topics))


def test_offsets_of_a_share_group(broker, client) -> None:
    group = "workers"
    joined = heartbeat(client, group, "member-a", 0)
    assert joined.error_code == ErrorCode.none
    jobs_id = broker.broker.logs.topic("jobs").topic_id

    # live group: initialised partitions, no state yet
    g = describe(client, group)
    assert g.error_code == ErrorCode.none
    assert rows(g) == {("jobs", 0): (-1, -1), ("jobs", 1): (-1, -1)}
    assert [t.topic_id for t in g.topics] == [jobs_id]
    busy = alter(client, group, [("jobs", [(0, 3)])])
    assert (busy.error_code, busy.error_message, busy.responses) == (
        ErrorCode.non_empty_group, "The group is not empty.", ())
    assert delete(client, group, ["jobs"]).error_code == ErrorCode.non_empty_group

    assert heartbeat(client, group, "member-a", -1).error_code == ErrorCode.none  # leaves
    done = alter(client, group, [("jobs", [(0, 3), (1, 0), (9, 0)]), ("gone", [(0, 1)])])
    assert done.error_code == ErrorCode.none
    assert [(t.topic_name, t.topic_id, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in done.responses] == [
        ("jobs", jobs_id, [(0, ErrorCode.none), (1, ErrorCode.none),
                           (9, ErrorCode.unknown_topic_or_partition)]),
        ("gone", None, [(0, ErrorCode.unknown_topic_or_partition)])]  # the zero uuid
    # lag = log end offset - start offset - delivered records at or past it
    assert rows(describe(client, group)) == {("jobs", 0): (3, 7), ("jobs", 1): (0, 1)}
    assert rows(describe(client, group, version=0), lag=False) == {("jobs", 0): (3,),
                                                                   ("jobs", 1): (0,)}

    # the broker's share partition acknowledges 5-6: two fewer records to deliver
    key = SharePartitionKey(group, jobs_id, 0)
    _code, summary = broker.run(broker.broker.services.share_state.read_summary(key))
    code = broker.run(broker.broker.services.share_state.write(
        key, ShareState(summary.state_epoch, 0, -1, [StateBatch(5, 6, ACKNOWLEDGED, 1)])))
    assert code == 0
    assert rows(describe(client, group, [("jobs", [0]), ("gone", [2])])) == {
        ("jobs", 0): (3, 5), ("gone", 2): (-1, -1)}

    gone = delete(client, group, ["jobs", "gone"])
    assert gone.error_code == ErrorCode.none
    assert [(t.topic_name, t.error_code) for t in gone.responses] == [
        ("jobs", ErrorCode.none), ("gone", ErrorCode.unknown_topic_or_partition)]
    assert rows(describe(client, group, [("jobs", [0, 1])])) == {
        ("jobs", 0): (-1, -1), ("jobs", 1): (-1, -1)}

    # DeleteGroups of the Empty share group deletes its share state first
    assert alter(client, group, [("jobs", [(0, 4)])]).error_code == ErrorCode.none
    state = broker.broker.services.share_state
    assert [k.partition for k in broker.run(state.group_keys(group))] == [0]
    (deleted,) = client.request(42, 2, groups_names=(group,)).results
    assert deleted.error_code == ErrorCode.none
    assert broker.run(state.group_keys(group)) == []
    assert describe(client, group).error_code == ErrorCode.group_id_not_found


def test_group_errors(broker, client) -> None:
    g = describe(client, "no-such-group")
    assert (g.error_code, g.error_message, g.topics) == (
        ErrorCode.group_id_not_found, "Group no-such-group not found.", ())
    assert alter(client, "no-such-group", [("jobs", [(0, 0)])]).error_code == \
        ErrorCode.group_id_not_found
    assert delete(client, "no-such-group", ["jobs"]).error_code == ErrorCode.group_id_not_found
    assert describe(client, "").error_code == ErrorCode.invalid_group_id
    assert alter(client, "", []).error_code == ErrorCode.invalid_group_id
    # Kafka does not check the group when topics are named: no state means start offset -1
    assert rows(describe(client, "no-such-group", [("jobs", [0])])) == {("jobs", 0): (-1, -1)}


def test_find_coordinator_share_key(broker, client) -> None:
    topic_id = broker.broker.logs.topic("jobs").topic_id
    key = coordinator_key("workers", topic_id, 0)
    found, bad = client.request(FIND, 6, key_type=2, coordinator_keys=(key, "bad")).coordinators
    assert (found.key, found.error_code, found.node_id) == (key, ErrorCode.none, 1)
    assert (found.host, found.port) == broker.address
    assert (bad.key, bad.error_code) == ("bad", ErrorCode.invalid_request)


def test_share_version_0_answers_unsupported_version(tmp_path) -> None:
    config = broker_config(str(tmp_path), **{"share.version": 0,
                                             "offsets.topic.num.partitions": 1})
    with ThreadedBroker(config) as b, WireClient(b.bootstrap) as c:
        assert describe(c, "workers").error_code == ErrorCode.unsupported_version
        assert describe(c, "workers", [("jobs", [0])]).error_code == \
            ErrorCode.unsupported_version
        assert alter(c, "workers", [("jobs", [(0, 0)])]).error_code == \
            ErrorCode.unsupported_version
        assert delete(c, "workers", ["jobs"]).error_code == ErrorCode.unsupported_version
